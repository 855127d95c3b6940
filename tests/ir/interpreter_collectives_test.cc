// Interpreter: collectives in lockstep multi-partition mode (InterpretSpmd). Expected values are
// derived by hand in the comments; partition p's argument is args[p].

#include "base/error.h"
#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::BF16;
using testing::F32;
using testing::InterpFixture;
using testing::S32;

// One f32 argument per partition.
std::vector<std::vector<Literal>> PerPartition(const std::vector<Literal>& xs) {
  std::vector<std::vector<Literal>> args;
  for (const Literal& x : xs) args.push_back({x});
  return args;
}

TEST_CASE("interpreter: all-reduce over replica subgroups and over all partitions") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2});
  auto* pairs = f.b.AllReduce(x, ReduceKind::kAdd, {{0, 1}, {2, 3}});
  auto* all = f.b.AllReduce(x, ReduceKind::kAdd);
  auto* mx = f.b.AllReduce(x, ReduceKind::kMax, {{0, 3}, {1, 2}});
  f.b.Tuple({pairs, all, mx});
  // Partition p holds [p, 10p]. Groups {0,1}: [1,10]; {2,3}: [5,50]. All: [6,60].
  // Max over {0,3}: [3,30]; over {1,2}: [2,20].
  std::vector<Literal> out = f.RunSpmd(
      PerPartition({F32({2}, {0, 0}), F32({2}, {1, 10}), F32({2}, {2, 20}), F32({2}, {3, 30})}),
      4);
  const std::vector<Literal> expect_pairs = {F32({2}, {1, 10}), F32({2}, {1, 10}),
                                             F32({2}, {5, 50}), F32({2}, {5, 50})};
  const std::vector<Literal> expect_max = {F32({2}, {3, 30}), F32({2}, {2, 20}),
                                           F32({2}, {2, 20}), F32({2}, {3, 30})};
  for (int p = 0; p < 4; ++p) {
    CAPTURE(p);
    CHECK(out[p].elements[0] == expect_pairs[p]);
    CHECK(out[p].elements[1] == F32({2}, {6, 60}));
    CHECK(out[p].elements[2] == expect_max[p]);
  }
}

TEST_CASE("interpreter: all-reduce sums exactly and rounds once to bf16") {
  InterpFixture f;
  f.b.AllReduce(f.Param(0, DType::kBF16, {1}), ReduceKind::kAdd);
  // 1 + 2^-8 + 2^-8 = 1 + 2^-7, a bf16 value (folding in bf16 would give 1).
  std::vector<Literal> out =
      f.RunSpmd(PerPartition({BF16({1}, {1}), BF16({1}, {0x1p-8}), BF16({1}, {0x1p-8})}), 3);
  for (const Literal& l : out) CHECK(l == BF16({1}, {1.0078125}));
}

TEST_CASE("interpreter: all-gather concatenates in group order") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kS32, {1, 2});
  auto* rows = f.b.AllGather(x, 0, {{0, 2}, {3, 1}});
  auto* cols = f.b.AllGather(x, 1, {}, /*num_partitions=*/4);
  f.b.Tuple({rows, cols});
  // Partition p holds [[p, 10p]]. Group {0,2}: [[0,0],[2,20]]; group {3,1} (order 3 then 1):
  // [[3,30],[1,10]]. All along dim 1: [[0,0,1,10,2,20,3,30]].
  std::vector<Literal> out = f.RunSpmd(PerPartition({S32({1, 2}, {0, 0}), S32({1, 2}, {1, 10}),
                                                     S32({1, 2}, {2, 20}),
                                                     S32({1, 2}, {3, 30})}),
                                       4);
  const Literal even = S32({2, 2}, {0, 0, 2, 20});
  const Literal odd = S32({2, 2}, {3, 30, 1, 10});
  CHECK(out[0].elements[0] == even);
  CHECK(out[2].elements[0] == even);
  CHECK(out[1].elements[0] == odd);
  CHECK(out[3].elements[0] == odd);
  for (const Literal& l : out) CHECK(l.elements[1] == S32({1, 8}, {0, 0, 1, 10, 2, 20, 3, 30}));
}

TEST_CASE("interpreter: reduce-scatter gives member i block i") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {4});
  auto* all = f.b.ReduceScatter(x, 0, ReduceKind::kAdd, {}, /*num_partitions=*/2);
  auto* swapped = f.b.ReduceScatter(x, 0, ReduceKind::kAdd, {{1, 0}});
  f.b.Tuple({all, swapped});
  // Sum [1,2,3,4] + [10,20,30,40] = [11,22,33,44]. Groups {0,1}: p0 gets [11,22], p1 [33,44].
  // Group {1,0}: member 0 is partition 1 -> [11,22]; partition 0 is member 1 -> [33,44].
  std::vector<Literal> out =
      f.RunSpmd(PerPartition({F32({4}, {1, 2, 3, 4}), F32({4}, {10, 20, 30, 40})}), 2);
  CHECK(out[0].elements[0] == F32({2}, {11, 22}));
  CHECK(out[1].elements[0] == F32({2}, {33, 44}));
  CHECK(out[0].elements[1] == F32({2}, {33, 44}));
  CHECK(out[1].elements[1] == F32({2}, {11, 22}));
}

TEST_CASE("interpreter: reduce-scatter over subgroups of 4 partitions") {
  InterpFixture f;
  f.b.ReduceScatter(f.Param(0, DType::kS32, {2, 2}), 1, ReduceKind::kMax, {{0, 1}, {2, 3}});
  // p holds [[p, -p],[2p, 0]]; max over {0,1}: [[1,0],[2,0]] -> column 0 to p0, column 1 to p1.
  // Over {2,3}: [[3,-2],[6,0]] -> p2 [[3],[6]], p3 [[-2],[0]].
  std::vector<Literal> args;
  for (int p = 0; p < 4; ++p) args.push_back(S32({2, 2}, {double(p), -double(p), 2.0 * p, 0}));
  std::vector<Literal> out = f.RunSpmd(PerPartition(args), 4);
  CHECK(out[0] == S32({2, 1}, {1, 2}));
  CHECK(out[1] == S32({2, 1}, {0, 0}));
  CHECK(out[2] == S32({2, 1}, {3, 6}));
  CHECK(out[3] == S32({2, 1}, {-2, 0}));
}

TEST_CASE("interpreter: all-to-all sends piece j to member j") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2, 2});
  auto* rows_to_cols = f.b.AllToAll(x, /*split=*/0, /*concat=*/1, {}, /*num_partitions=*/2);
  auto* same_dim = f.b.AllToAll(x, /*split=*/1, /*concat=*/1, {{0, 1}});
  f.b.Tuple({rows_to_cols, same_dim});
  // p0 = [[0,1],[2,3]], p1 = [[10,11],[12,13]]. Split along rows: row j goes to member j; the
  // receiver concatenates along columns in source order:
  // p0 <- [0,1] (from p0), [10,11] (from p1) = [[0,1,10,11]]; p1 <- [[2,3,12,13]].
  // Split and concat along columns: p0 <- column 0 of p0, column 0 of p1 = [[0,10],[2,12]];
  // p1 <- [[1,11],[3,13]].
  std::vector<Literal> out =
      f.RunSpmd(PerPartition({F32({2, 2}, {0, 1, 2, 3}), F32({2, 2}, {10, 11, 12, 13})}), 2);
  CHECK(out[0].elements[0] == F32({1, 4}, {0, 1, 10, 11}));
  CHECK(out[1].elements[0] == F32({1, 4}, {2, 3, 12, 13}));
  CHECK(out[0].elements[1] == F32({2, 2}, {0, 10, 2, 12}));
  CHECK(out[1].elements[1] == F32({2, 2}, {1, 11, 3, 13}));
}

TEST_CASE("interpreter: all-to-all within subgroups of 4 partitions") {
  InterpFixture f;
  f.b.AllToAll(f.Param(0, DType::kS32, {2}), 0, 0, {{0, 2}, {3, 1}});
  // p holds [10p, 10p+1]. Group {0,2}: p0 <- [0 (from p0), 20 (from p2)], p2 <- [1, 21].
  // Group {3,1}: member 0 = p3, member 1 = p1: p3 <- [30, 10], p1 <- [31, 11].
  std::vector<Literal> args;
  for (int p = 0; p < 4; ++p) args.push_back(S32({2}, {10.0 * p, 10.0 * p + 1}));
  std::vector<Literal> out = f.RunSpmd(PerPartition(args), 4);
  CHECK(out[0] == S32({2}, {0, 20}));
  CHECK(out[2] == S32({2}, {1, 21}));
  CHECK(out[3] == S32({2}, {30, 10}));
  CHECK(out[1] == S32({2}, {31, 11}));
}

TEST_CASE("interpreter: collective-permute; receivers without a source get zeros") {
  InterpFixture f;
  f.b.CollectivePermute(f.Param(0, DType::kF32, {2}), {{0, 1}, {1, 2}});
  // p0 -> p1, p1 -> p2; nobody sends to p0.
  std::vector<Literal> out = f.RunSpmd(
      PerPartition({F32({2}, {1, 2}), F32({2}, {3, 4}), F32({2}, {5, 6})}), 3);
  CHECK(out[0] == F32({2}, {0, 0}));
  CHECK(out[1] == F32({2}, {1, 2}));
  CHECK(out[2] == F32({2}, {3, 4}));
}

TEST_CASE("interpreter: collectives inside a loop run in lockstep") {
  InterpFixture f;
  Computation* body = f.module.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* x = b.Parameter(1, Shape(DType::kF32, {1}), "x");
    // Each iteration: x = all-reduce(x) + shift, where shift is the right neighbour's x
    // (collective-permute on a ring of 2).
    auto* sum = b.AllReduce(x, ReduceKind::kAdd);
    b.Tuple({b.Add(sum, b.CollectivePermute(x, {{0, 1}, {1, 0}}))});
  }
  f.b.GetTupleElement(f.b.Loop({f.Param(0, DType::kF32, {1})}, body, 2), 0);
  // (x0, x1) = (1, 2): iteration 0 -> (3 + 2, 3 + 1) = (5, 4); iteration 1 -> (9 + 4, 9 + 5) =
  // (13, 14).
  std::vector<Literal> out = f.RunSpmd(PerPartition({F32({1}, {1}), F32({1}, {2})}), 2);
  CHECK(out[0] == F32({1}, {13}));
  CHECK(out[1] == F32({1}, {14}));
}

TEST_CASE("interpreter: collectives reject groups and shapes that do not fit the partitions") {
  SUBCASE("group names a missing partition") {
    InterpFixture f;
    f.b.AllReduce(f.Param(0, DType::kF32, {1}), ReduceKind::kAdd, {{0, 2}});
    CHECK_THROWS_WITH_AS(f.RunSpmd(PerPartition({F32({1}, {1}), F32({1}, {2})}), 2),
                         doctest::Contains("names partition 2"), Error);
  }
  SUBCASE("partition in no group") {
    InterpFixture f;
    f.b.AllReduce(f.Param(0, DType::kF32, {1}), ReduceKind::kAdd, {{1}});
    CHECK_THROWS_WITH_AS(f.RunSpmd(PerPartition({F32({1}, {1}), F32({1}, {2})}), 2),
                         doctest::Contains("partition 0 is in 0 replica groups"), Error);
  }
  SUBCASE("module built for another partition count") {
    InterpFixture f;
    f.b.AllGather(f.Param(0, DType::kF32, {1}), 0, {}, /*num_partitions=*/4);
    CHECK_THROWS_WITH_AS(f.RunSpmd(PerPartition({F32({1}, {1}), F32({1}, {2})}), 2),
                         doctest::Contains("another partition count"), Error);
  }
  SUBCASE("permute to a missing partition") {
    InterpFixture f;
    f.b.CollectivePermute(f.Param(0, DType::kF32, {1}), {{0, 5}});
    CHECK_THROWS_AS(f.RunSpmd(PerPartition({F32({1}, {1}), F32({1}, {2})}), 2), Error);
  }
}

}  // namespace
}  // namespace podsim::ir
