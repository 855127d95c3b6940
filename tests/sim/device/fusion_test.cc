// Fusion planning (sim/device/fusion.h), what shares a kernel: elementwise chains, reduces, a
// dot's output fusion, multi-output kernels, softmax and attention, and where a kernel runs;
// each kernel's HBM bytes derived by hand.

#include "sim/device/fusion.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "ir/builder.h"
#include "ir/cost.h"
#include "tests/sim/device/fusion_test_util.h"

namespace podsim::sim::fusion_test {
namespace {

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
  // Every user of the iota is in the kernel, so the kernel owns it.
  CHECK(plan.group_of.at(i) == plan.group_of.at(root));
  CHECK(plan.groups.size() == 2);  // the parameter, and the fusion
  CHECK(GroupOf(plan, root).hbm_bytes == 2 * 64 * 4);  // reads a, writes the result
}

TEST_CASE("a producer read by a reduce and by a loop kernel: one multi-output kernel") {
  // a = log(x) (expensive: not duplicated) feeds the reduce r of a and p = a + 1, all over
  // f32[64,64] (16 KiB). Single-output fusion leaves three kernels (a, r, p); multi-output
  // fusion merges a into r
  // (producer-consumer: r reads a), then that kernel into p (p reads a, not a reduce value; the
  // iteration shape [64,64] is r's operand's and p's). One input kernel: log, reduce, constant,
  // broadcast, add; reads x (16384 B) once, writes r (64 * 4 = 256 B) and p (16384 B); a never
  // reaches HBM (both its readers are inside).
  ir::Module m("shared");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {64, 64}), "x");
  auto* a = b.Log(x);
  auto* r = b.Reduce(a, {1}, ir::ReduceKind::kAdd);
  auto* p = b.Add(a, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1), {64, 64}));
  b.computation()->set_root(b.Tuple({p, r}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(a) == plan.group_of.at(p));
  CHECK(plan.group_of.at(r) == plan.group_of.at(p));
  const FusionGroup& g = GroupOf(plan, p);
  CHECK(g.kind == FusionKind::kInput);
  CHECK(g.root == p);
  CHECK(g.members.size() == 5);
  CHECK(g.outputs == std::vector<const ir::Instruction*>{r, p});
  CHECK(g.hbm_bytes == 16384 + 256 + 16384);
}

TEST_CASE("softmax: one pass for the max, one for the sum, one for the normalize") {
  // exp and divide are cheap (single vector-unit instructions), and x - broadcast(mx) streams
  // only x (the broadcast's source is a row statistic), so the subtract and the exp are
  // recomputed by both kernels that read them instead of being written. Kernels, in order:
  //  1. reduce-max: reads x, writes mx: 65536 + 256 = 65792 B. Its result cannot feed a member
  //     of the kernel that computes it, so it stays alone.
  //  2. the sum, with copies of the subtract, the exp and broadcast(mx): reads x and mx, writes
  //     sm: 65536 + 256 + 256 = 66048 B.
  //  3. the divide, with its own copies of them and of broadcast(sm): reads x, mx and sm, writes
  //     y: 65536 + 256 + 256 + 65536 = 131584 B. It does not absorb kernel 2 (it reads sm, a
  //     reduce's result).
  // Total 263424 B: x is read three times, y written once, e never reaches HBM.
  ir::Module m("softmax");
  const Softmax s = BuildSoftmax(m);
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.groups.size() == 4);  // the parameter and three kernels
  const FusionGroup& max = GroupOf(plan, s.mx);
  CHECK(max.members.size() == 1);
  CHECK(max.hbm_bytes == 65792);
  const FusionGroup& sum = GroupOf(plan, s.sm);
  CHECK(plan.group_of.count(s.e) == 0);  // computed only as copies
  CHECK(plan.group_of.count(s.sub) == 0);
  CHECK(std::count(sum.members.begin(), sum.members.end(), s.e) == 1);
  CHECK(sum.kind == FusionKind::kInput);
  CHECK(sum.outputs == std::vector<const ir::Instruction*>{s.sm});
  CHECK(sum.hbm_bytes == 66048);
  const FusionGroup& norm = GroupOf(plan, s.y);
  CHECK(norm.kind == FusionKind::kLoop);
  CHECK(std::count(norm.members.begin(), norm.members.end(), s.e) == 1);
  CHECK(norm.hbm_bytes == 131584);
  double total = 0;
  for (const FusionGroup& g : plan.groups) total += g.hbm_bytes;
  CHECK(total == 263424);
}

TEST_CASE(
    "attention: the logits einsum's kernel computes the row max; two passes over the logits") {
  // l = dot(q, k) * c: q f32[64,32] (8192 B), k f32[32,256] (32768 B), l f32[64,256] (65536 B);
  // then the softmax of l over dim 1 (mx, sm [64]: 256 B each) and out = dot(y, v), v
  // f32[256,16] (16384 B), out f32[64,16] (4096 B). Kernels:
  //  1. the logits dot, its scaling and reduce-max(l), which the vector unit folds from each
  //     result tile on its way to HBM: reads q and k, writes qk (the scaling, cheap, is
  //     recomputed by each kernel that reads l) and mx:
  //     8192 + 32768 + 65536 + 256 = 106752 B (without it: 106496 B here and another 65792 B
  //     for a max kernel reading l back).
  //  2. the sum of exp(l - mx): it reads mx, a reduce's result of kernel 1, so it cannot join
  //     it: reads qk and mx, writes sm: 65536 + 256 + 256 = 66048 B.
  //  3. the context dot, the exp and divide fused into its operand: reads qk, mx, sm, v, writes
  //     out: 65536 + 256 + 256 + 16384 + 4096 = 86528 B.
  // The logits are written once and read twice: 259328 B in all.
  ir::Module m("attention");
  Builder b(m.AddComputation("main", true));
  auto* q = b.Parameter(0, Shape(DType::kF32, {64, 32}), "q");
  auto* k = b.Parameter(1, Shape(DType::kF32, {32, 256}), "k");
  auto* v = b.Parameter(2, Shape(DType::kF32, {256, 16}), "v");
  ir::DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  auto* qk = b.Dot(q, k, dims);
  auto* l = b.Mul(qk, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0.125), {64, 256}));
  auto* mx = b.Reduce(l, {1}, ir::ReduceKind::kMax);
  auto* e = b.Exp(b.Sub(l, b.Broadcast(mx, {64, 256}, {0})));
  auto* sm = b.Reduce(e, {1}, ir::ReduceKind::kAdd);
  auto* y = b.Div(e, b.Broadcast(sm, {64, 256}, {0}));
  auto* out = b.Dot(y, v, dims);
  b.computation()->set_root(out);
  const FusionPlan plan = Plan(m, true);
  const FusionGroup& logits = GroupOf(plan, mx);
  CHECK(plan.group_of.at(qk) == plan.group_of.at(mx));
  // The scaling is cheap and streams no more than qk: each kernel that reads it recomputes it
  // from qk (a copy), so qk is the value written.
  CHECK(plan.group_of.count(l) == 0);
  CHECK(std::count(logits.members.begin(), logits.members.end(), l) == 1);
  CHECK(logits.kind == FusionKind::kOutput);
  CHECK(logits.outputs == std::vector<const ir::Instruction*>{qk, mx});
  CHECK(logits.hbm_bytes == 106752);
  const FusionGroup& sum = GroupOf(plan, sm);
  CHECK(plan.group_of.at(sm) != plan.group_of.at(mx));
  CHECK(sum.kind == FusionKind::kInput);
  CHECK(sum.hbm_bytes == 66048);
  const FusionGroup& context = GroupOf(plan, out);
  CHECK(context.kind == FusionKind::kOutput);
  CHECK(context.hbm_bytes == 86528);
  double total = 0;
  for (const FusionGroup& g : plan.groups) total += g.hbm_bytes;
  CHECK(total == 259328);
}

TEST_CASE(
    "a dot's kernel with a reduce runs where the dot was, unless the reduce reads later values") {
  // y = dot(x, w) f32[64,32]; z = log(p) f32[64] (expensive, and of another shape: a kernel of
  // its own) comes between y and the reduce in program order. r = reduce-add(y) reads only y:
  // the merged kernel runs at the dot's place, before z's kernel. r = reduce-add(y *
  // broadcast(z)) reads z, which is made after the dot: the merged kernel runs at the reduce's
  // place, after z's.
  for (const bool reads_z : {false, true}) {
    CAPTURE(reads_z);
    ir::Module m("placement");
    Builder b(m.AddComputation("main", true));
    auto* x = b.Parameter(0, Shape(DType::kF32, {64, 256}), "x");
    auto* w = b.Parameter(1, Shape(DType::kF32, {256, 32}), "w");
    auto* p = b.Parameter(2, Shape(DType::kF32, {64}), "p");
    ir::DotDims dims;
    dims.lhs_contracting = {1};
    dims.rhs_contracting = {0};
    auto* y = b.Dot(x, w, dims);
    auto* z = b.Log(p);
    auto* r =
        b.Reduce(reads_z ? b.Mul(y, b.Broadcast(z, {64, 32}, {0})) : y, {1}, ir::ReduceKind::kAdd);
    b.computation()->set_root(b.Tuple({y, z, r}));
    const FusionPlan plan = Plan(m, true);
    CHECK(plan.group_of.at(y) == plan.group_of.at(r));
    CHECK(GroupOf(plan, r).kind == FusionKind::kOutput);
    if (reads_z) {
      CHECK(plan.group_of.at(r) > plan.group_of.at(z));
    } else {
      CHECK(plan.group_of.at(r) < plan.group_of.at(z));
    }
  }
}

TEST_CASE("softmax with fusion off: every instruction is its own kernel") {
  // 7 kernels plus the parameter, each with its cost-analysis bytes (operands + result):
  //  reduce-max 65536 + 256; broadcast 256 + 65536; subtract 2 * 65536 + 65536; exp 65536 +
  //  65536; reduce-add 65536 + 256; broadcast 256 + 65536; divide 2 * 65536 + 65536.
  //  Sum: 3 * 65792 (reduce, broadcast, reduce) + 65792 (the other broadcast) + 2 * 196608
  //  + 131072 = 263168 + 393216 + 131072 = 787456 B.
  ir::Module m("softmax");
  const Softmax s = BuildSoftmax(m);
  const FusionPlan plan = Plan(m, false);
  CHECK(plan.groups.size() == 8);
  CHECK(plan.fused_instructions == 0);
  double total = 0;
  for (const FusionGroup& g : plan.groups) {
    CHECK(g.members.size() == 1);
    CHECK(g.kind == FusionKind::kNone);
    total += g.hbm_bytes;
  }
  CHECK(total == 787456);
  CHECK(GroupOf(plan, s.e).hbm_bytes == 131072);
}

}  // namespace
}  // namespace podsim::sim::fusion_test
