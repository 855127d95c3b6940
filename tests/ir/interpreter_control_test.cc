// Interpreter: partition-id, random-uniform, loops, tuples, argument checks and RandomArguments.

#include <set>
#include <string>

#include "base/error.h"
#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::BF16;
using testing::F32;
using testing::InterpFixture;
using testing::S32;

TEST_CASE("interpreter: partition-id is the partition running the program") {
  InterpFixture f;
  f.b.PartitionId();
  CHECK(f.Run({}, 0, 1) == S32({}, {0}));
  CHECK(f.Run({}, 2, 4) == S32({}, {2}));
  CHECK_THROWS_AS(f.Run({}, 4, 4), Error);
}

TEST_CASE("interpreter: random-uniform lies in [low, high) and is deterministic") {
  InterpFixture f;
  auto* a = f.b.RandomUniform(Shape(DType::kF32, {64, 64}), /*seed=*/7, -2.0, 3.0);
  auto* b = f.b.RandomUniform(Shape(DType::kF32, {64, 64}), /*seed=*/7, -2.0, 3.0);
  auto* c = f.b.RandomUniform(Shape(DType::kF32, {64, 64}), /*seed=*/8, -2.0, 3.0);
  f.b.Tuple({a, b, c});
  Literal out = f.Run();
  double sum = 0;
  std::set<double> distinct;
  for (double v : out.elements[0].values) {
    CHECK(v >= -2.0);
    CHECK(v < 3.0);
    CHECK(v == RoundToDType(v, DType::kF32));
    sum += v;
    distinct.insert(v);
  }
  // Same seed, same numbers; another seed, other numbers.
  CHECK(out.elements[0] == out.elements[1]);
  CHECK(out.elements[0].values != out.elements[2].values);
  // 4096 draws of U(-2, 3): mean 0.5 with standard error 5/sqrt(12 * 4096) ~ 0.023; almost all
  // distinct.
  CHECK(sum / 4096 == doctest::Approx(0.5).epsilon(0.2));
  CHECK(distinct.size() > 4000);
  // Running the module again gives the same numbers.
  CHECK(f.Run() == out);
}

TEST_CASE("interpreter: random-uniform rounding never reaches high") {
  InterpFixture f;
  // The only bf16 value in [1, 1 + 2^-7) is 1: draws in [1 + 2^-8, 1 + 2^-7) would round up to
  // high; they must come out as the largest bf16 below high, 1.
  f.b.RandomUniform(Shape(DType::kBF16, {256}), /*seed=*/3, 1.0, 1.0078125);
  Literal out = f.Run();
  for (double v : out.values) CHECK(v == 1.0);
}

TEST_CASE("interpreter: random-uniform of a shard equals the slice of the whole tensor") {
  InterpFixture f;
  auto* whole = f.b.RandomUniform(Shape(DType::kF32, {4, 6}), /*seed=*/11);
  // The [2:4, 3:6] block, drawn on its own with offsets (2, 3) into global dims [4, 6].
  auto* shard = f.b.RandomUniform(Shape(DType::kF32, {2, 3}), /*seed=*/11, 0.0, 1.0,
                                  {f.S32Scalar(2), f.S32Scalar(3)}, {4, 6});
  auto* slice = f.b.Slice(whole, {2, 3}, {4, 6});
  f.b.Tuple({shard, slice});
  Literal out = f.Run();
  CHECK(out.elements[0] == out.elements[1]);
}

TEST_CASE("interpreter: random-uniform sharded by partition-id matches the whole tensor") {
  // Each of 4 partitions draws rows [2p, 2p+2) of an [8, 3] tensor: offset (2 * partition-id, 0).
  auto build = [](Builder& b, bool sharded) {
    if (!sharded) return b.RandomUniform(Shape(DType::kBF16, {8, 3}), /*seed=*/5, -1.0, 1.0);
    auto* two = b.ConstantScalar(DType::kS32, 2);
    auto* row = b.Mul(b.PartitionId(), two);
    return b.RandomUniform(Shape(DType::kBF16, {2, 3}), /*seed=*/5, -1.0, 1.0,
                           {row, b.ConstantScalar(DType::kS32, 0)}, {8, 3});
  };
  InterpFixture whole;
  build(whole.b, false);
  const Literal all = whole.Run();
  InterpFixture shard;
  build(shard.b, true);
  std::vector<Literal> parts = shard.RunSpmd({{}, {}, {}, {}}, 4);
  for (int p = 0; p < 4; ++p) {
    CAPTURE(p);
    CHECK(parts[p] == BF16({2, 3}, std::vector<double>(all.values.begin() + 6 * p,
                                                         all.values.begin() + 6 * p + 6)));
  }
}

TEST_CASE("interpreter: loop sums its iteration numbers") {
  InterpFixture f;
  Computation* body = f.module.AddComputation("body");
  {
    Builder b(body);
    auto* i = b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* acc = b.Parameter(1, Shape(DType::kS32, {}), "acc");
    b.Tuple({b.Add(acc, i)});
  }
  auto* loop = f.b.Loop({f.S32Scalar(100)}, body, 5);
  f.b.GetTupleElement(loop, 0);
  // 100 + 0 + 1 + 2 + 3 + 4 = 110.
  CHECK(f.Run() == S32({}, {110}));
}

TEST_CASE("interpreter: loop carries several values; zero trips return the operands") {
  InterpFixture f;
  Computation* body = f.module.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* acc = b.Parameter(1, Shape(DType::kF32, {2}), "acc");
    auto* x = b.Parameter(2, Shape(DType::kF32, {2}), "x");
    b.Tuple({b.Add(acc, x), b.Add(x, x)});
  }
  auto* acc = f.Param(0, DType::kF32, {2});
  auto* x = f.Param(1, DType::kF32, {2});
  auto* three = f.b.Loop({acc, x}, body, 3);
  auto* none = f.b.Loop({acc, x}, body, 0);
  f.b.Tuple({three, none});
  // (acc, x) = ([0,0], [1,10]) -> ([1,10], [2,20]) -> ([3,30], [4,40]) -> ([7,70], [8,80]).
  Literal out = f.Run({F32({2}, {0, 0}), F32({2}, {1, 10})});
  CHECK(out.elements[0] == Literal::Tuple({F32({2}, {7, 70}), F32({2}, {8, 80})}));
  CHECK(out.elements[1] == Literal::Tuple({F32({2}, {0, 0}), F32({2}, {1, 10})}));
}

TEST_CASE("interpreter: tuple and get-tuple-element") {
  InterpFixture f;
  auto* a = f.Param(0, DType::kF32, {2});
  auto* b = f.Param(1, DType::kS32, {});
  auto* t = f.b.Tuple({a, b});
  auto* nested = f.b.Tuple({t, a});
  auto* inner = f.b.GetTupleElement(nested, 0);
  f.b.GetTupleElement(inner, 1);
  CHECK(f.Run({F32({2}, {1, 2}), S32({}, {9})}) == S32({}, {9}));
}

TEST_CASE("interpreter: arguments are checked against the entry parameters") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2});
  f.b.Neg(x);
  CHECK_THROWS_WITH_AS(f.Run({}), doctest::Contains("takes 1 argument(s), got 0"), Error);
  CHECK_THROWS_WITH_AS(f.Run({F32({3}, {1, 2, 3})}),
                       doctest::Contains("parameter 0 (%p0): expected f32[2], got f32[3]"), Error);
  CHECK_THROWS_WITH_AS(f.Run({S32({2}, {1, 2})}), doctest::Contains("parameter 0 (%p0)"), Error);
  CHECK_THROWS_WITH_AS(f.Run({F32({2}, {1})}), doctest::Contains("has 1 values"), Error);
  CHECK_THROWS_WITH_AS(f.RunSpmd({{F32({2}, {1, 2})}, {F32({1}, {1})}}, 2),
                       doctest::Contains("partition 1: parameter 0 (%p0)"), Error);
  CHECK_THROWS_AS(f.RunSpmd({{F32({2}, {1, 2})}}, 2), Error);
  // Arguments are rounded to their dtype: 0.1 becomes the f32 nearest 0.1.
  CHECK(f.Run({F32({2}, {0.1, 1})}) == F32({2}, {-double{0.1f}, -1}));
}

TEST_CASE("interpreter: RandomArguments fit the entry parameters") {
  InterpFixture f;
  auto* a = f.Param(0, DType::kF32, {16});
  auto* b = f.Param(1, DType::kBF16, {16});
  auto* c = f.Param(2, DType::kS32, {64});
  auto* d = f.Param(3, DType::kPred, {64});
  f.b.Tuple({a, b, c, d});
  const std::vector<Literal> args = RandomArguments(f.module, 42);
  REQUIRE(args.size() == 4);
  for (int k = 0; k < 4; ++k) {
    CHECK(args[k].shape == f.module.entry()->parameters()[k]->shape);
  }
  for (int k = 0; k < 2; ++k) {
    for (double v : args[k].values) {
      CHECK(v >= -1);
      CHECK(v < 1);
      CHECK(v == RoundToDType(v, args[k].shape.dtype));
    }
  }
  std::set<double> ints(args[2].values.begin(), args[2].values.end());
  std::set<double> preds(args[3].values.begin(), args[3].values.end());
  CHECK(*ints.begin() >= 0);
  CHECK(*ints.rbegin() <= 7);
  CHECK(ints.size() > 4);  // 64 draws from 8 values
  CHECK(preds == std::set<double>{0, 1});
  CHECK(RandomArguments(f.module, 42) == args);
  CHECK(RandomArguments(f.module, 43) != args);
  // The parameters draw different streams.
  CHECK(std::vector<double>(args[0].values.begin(), args[0].values.end()) !=
        std::vector<double>(args[1].values.begin(), args[1].values.end()));
  CHECK(f.Run(args) == Literal::Tuple(args));
}

TEST_CASE("interpreter: Interpret treats collectives as one partition only when alone") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2});
  auto* r = f.b.AllReduce(x, ReduceKind::kAdd);
  auto* g = f.b.AllGather(r, 0, {}, /*num_partitions=*/1);
  f.b.CollectivePermute(g, {{0, 0}});
  // One partition: every collective is the identity.
  CHECK(f.Run({F32({2}, {1, 2})}) == F32({2}, {1, 2}));
  // Partition 0 of 2 cannot run a collective alone.
  CHECK_THROWS_WITH_AS(f.Run({F32({2}, {1, 2})}, 0, 2), doctest::Contains("InterpretSpmd"),
                       Error);
}

}  // namespace
}  // namespace podsim::ir
