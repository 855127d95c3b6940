#include "models/top2_gating.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "models/naming.h"
#include "models/scopes.h"

namespace podsim::models {

using ir::Builder;
using ir::Comparison;
using ir::DType;
using ir::Instruction;
using ir::ReduceKind;
using ir::Shape;

namespace {

// Dims of x without its last dim.
std::vector<int64_t> LeadingDims(const Instruction* x) {
  return {x->shape.dims.begin(), x->shape.dims.end() - 1};
}

// 0..n-1, the broadcast dims that put an operand of rank n in front of a wider result.
std::vector<int64_t> FirstDims(int64_t n) {
  std::vector<int64_t> dims(n);
  for (int64_t d = 0; d < n; ++d) dims[d] = d;
  return dims;
}

Instruction* F32Scalar(Builder& b, double v, std::vector<int64_t> dims) {
  return b.BroadcastScalar(b.ConstantScalar(DType::kF32, v), std::move(dims));
}

// pred -> f32 0/1.
Instruction* PredicateToF32(Builder& b, Instruction* pred) { return b.Convert(pred, DType::kF32); }

}  // namespace

Instruction* AddSoftmaxLastDim(Builder& b, Instruction* x) {
  const std::vector<int64_t> dims = x->shape.dims;
  const int64_t last = x->shape.rank() - 1;
  const std::vector<int64_t> keep = FirstDims(last);
  Instruction* max = b.Broadcast(b.Reduce(x, {last}, ReduceKind::kMax), dims, keep);
  Instruction* exp = b.Exp(b.Sub(x, max));
  Instruction* sum = b.Broadcast(b.Reduce(exp, {last}, ReduceKind::kAdd), dims, keep);
  return b.Div(exp, sum);
}

Instruction* AddOneHot(Builder& b, Instruction* index, int64_t depth) {
  std::vector<int64_t> dims = index->shape.dims;
  dims.push_back(depth);
  Instruction* iota = b.Iota(Shape(index->shape.dtype, dims), index->shape.rank());
  Instruction* wide = b.Broadcast(index, dims, FirstDims(index->shape.rank()));
  return PredicateToF32(b, b.Compare(wide, iota, Comparison::kEq));
}

Top2GatingResult AddTop2Gating(Builder& b, Instruction* gates, const Top2GatingOptions& options) {
  if (gates->shape.rank() != 3 || gates->shape.dtype != DType::kF32) {
    throw Error("top-2 gating: gates must be f32[G,S,E], got " + gates->shape.ToString());
  }
  const int64_t num_experts = gates->shape.dims[2];
  if (num_experts < 2) {
    throw Error("top-2 gating needs at least 2 experts, got " + std::to_string(num_experts));
  }
  if (options.capacity < 1) {
    throw Error("top-2 gating: capacity must be >= 1, got " + std::to_string(options.capacity));
  }
  const std::vector<int64_t> gse = gates->shape.dims;  // [G,S,E]
  const std::vector<int64_t> gs = LeadingDims(gates);  // [G,S]
  const std::vector<int64_t> gs_dims = {0, 1};         // [G,S] inside [G,S,E]
  const double capacity = static_cast<double>(options.capacity);

  // The whole of Algorithm 1 after the softmax is the paper's "gate cumsum" category (the
  // top-2 selection, cumsum, masks and one-hots); its "gate einsums" are the gating logits with
  // their softmax and the dispatch and combine einsums, built by the callers.
  Builder::ScopeGuard scope(b, std::string(kScopeGateCumsum));
  Instruction *mask_1, *mask_2, *w1, *w2;
  {
    // Top-1 and top-2 experts; e2 is the argmax over the gates with e1 zeroed. g2 is read from
    // those same zeroed gates, so a degenerate e2 == e1 (all other gates 0) gets g2 = 0 and is
    // never taken by the random policy below.
    mask_1 = Named(AddOneHot(b, b.Argmax(gates, 2), num_experts), "top1_mask");
    Instruction* without_top_1 = b.Mul(gates, b.Sub(F32Scalar(b, 1, gse), mask_1));
    mask_2 = AddOneHot(b, b.Argmax(without_top_1, 2), num_experts);
    Instruction* g1 = b.Reduce(b.Mul(gates, mask_1), {2}, ReduceKind::kAdd);
    Instruction* g2 = b.Reduce(b.Mul(without_top_1, mask_2), {2}, ReduceKind::kAdd);
    // g1 >= 1/E > 0 for a softmax, so the sum never vanishes.
    Instruction* denom = b.Add(g1, g2);
    w1 = Named(b.Div(g1, denom), "top1_weight");
    w2 = Named(b.Div(g2, denom), "top2_weight");
    // Random second-expert policy: keep e2 with probability min(1, 2 * w2).
    Instruction* uniform = b.RandomUniform(Shape(DType::kF32, gs), options.seed);
    Named(uniform, "second_expert_uniform");
    Instruction* sampled =
        PredicateToF32(b, b.Compare(b.Mul(F32Scalar(b, 2, gs), w2), uniform, Comparison::kGt));
    mask_2 = Named(b.Mul(mask_2, b.Broadcast(sampled, gse, gs_dims)), "top2_mask");
  }
  Instruction *pos_1, *pos_2;
  {
    Instruction* cap = F32Scalar(b, capacity, gse);
    // Slot of each token in its top-1 expert: how many earlier tokens of the group chose it.
    Instruction* pos_1_e = b.Mul(b.Cumsum(mask_1, 1, /*exclusive=*/true), mask_1);
    mask_1 = b.Mul(mask_1, PredicateToF32(b, b.Compare(pos_1_e, cap, Comparison::kLt)));
    // Top-2 slots come after every top-1 token the expert kept.
    Instruction* kept_1 = b.Broadcast(b.Reduce(mask_1, {1}, ReduceKind::kAdd), gse, {0, 2});
    Instruction* pos_2_e = b.Mul(b.Add(b.Cumsum(mask_2, 1, /*exclusive=*/true), kept_1), mask_2);
    mask_2 = b.Mul(mask_2, PredicateToF32(b, b.Compare(pos_2_e, cap, Comparison::kLt)));
    // [G,S]: the slot (>= C when dropped; its one-hot over C is then all zeros).
    pos_1 = Named(b.Reduce(pos_1_e, {2}, ReduceKind::kAdd), "top1_position");
    pos_2 = Named(b.Reduce(pos_2_e, {2}, ReduceKind::kAdd), "top2_position");
  }
  Top2GatingResult r;
  if (options.aux_loss) {
    // mean_G 1/E sum_E (c_e / S) (sum_S gates / S) = sum_{G,E} c_e sum_S gates / (G E S^2).
    const int64_t g = gse[0], s = gse[1], e = gse[2];
    Instruction* counts = b.Reduce(mask_1, {1}, ReduceKind::kAdd);        // [G,E]
    Instruction* gate_sums = b.Reduce(gates, {1}, ReduceKind::kAdd);      // [G,E]
    Instruction* total = b.Reduce(b.Mul(counts, gate_sums), {0, 1}, ReduceKind::kAdd);
    const double scale = static_cast<double>(g) * static_cast<double>(e) *
                         static_cast<double>(s) * static_cast<double>(s);
    r.aux_loss = Named(b.Div(total, b.ConstantScalar(DType::kF32, scale)), "aux_loss");
  }
  auto part = [&](Instruction* weight, Instruction* mask, Instruction* pos) {
    Instruction* weighted = b.Mul(b.Broadcast(weight, gse, gs_dims), mask);  // [G,S,E]
    return b.Einsum("GSE,GSC->GSEC", weighted, AddOneHot(b, pos, options.capacity));
  };
  Instruction* part_1 = part(w1, mask_1, pos_1);
  Instruction* part_2 = part(w2, mask_2, pos_2);
  r.combine_weights = b.Add(part_1, part_2);
  Instruction* zeros = F32Scalar(b, 0, r.combine_weights->shape.dims);
  r.dispatch_mask = b.Compare(r.combine_weights, zeros, Comparison::kGt);
  r.dispatch_mask = b.Convert(r.dispatch_mask, options.dtype);
  if (options.dtype != DType::kF32) {
    r.combine_weights = b.Convert(r.combine_weights, options.dtype);
  }
  return r;
}

}  // namespace podsim::models
