#pragma once
// Helpers of the fusion tests (tests/sim/device/fusion*_test.cc), which live in this namespace:
// the plan of a module, an instruction's kernel, and the softmax they take apart.

#include "ir/builder.h"
#include "ir/cost.h"
#include "sim/device/fusion.h"

namespace podsim::sim::fusion_test {

using ir::Builder;
using ir::DType;
using ir::Shape;

constexpr double kMiB = 1 << 20;

inline FusionPlan Plan(const ir::Module& m, bool enabled) {
  return PlanFusion(*m.entry(), ir::AnalyzeCost(m).per_instruction, enabled);
}

inline const FusionGroup& GroupOf(const FusionPlan& plan, const ir::Instruction* i) {
  return plan.groups.at(static_cast<size_t>(plan.group_of.at(i)));
}

// x f32[64,256] (65536 B). softmax over dim 1, as the models build it:
//   mx = reduce-max(x) [64] (256 B); e = exp(x - broadcast(mx)); sm = reduce-add(e) [64];
//   y = e / broadcast(sm).
struct Softmax {
  const ir::Instruction *x, *mx, *sub, *e, *sm, *y;
};
inline Softmax BuildSoftmax(ir::Module& m) {
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

}  // namespace podsim::sim::fusion_test
