// Fusion planning (sim/fusion.h): which instructions share a kernel and how many HBM bytes the
// kernel moves, derived by hand.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "ir/builder.h"
#include "ir/cost.h"
#include "sim/fusion.h"

namespace podsim::sim {
namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;

constexpr double kMiB = 1 << 20;

FusionPlan Plan(const ir::Module& m, bool enabled) {
  return PlanFusion(*m.entry(), ir::AnalyzeCost(m).per_instruction, enabled);
}

const FusionGroup& GroupOf(const FusionPlan& plan, const ir::Instruction* i) {
  return plan.groups.at(static_cast<size_t>(plan.group_of.at(i)));
}

TEST_CASE("an elementwise chain fuses; its intermediate never reaches HBM") {
  // mul(add(x, y), z), all f32[1024,1024] (4 MiB each).
  // Unfused: add reads 8 MiB writes 4, mul reads 8 writes 4: 24 MiB in two ops.
  // Fused: reads x, y, z once (12 MiB), writes the mul (4 MiB): 16 MiB in one op.
  ir::Module m("chain");
  Builder b(m.AddComputation("main", true));
  const Shape s(DType::kF32, {1024, 1024});
  auto* x = b.Parameter(0, s, "x");
  auto* y = b.Parameter(1, s, "y");
  auto* z = b.Parameter(2, s, "z");
  auto* add = b.Add(x, y);
  auto* mul = b.Mul(add, z);

  const FusionPlan fused = Plan(m, true);
  const FusionGroup& g = GroupOf(fused, mul);
  CHECK(fused.group_of.at(add) == fused.group_of.at(mul));
  CHECK(g.kind == FusionKind::kLoop);
  CHECK(g.members.size() == 2);
  CHECK(g.root == mul);
  CHECK(g.inputs.size() == 3);
  CHECK(g.hbm_bytes == 16 * kMiB);
  CHECK(fused.bytes_saved == 8 * kMiB);

  const FusionPlan unfused = Plan(m, false);
  CHECK(unfused.group_of.at(add) != unfused.group_of.at(mul));
  CHECK(GroupOf(unfused, add).hbm_bytes == 12 * kMiB);
  CHECK(GroupOf(unfused, mul).hbm_bytes == 12 * kMiB);
}

TEST_CASE("elementwise producers fuse into a reduce; the reduce does not fuse into its user") {
  // r = reduce(exp(x)) over dim 1 of f32[256,1024] (1 MiB): input fusion reading x once and
  // writing r (1 KiB). n = neg(r) is its own op.
  ir::Module m("reduce");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {256, 1024}), "x");
  auto* e = b.Exp(x);
  auto* r = b.Reduce(e, {1}, ir::ReduceKind::kAdd);
  auto* n = b.Neg(r);
  const FusionPlan plan = Plan(m, true);
  const FusionGroup& g = GroupOf(plan, r);
  CHECK(g.kind == FusionKind::kInput);
  CHECK(plan.group_of.at(e) == plan.group_of.at(r));
  CHECK(plan.group_of.at(n) != plan.group_of.at(r));
  CHECK(g.hbm_bytes == 1 * kMiB + 1024);
}

TEST_CASE("a dot fuses into its elementwise consumers (output fusion); broadcasts duplicate") {
  // t = tanh(dot(x, w) + broadcast(bias)); u = bias_b * 2 uses the same broadcast elsewhere.
  // The dot, the add, the tanh and a copy of the broadcast form one kernel reading x, w and
  // bias (not the broadcast result) and writing t.
  ir::Module m("output");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kBF16, {128, 256}), "x");
  auto* w = b.Parameter(1, Shape(DType::kBF16, {256, 512}), "w");
  auto* bias = b.Parameter(2, Shape(DType::kBF16, {512}), "bias");
  ir::DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  auto* dot = b.Dot(x, w, dims);
  auto* bb = b.Broadcast(bias, {128, 512}, {1});
  auto* t = b.Tanh(b.Add(dot, bb));
  auto* two = b.BroadcastScalar(b.ConstantScalar(DType::kBF16, 2), {128, 512});
  auto* u = b.Mul(bb, two);
  b.computation()->set_root(b.Tuple({t, u}));
  const FusionPlan plan = Plan(m, true);
  const FusionGroup& g = GroupOf(plan, t);
  CHECK(g.kind == FusionKind::kOutput);
  CHECK(plan.group_of.at(dot) == plan.group_of.at(t));
  CHECK(std::count(g.members.begin(), g.members.end(), bb) == 1);
  // x (64 KiB) + w (256 KiB) + bias (1 KiB) read, t (128 KiB) written.
  CHECK(g.hbm_bytes == (128 * 256 + 256 * 512 + 512 + 128 * 512) * 2.0);
  // The broadcast is also computed inside u's kernel, so it never runs on its own.
  CHECK(plan.group_of.count(bb) == 0);
  CHECK(std::count(GroupOf(plan, u).members.begin(), GroupOf(plan, u).members.end(), bb) == 1);
}

TEST_CASE("an iota read twice inside one kernel is computed there and nowhere else") {
  // select(i == a, i, a) + i  with i = iota: one loop fusion; the iota never runs on its own.
  ir::Module m("iota");
  Builder b(m.AddComputation("main", true));
  auto* a = b.Parameter(0, Shape(DType::kS32, {64}), "a");
  auto* i = b.Iota(Shape(DType::kS32, {64}), 0);
  auto* sel = b.Select(b.Compare(i, a, ir::Comparison::kEq), i, a);
  auto* root = b.Add(sel, i);
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.count(i) == 0);
  CHECK(plan.groups.size() == 2);  // the parameter, and the fusion
  CHECK(GroupOf(plan, root).hbm_bytes == 2 * 64 * 4);  // reads a, writes the result
}

TEST_CASE("a producer with users in two kernels is not fused (no multi-output fusion)") {
  // a = exp(x) feeds both p = a + 1 and the reduce r of a: a stays its own kernel.
  ir::Module m("shared");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {64, 64}), "x");
  auto* a = b.Exp(x);
  auto* r = b.Reduce(a, {1}, ir::ReduceKind::kAdd);
  auto* p = b.Add(a, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1), {64, 64}));
  b.computation()->set_root(b.Tuple({p, r}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(a) != plan.group_of.at(p));
  CHECK(plan.group_of.at(a) != plan.group_of.at(r));
  CHECK(GroupOf(plan, a).members.size() == 1);
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
}  // namespace podsim::sim
