// The SPMD lowering op by op: leaves, elementwise, broadcast, transpose, reshape, reduce, dot
// and the dim-wise data ops, each checked numerically (padding poisoned with NaN) with even and
// uneven shapes, plus structural checks where the expected communication is known.

#include <doctest/doctest.h>

#include <cmath>
#include <unordered_map>

#include "base/error.h"
#include "ir/builder.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Shape;
using testing::CollectiveCounts;
using testing::Split;
using testing::Tiles;
using testing::With;
using Counts = std::map<std::string, int64_t>;

const ir::Sharding kRep = ir::Sharding::Replicated();

struct Fixture : testing::SpmdFixture {
  Fixture() : SpmdFixture("ops") {}
};

TEST_CASE("elementwise chain on uneven shards, with compare/select/convert") {
  for (int64_t d : {2, 3, 4, 8}) {
    Fixture f;
    auto* x = f.Param(0, {7, 5}, Split(2, 0, d));
    auto* y = f.Param(1, {7, 5}, Split(2, 0, d));
    auto* e = With(f.b.Exp(With(f.b.Sub(x, y), Split(2, 0, d))), Split(2, 0, d));
    auto* p = With(f.b.Compare(e, x, ir::Comparison::kGt), Split(2, 0, d));
    auto* s = With(f.b.Select(p, e, y), Split(2, 0, d));
    With(f.b.Convert(s, DType::kBF16), Split(2, 0, d));
    CHECK(f.Check(d).empty());
  }
}

TEST_CASE("elementwise with operands in different layouts reshards the cheaper way") {
  Fixture f;
  auto* x = f.Param(0, {8, 6}, Split(2, 0, 4));
  auto* y = f.Param(1, {8, 6}, Split(2, 1, 4));
  With(f.b.Add(x, y), Split(2, 0, 4));
  CHECK(f.Check(4) == Counts{{"all-to-all", 1}});
}

TEST_CASE("leaves: sharded iota, constant, random-uniform draw what the whole tensor would") {
  for (int64_t d : {2, 4}) {
    Fixture f;
    auto* io = With(f.b.Iota(Shape(DType::kS32, {7, 3}), 0), Split(2, 0, d));
    auto* iof = With(f.b.Iota(Shape(DType::kF32, {7, 3}), 0), Split(2, 0, d));
    auto* c = With(f.b.Constant(ir::Literal(Shape(DType::kF32, {7, 3}),
                                            {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                             12, 13, 14, 15, 16, 17, 18, 19, 20, 21})),
                   Split(2, 0, d));
    auto* rng = With(f.b.RandomUniform(Shape(DType::kF32, {7, 3}), 42), Tiles({d / 2, 2}));
    auto* sum = With(f.b.Add(f.b.Add(iof, c), rng), Split(2, 0, d));
    f.b.Tuple({io, sum});
    f.Check(d);
  }
}

TEST_CASE("broadcast and transpose keep splits without collectives") {
  Fixture f;
  auto* x = f.Param(0, {6}, Split(1, 0, 4));
  auto* bx = With(f.b.Broadcast(x, {6, 5}, {0}), Split(2, 0, 4));
  auto* y = f.Param(1, {5, 6}, Split(2, 1, 4));
  auto* ty = With(f.b.Transpose(y, {1, 0}), Split(2, 0, 4));
  With(f.b.Mul(bx, ty), Split(2, 0, 4));
  CHECK(f.Check(4).empty());
  // 2x2 mesh transpose: tile dims and the device array permute together.
  Fixture g;
  auto* z = g.Param(0, {4, 6, 3}, Tiles({2, 1, 2}, 1, {0, 1, 2, 3}));
  With(g.b.Transpose(z, {2, 0, 1}), Tiles({2, 2, 1}, 1, {0, 2, 1, 3}));
  CHECK(g.Check(4).empty());
  // Broadcast into a split new dim: each partition broadcasts its part; nothing moves.
  Fixture h;
  auto* v = h.Param(0, {5}, kRep);
  With(h.b.Broadcast(v, {9, 5}, {1}), Split(2, 0, 4));
  CHECK(h.Check(4).empty());
}

TEST_CASE("reshape: splits on the major dim of a group carry over, realigned when uneven") {
  Fixture f;
  auto* x = f.Param(0, {8, 6}, Split(2, 0, 4));
  With(f.b.Reshape(x, {48}), Split(1, 0, 4));
  CHECK(f.Check(4).empty());
  Fixture g;
  auto* y = g.Param(0, {8, 6}, Split(2, 0, 2));
  With(g.b.Reshape(y, {2, 4, 3, 2}), Split(4, 0, 2));
  CHECK(g.Check(2).empty());
  Fixture h;
  auto* z = h.Param(0, {24}, Split(1, 0, 4));
  With(h.b.Reshape(z, {4, 6}), Split(2, 0, 4));
  CHECK(h.Check(4).empty());
  // Uneven: [6,4] split 4 on rows (tiles of 8 elements) onto [24] (tiles of 6): the tiles are
  // misaligned by 2 elements per tile, realigned by one halo exchange (spmd_halo_test.cc).
  Fixture u;
  auto* w = u.Param(0, {6, 4}, Split(2, 0, 4));
  With(u.b.Reshape(w, {24}), Split(1, 0, 4));
  CHECK(u.Check(4) == Counts{{"collective-permute", 1}});
}

TEST_CASE("reduce: masks, kinds, several dims, 2-D meshes") {
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    Fixture f;
    auto* x = f.Param(0, {9, 5, 3}, Split(3, 0, d));
    auto* r1 = With(f.b.Reduce(x, {0, 2}, ir::ReduceKind::kMax), kRep);
    auto* r2 = With(f.b.Reduce(x, {0, 1, 2}, ir::ReduceKind::kAdd), kRep);
    auto* r3 = With(f.b.Reduce(x, {1}, ir::ReduceKind::kMin), Split(2, 0, d));
    f.b.Tuple({r1, r2, r3});
    CHECK(f.Check(d) == Counts{{"all-reduce", 2}});
  }
  Fixture g;
  auto* x = g.Param(0, {6, 10}, Tiles({2, 2}));
  With(g.b.Reduce(x, {1}, ir::ReduceKind::kAdd), Tiles({2}, 2));
  CHECK(g.Check(4) == Counts{{"all-reduce", 1}});
  // pred and/or reductions mask with true/false.
  Fixture h;
  auto* p = h.Param(0, {7, 3}, Split(2, 0, 4), DType::kPred);
  auto* all = With(h.b.Reduce(p, {0}, ir::ReduceKind::kAnd), kRep);
  auto* any = With(h.b.Reduce(p, {0}, ir::ReduceKind::kOr), kRep);
  h.b.Tuple({all, any});
  CHECK(h.Check(4) == Counts{{"all-reduce", 2}});
  // s32 sums are exact.
  Fixture s;
  auto* i = s.Param(0, {13, 2}, Split(2, 0, 4), DType::kS32);
  With(s.b.Reduce(i, {0}, ir::ReduceKind::kAdd), kRep);
  s.Check(4);
}

TEST_CASE("dot: batch dims, 2-D meshes, bf16, uneven everything") {
  ir::DotDims bmm;
  bmm.lhs_batch = {0};
  bmm.rhs_batch = {0};
  bmm.lhs_contracting = {2};
  bmm.rhs_contracting = {1};
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    Fixture f;
    auto* x = f.Param(0, {d * 2, 5, 7}, Split(3, 0, d));
    auto* y = f.Param(1, {d * 2, 7, 3}, Split(3, 0, d));
    With(f.b.Dot(x, y, bmm), Split(3, 0, d));
    CHECK(f.Check(d).empty());
  }
  // Batch split on one mesh axis, lhs free on the other: no collective.
  Fixture g;
  auto* x = g.Param(0, {4, 6, 7}, Tiles({2, 2, 1}));
  auto* y = g.Param(1, {4, 7, 3}, Tiles({2, 1, 1}, 2));
  With(g.b.Dot(x, y, bmm), Tiles({2, 2, 1}));
  CHECK(g.Check(4).empty());
  // Uneven batch, free and contracting dims at once, bf16.
  Fixture h;
  auto* a = h.Param(0, {5, 7, 9}, Tiles({2, 1, 2}), DType::kBF16);
  auto* c = h.Param(1, {5, 9, 3}, Tiles({2, 2, 1}), DType::kBF16);
  With(h.b.Dot(a, c, bmm), kRep);
  h.Check(4);
  // Operands and result all in unrelated layouts.
  Fixture u;
  ir::DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  auto* l = u.Param(0, {9, 11}, Tiles({1, 4}));
  auto* r = u.Param(1, {11, 6}, Tiles({2, 2}, 1, {3, 2, 1, 0}));
  With(u.b.Dot(l, r, mm), Tiles({2, 1}, 2, {0, 3, 1, 2}));
  u.Check(4);
}

TEST_CASE("dim-wise ops keep pass-through splits; split worked-on dims scan or fall back") {
  for (int64_t d : {2, 4}) {
    CAPTURE(d);
    Fixture f;
    auto* x = f.Param(0, {9, 6}, Split(2, 0, d));
    auto* y = f.Param(1, {9, 6}, Split(2, 1, d));
    // Work along dim 1, pass dim 0: no collective for x.
    auto* sl = With(f.b.Slice(x, {0, 1}, {9, 5}), Split(2, 0, d));
    auto* pd = With(f.b.Pad(sl, f.b.ConstantScalar(DType::kF32, 2), {{0, 0, 0}, {1, 2, 1}}),
                    Split(2, 0, d));
    auto* rv = With(f.b.Reverse(x, {1}), Split(2, 0, d));
    auto* cs = With(f.b.Cumsum(x, 1), Split(2, 0, d));
    auto* so = With(f.b.Sort(x, 1, true), Split(2, 0, d));
    auto* am = With(f.b.Argmax(x, 1), Split(1, 0, d));
    auto* cc = With(f.b.Concatenate({rv, cs, so}, 1), Split(2, 0, d));
    // Work along dim 1 of y, which is split there: fallback.
    auto* cy = With(f.b.Cumsum(y, 1, true), Split(2, 1, d));
    auto* ds = With(
        f.b.DynamicSlice(
            x, {f.b.ConstantScalar(DType::kS32, 0), f.b.ConstantScalar(DType::kS32, 2)}, {9, 3}),
        Split(2, 0, d));
    auto* upd = f.Param(2, {9, 2}, Split(2, 0, d));
    auto* us =
        With(f.b.DynamicUpdateSlice(
                 x, upd, {f.b.ConstantScalar(DType::kS32, 0), f.b.ConstantScalar(DType::kS32, 3)}),
             Split(2, 0, d));
    auto* rw = With(f.b.ReduceWindow(x, {ir::WindowDim{}, ir::WindowDim{3, 2, 1, 1, 1, 1}},
                                     ir::ReduceKind::kMax),
                    Split(2, 0, d));
    auto* idx = f.Param(3, {5}, Split(1, 0, d), DType::kS32);
    auto* ga = With(f.b.Gather(x, idx, 0), Split(2, 0, d));
    auto* tk = f.b.TopK(x, 2);
    auto* tv = With(f.b.GetTupleElement(tk, 0), Split(2, 0, d));
    auto* ti = With(f.b.GetTupleElement(tk, 1), Split(2, 0, d));
    f.b.Tuple({pd, am, cc, cy, ds, us, rw, ga, tv, ti});
    PartitionResult r = testing::Partition(*f.m, d);
    testing::CheckNumerics(*f.m, r);
    const std::string why = ExplainProvenance(r);
    // Cumsum and gather along their split dim are native now (spmd_scan_test.cc).
    CHECK(why.find("cumsum along split dim 1: tile totals") != std::string::npos);
    CHECK(why.find("gather along split axis 0") != std::string::npos);
    CHECK(why.find("fallback") == std::string::npos);
  }
}

TEST_CASE("the SPMD program does not grow with D") {
  auto build = [](int64_t d) {
    Fixture f;
    ir::DotDims mm;
    mm.lhs_contracting = {1};
    mm.rhs_contracting = {0};
    auto* x = f.Param(0, {16, 24}, Split(2, 0, d));
    auto* w = f.Param(1, {24, 8}, Split(2, 0, d));
    auto* h = With(f.b.Dot(x, w, mm), Split(2, 0, d));  // contracting on w only: gathers w
    auto* e = With(f.b.Exp(h), Split(2, 1, d));         // all-to-all
    auto* s = With(f.b.Reduce(e, {0}, ir::ReduceKind::kAdd), kRep);  // all-reduce
    auto* io = With(f.b.Iota(Shape(DType::kF32, {8}), 0), Split(1, 0, d));
    With(f.b.Add(s, io), Split(1, 0, d));
    return std::move(f.m);
  };
  std::vector<int64_t> sizes;
  for (int64_t d : {2, 4, 8}) {
    auto m = build(d);
    PartitionResult r = testing::Partition(*m, d);
    testing::CheckNumerics(*m, r);
    sizes.push_back(r.module->InstructionCount());
  }
  CHECK(sizes[0] == sizes[1]);
  CHECK(sizes[1] == sizes[2]);
}

TEST_CASE("tuple outputs keep each element's sharding") {
  Fixture f;
  auto* x = f.Param(0, {8, 4}, Split(2, 0, 4));
  auto* a = With(f.b.Neg(x), Split(2, 0, 4));
  auto* b = With(f.b.Abs(x), kRep);
  f.b.Tuple({a, b});
  PartitionResult r = testing::Partition(*f.m, 4);
  REQUIRE(r.output_shardings.size() == 2);
  CHECK(r.output_shardings[0] == Split(2, 0, 4));
  CHECK(r.output_shardings[1] == kRep);
  testing::CheckNumerics(*f.m, r);
}

TEST_CASE("bad input is an error naming the instruction") {
  Fixture f;
  auto* x = f.Param(0, {8, 4}, Split(2, 0, 3));
  With(f.b.Neg(x), kRep);
  CHECK_THROWS_WITH_AS(testing::Partition(*f.m, 4), doctest::Contains("%p0"), podsim::Error);
  Fixture g;
  auto* y = g.Param(0, {8, 4}, ir::Sharding::Manual());
  With(g.b.Neg(y), kRep);
  CHECK_THROWS_WITH_AS(testing::Partition(*g.m, 4), doctest::Contains("manual"), podsim::Error);
}

}  // namespace
}  // namespace podsim::partitioner

namespace podsim::partitioner {
namespace {

// x <- tanh(x @ w) repeated 3 times; x split on `x_dim` (rows: data parallel, or columns:
// contracting), w split on `w_dim` (-1: replicated).
std::unique_ptr<ir::Module> LoopModule(int64_t rows, int64_t x_dim, int64_t w_dim, int64_t d) {
  auto m = std::make_unique<ir::Module>("loop");
  const Shape xs(DType::kF32, {rows, 8}), ws(DType::kF32, {8, 8});
  const ir::Sharding x_sh = Split(2, x_dim, d);
  const ir::Sharding w_sh = w_dim < 0 ? kRep : Split(2, w_dim, d);
  ir::Computation* body = m->AddComputation("body");
  {
    ir::Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* x = With(b.Parameter(1, xs, "x"), x_sh);
    auto* w = With(b.Parameter(2, ws, "w"), w_sh);
    ir::DotDims mm;
    mm.lhs_contracting = {1};
    mm.rhs_contracting = {0};
    auto* y = With(b.Dot(x, w, mm), x_sh);
    b.Tuple({With(b.Tanh(y), x_sh), w});
  }
  ir::Builder b(m->AddComputation("main", true));
  auto* x0 = With(b.Parameter(0, xs, "x0"), kRep);
  auto* w0 = With(b.Parameter(1, ws, "w0"), kRep);
  auto* loop = b.Loop({x0, w0}, body, 3);
  With(b.GetTupleElement(loop, 0), kRep);
  return m;
}

TEST_CASE("loop: carried values keep their layout; collectives inside the body run per trip") {
  for (int64_t d : {2, 4}) {
    CAPTURE(d);
    // Rows split, w replicated: data parallel, nothing moves inside; one gather at the end.
    auto m = LoopModule(12, 0, -1, d);
    PartitionResult r = testing::Partition(*m, d);
    testing::CheckNumerics(*m, r);
    CHECK(CollectiveCounts(*r.module) == Counts{{"all-gather", 1}});
    // Rows of 11 (uneven) and w split on its rows (contracting): the body gathers w or
    // all-reduces partial sums each trip.
    auto u = LoopModule(11, 0, 0, d);
    PartitionResult ru = testing::Partition(*u, d);
    testing::CheckNumerics(*u, ru);
    CHECK(testing::TotalCollectives(*ru.module) >= 2);
  }
}

TEST_CASE("check tolerance: a split sum in a loop inside a loop is held to its rounding") {
  // Outer loop (2 trips) around LoopModule's inner loop (3 trips of x <- tanh(x @ w)) with w
  // split on its rows, so every inner trip all-reduces partial sums: 6 split dots in a row.
  // Counting the inner body only one loop level deep gave this output tolerance 0: exact
  // agreement, which split sums only reach when their roundings happen to coincide.
  const int64_t d = 4;
  auto inner = LoopModule(11, 0, 0, d);
  auto m = std::make_unique<ir::Module>("nested");
  const Shape xs(DType::kF32, {11, 8}), ws(DType::kF32, {8, 8});
  ir::Computation* inner_body = m->AddComputation("inner");
  {
    // A copy of LoopModule's body.
    std::unordered_map<const ir::Instruction*, ir::Instruction*> map;
    for (const auto& i : inner->FindComputation("body")->instructions()) {
      auto c = std::make_unique<ir::Instruction>(*i);
      for (ir::Instruction*& o : c->operands) o = map.at(o);
      map[i.get()] = inner_body->Add(std::move(c));
    }
  }
  ir::Computation* outer_body = m->AddComputation("outer");
  {
    ir::Builder b(outer_body);
    b.Parameter(0, Shape(DType::kS32, {}), "j");
    auto* x = With(b.Parameter(1, xs, "x"), Split(2, 0, d));
    auto* w = With(b.Parameter(2, ws, "w"), Split(2, 0, d));
    auto* loop = b.Loop({x, w}, inner_body, 3);
    b.Tuple({With(b.GetTupleElement(loop, 0), Split(2, 0, d)),
             With(b.GetTupleElement(loop, 1), Split(2, 0, d))});
  }
  ir::Builder b(m->AddComputation("main", true));
  auto* x0 = With(b.Parameter(0, xs, "x0"), kRep);
  auto* w0 = With(b.Parameter(1, ws, "w0"), kRep);
  auto* loop = b.Loop({x0, w0}, outer_body, 2);
  With(b.GetTupleElement(loop, 0), kRep);
  PartitionResult r = testing::Partition(*m, d);
  const EquivalenceReport report = CompareSpmd(*m, r, ir::RandomArguments(*m, 5));
  REQUIRE(report.outputs.size() == 1);
  // R = 2 x 3 dots: factor 8 x 2^-24 x D x R x (1 + max|x|), max|x| < 1 after tanh.
  const double unit = 8 * std::ldexp(1.0, -24) * d * 6;
  CHECK(report.outputs[0].tolerance >= unit);
  CHECK(report.outputs[0].tolerance < 2 * unit);
  CHECK(report.ok());
}

TEST_CASE("check tolerance: split sums that cancel are held to their own scale") {
  // sum(concat(x * 1e7, x - x * 1e7)) = sum(x), of order 1, from partial sums of order 1e7 when
  // the 16 elements are split 4 ways (two partitions hold +1e7 x, two -1e7 x): the partials
  // round at 1e7 * 2^-24 ~ 0.6, so a tolerance scaled by the output (~1) would fail on
  // rounding alone. The partial-sum scale is sum |terms| <= 16 * 1e7 (|x| < 1, 16 terms).
  const int64_t d = 4;
  testing::SpmdFixture f("cancel");
  auto* x = f.Param(0, {8}, kRep);
  auto* big = f.b.Mul(x, f.b.BroadcastScalar(f.b.ConstantScalar(DType::kF32, 1e7), {8}));
  auto* both = With(f.b.Concatenate({big, f.b.Sub(x, big)}, 0), Split(1, 0, d));
  With(f.b.Reduce(both, {0}, ir::ReduceKind::kAdd), kRep);
  PartitionResult r = testing::Partition(*f.m, d);
  const EquivalenceReport report = CompareSpmd(*f.m, r, ir::RandomArguments(*f.m, 2));
  REQUIRE(report.outputs.size() == 1);
  CHECK(report.outputs[0].tolerance > 8 * std::ldexp(1.0, -24) * d * 1e6);
  CHECK(report.outputs[0].tolerance <= 8 * std::ldexp(1.0, -24) * d * (1 + 16e7));
  CHECK(report.ok());
}

}  // namespace
}  // namespace podsim::partitioner
