// Fusion planning (sim/device/fusion.h): which instructions share a kernel and how many HBM bytes the
// kernel moves, derived by hand.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "ir/builder.h"
#include "ir/cost.h"
#include "sim/device/fusion.h"

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

// x f32[64,256] (65536 B). softmax over dim 1, as the models build it:
//   mx = reduce-max(x) [64] (256 B); e = exp(x - broadcast(mx)); sm = reduce-add(e) [64];
//   y = e / broadcast(sm).
struct Softmax {
  const ir::Instruction *x, *mx, *sub, *e, *sm, *y;
};
Softmax BuildSoftmax(ir::Module& m) {
  Builder b(m.AddComputation("main", true));
  Softmax s;
  s.x = b.Parameter(0, Shape(DType::kF32, {64, 256}), "x");
  auto* x = const_cast<ir::Instruction*>(s.x);
  auto* mx = b.Reduce(x, {1}, ir::ReduceKind::kMax);
  auto* sub = b.Sub(x, b.Broadcast(mx, {64, 256}, {0}));
  auto* e = b.Exp(sub);
  auto* sm = b.Reduce(e, {1}, ir::ReduceKind::kAdd);
  s.y = b.Div(e, b.Broadcast(sm, {64, 256}, {0}));
  s.mx = mx;
  s.sub = sub;
  s.e = e;
  s.sm = sm;
  return s;
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

TEST_CASE("a cheap producer with users in two kernels is duplicated into both") {
  // n = neg(x) (x f32[256], 1 KiB) feeds u = n + y [256] and t = broadcast(n) [4,256] * w.
  // neg is not expensive and a copy reads x (1 KiB), no more than n itself: each kernel
  // computes it, and it never runs alone. The two kernels loop over different shapes ([256],
  // [4,256]), so they do not merge.
  //  u's kernel: reads x, y, writes u: 3 * 1024 = 3072 B.
  //  t's kernel (n, broadcast, multiply): reads x (1024) and w (4096), writes t (4096): 9216 B.
  ir::Module m("dup");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {256}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {256}), "y");
  auto* w = b.Parameter(2, Shape(DType::kF32, {4, 256}), "w");
  auto* n = b.Neg(x);
  auto* u = b.Add(n, y);
  auto* t = b.Mul(b.Broadcast(n, {4, 256}, {1}), w);
  b.computation()->set_root(b.Tuple({u, t}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.count(n) == 0);
  const FusionGroup& gu = GroupOf(plan, u);
  const FusionGroup& gt = GroupOf(plan, t);
  CHECK(plan.group_of.at(u) != plan.group_of.at(t));
  CHECK(std::count(gu.members.begin(), gu.members.end(), n) == 1);
  CHECK(std::count(gt.members.begin(), gt.members.end(), n) == 1);
  CHECK(gu.hbm_bytes == 3072);
  CHECK(gt.hbm_bytes == 9216);
}

TEST_CASE("an expensive producer is not duplicated: computed once, written once") {
  // As above with n = log(x): log is expensive, so t's kernel does not recompute it. u's kernel
  // takes n as a multi-output producer (u reads it, t's kernel runs after u's), computing exp
  // once and writing it for t.
  //  u's kernel: reads x, y; writes n and u: 4 * 1024 = 4096 B.
  //  t's kernel (broadcast, multiply): reads n (1024) and w (4096), writes t (4096): 9216 B.
  ir::Module m("expensive");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {256}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {256}), "y");
  auto* w = b.Parameter(2, Shape(DType::kF32, {4, 256}), "w");
  auto* n = b.Log(x);
  auto* u = b.Add(n, y);
  auto* t = b.Mul(b.Broadcast(n, {4, 256}, {1}), w);
  b.computation()->set_root(b.Tuple({u, t}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(n) == plan.group_of.at(u));
  const FusionGroup& gt = GroupOf(plan, t);
  CHECK(std::count(gt.members.begin(), gt.members.end(), n) == 0);
  CHECK(std::count(gt.inputs.begin(), gt.inputs.end(), n) == 1);
  CHECK(GroupOf(plan, u).outputs == std::vector<const ir::Instruction*>{n, u});
  CHECK(GroupOf(plan, u).hbm_bytes == 4096);
  CHECK(gt.hbm_bytes == 9216);
}

TEST_CASE("a value whose cheap user is copied into a later kernel is written for it") {
  // e = log(p0) (expensive, f32[1024], 4 KiB); n = neg(e) is cheap and copied into both of
  // its users' kernels: b = n + p1 [1024] and r = reshape(n) [32,32] (a different loop shape,
  // so the two do not merge). b's kernel takes e as a multi-output producer (it reads e through
  // its copy of n, r's kernel runs after it); r's copy of n reads e from HBM, so b's kernel
  // must write e as well as b.
  //  b's kernel: reads p0, p1; writes e, b: 4 * 4096 = 16384 B.
  //  r's kernel (n, reshape): reads e, writes r: 2 * 4096 = 8192 B.
  ir::Module m("copied_user");
  Builder b(m.AddComputation("main", true));
  const Shape s(DType::kF32, {1024});
  auto* e = b.Log(b.Parameter(0, s, "p0"));
  auto* n = b.Neg(e);
  auto* sum = b.Add(n, b.Parameter(1, s, "p1"));
  auto* r = b.Reshape(n, {32, 32});
  b.computation()->set_root(b.Tuple({sum, r}));
  const FusionPlan plan = Plan(m, true);
  REQUIRE(plan.group_of.at(e) == plan.group_of.at(sum));
  const FusionGroup& gb = GroupOf(plan, sum);
  const FusionGroup& gr = GroupOf(plan, r);
  CHECK(gb.outputs == std::vector<const ir::Instruction*>{e, sum});
  CHECK(std::count(gr.inputs.begin(), gr.inputs.end(), e) == 1);
  CHECK(gb.hbm_bytes == 16384);
  CHECK(gr.hbm_bytes == 8192);
}

TEST_CASE("a cheap producer that reads more than it writes is not duplicated") {
  // r = x + y (f32[256] each, 1 KiB) feeds neg(r) and broadcast(r) [4,256] * w: a copy would
  // read 2 KiB instead of r's 1 KiB, so r runs as its own kernel (reads 2048, writes 1024 B).
  ir::Module m("residual");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {256}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {256}), "y");
  auto* w = b.Parameter(2, Shape(DType::kF32, {4, 256}), "w");
  auto* r = b.Add(x, y);
  auto* n = b.Neg(r);
  auto* t = b.Mul(b.Broadcast(r, {4, 256}, {1}), w);
  b.computation()->set_root(b.Tuple({n, t}));
  const FusionPlan plan = Plan(m, true);
  CHECK(std::count(GroupOf(plan, t).members.begin(), GroupOf(plan, t).members.end(), r) == 0);
  // r may still merge with n's kernel (multi-output: n reads it); either way it is computed
  // once and written once for t.
  CHECK(std::count(GroupOf(plan, t).inputs.begin(), GroupOf(plan, t).inputs.end(), r) == 1);
}

TEST_CASE("siblings reading the same input share one read; a kernel in between blocks it") {
  // x f32[256] (1 KiB): siblings a = neg(x) and c = abs(x), both returned: one kernel reading
  // x once and writing a and c: 3 * 1024 = 3072 B (unfused: two kernels of 2048 B).
  ir::Module m("siblings");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {256}), "x");
  auto* a = b.Neg(x);
  auto* c = b.Abs(x);
  b.computation()->set_root(b.Tuple({a, c}));
  const FusionPlan plan = Plan(m, true);
  CHECK(plan.group_of.at(a) == plan.group_of.at(c));
  CHECK(GroupOf(plan, c).outputs == std::vector<const ir::Instruction*>{a, c});
  CHECK(GroupOf(plan, c).hbm_bytes == 3072);
  // Fusion off: two kernels of 2048 B.
  const FusionPlan off = Plan(m, false);
  CHECK(off.group_of.at(a) != off.group_of.at(c));
  CHECK(GroupOf(off, a).hbm_bytes == 2048);

  // With a cumsum of a (never fused) between a and c, the merged kernel would run where c
  // runs, after the cumsum that needs a: no merge.
  ir::Module m2("blocked");
  Builder b2(m2.AddComputation("main", true));
  auto* x2 = b2.Parameter(0, Shape(DType::kF32, {256}), "x");
  auto* a2 = b2.Neg(x2);
  auto* cs = b2.Cumsum(a2, 0);
  auto* c2 = b2.Abs(x2);
  b2.computation()->set_root(b2.Tuple({cs, c2}));
  const FusionPlan blocked = Plan(m2, true);
  CHECK(blocked.group_of.at(a2) != blocked.group_of.at(c2));
  CHECK(GroupOf(blocked, c2).hbm_bytes == 2048);
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
}  // namespace podsim::sim
