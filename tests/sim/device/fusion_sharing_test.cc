// Fusion planning (sim/device/fusion.h) of values several kernels read: when a producer is
// duplicated into each kernel and when it is computed and written once, and reads siblings
// share; bytes derived by hand.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/sim/device/fusion_test_util.h"

namespace podsim::sim::fusion_test {
namespace {

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

}  // namespace
}  // namespace podsim::sim::fusion_test
