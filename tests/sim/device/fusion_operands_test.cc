// Fusion planning (sim/device/fusion.h) around dots and data movement: what a dot's kernel takes
// in as operands, one-hot rebuilds, slices, bitcasts and the data movement that does not fuse;
// bytes derived by hand.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/sim/device/fusion_test_util.h"

namespace podsim::sim::fusion_test {
namespace {

TEST_CASE("a reduce that only shares an input with a dot stays out of the dot's kernel") {
  // r = reduce-add(x) over dim 1 and y = dot(x, w): siblings (both read x), but the reduce does
  // not read the dot's result, so nothing comes out of the matrix unit for it to fold: two
  // kernels. x f32[64,256] (65536 B), w f32[256,32] (32768 B), y f32[64,32] (8192 B), r f32[64].
  //  dot: 65536 + 32768 + 8192 = 106496 B; reduce: 65536 + 256 = 65792 B.
  ir::Module m("siblings");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {64, 256}), "x");
  auto* w = b.Parameter(1, Shape(DType::kF32, {256, 32}), "w");
  ir::DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  auto* y = b.Dot(x, w, dims);
  auto* r = b.Reduce(x, {1}, ir::ReduceKind::kAdd);
  b.computation()->set_root(b.Tuple({y, r}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(y) != plan.group_of.at(r));
  CHECK(GroupOf(plan, y).hbm_bytes == 106496);
  CHECK(GroupOf(plan, r).hbm_bytes == 65792);
}

TEST_CASE("an elementwise chain fuses into a dot's operand: the normalised rows never reach HBM") {
  // y = dot(x / broadcast(s), w): x f32[64,256] (65536 B), s f32[64] (256 B), w f32[256,32]
  // (32768 B), y f32[64,32] (8192 B). One output kernel computes the divide on x's tiles as they
  // stream to the matrix unit: reads x, s, w, writes y: 65536 + 256 + 32768 + 8192 = 106752 B
  // (unfused, the divide alone would write and the dot read back another 2 x 65536 B).
  ir::Module m("operand");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {64, 256}), "x");
  auto* sc = b.Parameter(1, Shape(DType::kF32, {64}), "s");
  auto* w = b.Parameter(2, Shape(DType::kF32, {256, 32}), "w");
  auto* q = b.Div(x, b.Broadcast(sc, {64, 256}, {0}));
  ir::DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  auto* y = b.Dot(q, w, dims);
  b.computation()->set_root(y);
  const FusionPlan plan = Plan(m, true);
  const FusionGroup& g = GroupOf(plan, y);
  CHECK(g.kind == FusionKind::kOutput);
  CHECK(plan.group_of.at(q) == plan.group_of.at(y));
  CHECK(g.outputs == std::vector<const ir::Instruction*>{y});
  CHECK(g.hbm_bytes == 106752);
}

TEST_CASE("a one-hot tensor built from small operands is rebuilt in each dot that reads it") {
  // The gating's combine tensor, at toy size: S = 8 tokens, E = 4 experts, C = 16 slots.
  //   comb[s,e,c] = w1[s,e] * (pos1[s,e] == c) + w2[s,e] * (pos2[s,e] == c)    f32[8,4,16]
  // read by two dots contracting S with a and b (f32[8,32], 1024 B each) into [4,16,32] (8192 B).
  // The add's operands are full-size, but each is a copy streaming only broadcasts and an iota,
  // so a copy of comb streams nothing at its own rate and both dots rebuild it from pos1, pos2,
  // w1, w2 (128 B each): each dot's kernel reads 4 * 128 + 1024 and writes 8192 = 9728 B, and
  // comb (2048 B) never reaches HBM.
  ir::Module m("one_hot");
  Builder b(m.AddComputation("main", true));
  const std::vector<int64_t> sec = {8, 4, 16};
  auto part = [&](int n) {
    auto* pos = b.Parameter(2 * n, Shape(DType::kS32, {8, 4}), "pos");
    auto* w = b.Parameter(2 * n + 1, Shape(DType::kF32, {8, 4}), "w");
    auto* hot = b.Convert(b.Compare(b.Broadcast(pos, sec, {0, 1}),
                                    b.Iota(Shape(DType::kS32, sec), 2), ir::Comparison::kEq),
                          DType::kF32);
    return b.Mul(b.Broadcast(w, sec, {0, 1}), hot);
  };
  auto* comb = b.Add(part(0), part(1));
  auto* x = b.Parameter(4, Shape(DType::kF32, {8, 32}), "a");
  auto* y = b.Parameter(5, Shape(DType::kF32, {8, 32}), "b");
  ir::DotDims dims;
  dims.lhs_contracting = {0};
  dims.rhs_contracting = {0};
  auto* d1 = b.Dot(comb, x, dims);
  auto* d2 = b.Dot(comb, y, dims);
  b.computation()->set_root(b.Tuple({d1, d2}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.count(comb) == 0);
  for (const ir::Instruction* d : {d1, d2}) {
    const FusionGroup& g = GroupOf(plan, d);
    CHECK(g.kind == FusionKind::kOutput);
    CHECK(std::count(g.members.begin(), g.members.end(), comb) == 1);
    CHECK(g.hbm_bytes == 9728);
  }
}

TEST_CASE("data movement other than broadcast / reshape is not fused") {
  ir::Module m("transpose");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {64, 32}), "x");
  auto* t = b.Transpose(x, {1, 0});
  auto* n = b.Neg(t);
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(t) != plan.group_of.at(n));
}

TEST_CASE("a dynamic slice fuses into its consumer, which reads only the window") {
  // A stack s f32[8,256,256] (2 MiB); row i (256 KiB) sliced, reshaped and added to y
  // f32[256,256] (256 KiB). Fused: one kernel reads the window 256 KiB, y 256 KiB and the two
  // s32 starts (8 B), and writes the sum 256 KiB.
  ir::Module m("ds");
  Builder b(m.AddComputation("main", true));
  auto* s = b.Parameter(0, Shape(DType::kF32, {8, 256, 256}), "s");
  auto* y = b.Parameter(1, Shape(DType::kF32, {256, 256}), "y");
  auto* i = b.Parameter(2, Shape(DType::kS32, {}), "i");
  auto* zero = b.Parameter(3, Shape(DType::kS32, {}), "zero");
  auto* row = b.DynamicSlice(s, {i, zero, zero}, {1, 256, 256});
  auto* add = b.Add(b.Reshape(row, {256, 256}), y);
  const FusionPlan plan = Plan(m, true);
  const FusionGroup& g = GroupOf(plan, add);
  CHECK(plan.group_of.at(row) == plan.group_of.at(add));
  CHECK(g.hbm_bytes == 3 * 256 * 1024 + 8);
  // A dot's operand too: the dot reads the window, not the stack.
  ir::Module d("ds_dot");
  Builder db(d.AddComputation("main", true));
  auto* ds = db.Parameter(0, Shape(DType::kF32, {8, 256, 256}), "s");
  auto* di = db.Parameter(1, Shape(DType::kS32, {}), "i");
  auto* w = db.Parameter(2, Shape(DType::kF32, {256, 256}), "w");
  auto* drow = db.Reshape(db.DynamicSlice(ds, {di, di, di}, {1, 256, 256}), {256, 256});
  ir::DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  auto* dot = db.Dot(drow, w, dims);
  const FusionPlan dplan = Plan(d, true);
  CHECK(dplan.group_of.at(drow) == dplan.group_of.at(dot));
  CHECK(GroupOf(dplan, dot).hbm_bytes == 3 * 256 * 1024 + 4);
}

TEST_CASE("a reshape or transpose that only moves unit dims is a bitcast: no kernel, no bytes") {
  // [1,8,4] -> transpose {1,0,2} -> [8,1,4]: the non-unit dims 8, 4 keep their order, so every
  // element stays where it is. transpose {2,1,0} -> [4,8,1] swaps them: a real copy,
  // (32 + 32) * 4 = 256 bytes. reshape [8,4] -> [8,1,4] is a bitcast, [8,4] -> [32] is not
  // counted as one (it merges dims).
  ir::Module m("bitcast");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {1, 8, 4}), "x");
  auto* moved = b.Transpose(x, {1, 0, 2});
  auto* swapped = b.Transpose(x, {2, 1, 0});
  auto* y = b.Parameter(1, Shape(DType::kF32, {8, 4}), "y");
  auto* unit = b.Reshape(y, {8, 1, 4});
  auto* merged = b.Reshape(y, {32});
  b.Tuple({moved, swapped, unit, merged});
  CHECK(IsBitcast(*moved));
  CHECK_FALSE(IsBitcast(*swapped));
  CHECK(IsBitcast(*unit));
  CHECK_FALSE(IsBitcast(*merged));
  const FusionPlan plan = Plan(m, true);
  CHECK(GroupOf(plan, moved).bitcast);
  CHECK(GroupOf(plan, moved).hbm_bytes == 0);
  CHECK_FALSE(GroupOf(plan, swapped).bitcast);
  CHECK(GroupOf(plan, swapped).hbm_bytes == 256);
}

TEST_CASE("an outer-product dot fuses like an elementwise multiply") {
  // neg(dot(a [64], b [32]) with no contracting dims) -> [64,32] f32: one loop fusion reading
  // a and b ((64 + 32) * 4 = 384 bytes) and writing 64*32*4 = 8192 bytes.
  ir::Module m("outer");
  Builder b(m.AddComputation("main", true));
  auto* a = b.Parameter(0, Shape(DType::kF32, {64}), "a");
  auto* c = b.Parameter(1, Shape(DType::kF32, {32}), "c");
  auto* outer = b.Dot(a, c, ir::DotDims{});
  auto* n = b.Neg(outer);
  CHECK(IsOuterProduct(*outer));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(outer) == plan.group_of.at(n));
  CHECK(GroupOf(plan, n).kind == FusionKind::kLoop);
  CHECK(GroupOf(plan, n).hbm_bytes == 384 + 8192);
}

}  // namespace
}  // namespace podsim::sim::fusion_test
