#pragma once
// Top-2 gating of GShard (paper Algorithm 1) written as whole-tensor IR ops over groups of
// tokens, as Lingvo's Top2Gating does: no loops over tokens, so the IR size depends on no
// dimension and the SPMD partitioner sees only einsums, reductions and elementwise ops.
//
// From gates [G,S,E] (softmax over E) and capacity C per expert per group:
//   top-1     e1 = argmax_e gates, mask_1 = one_hot(e1)                            [G,S,E]
//   top-2     e2 = argmax_e gates * (1 - mask_1), mask_2 = one_hot(e2)
//   weights   w1 = g1 / (g1 + g2), w2 = g2 / (g1 + g2)    (g_k = the gate of e_k)   [G,S]
//   random    mask_2 *= (2 * w2 > uniform)     (uniform in [0,1) from random-uniform, `seed`)
//   capacity  pos_1 = exclusive_cumsum_S(mask_1); mask_1 *= (pos_1 < C)
//             pos_2 = exclusive_cumsum_S(mask_2) + sum_S(mask_1); mask_2 *= (pos_2 < C)
//             So top-1 choices of a group take the first slots of an expert in token order,
//             then its top-2 choices; a token past the capacity of an expert is dropped there.
//   combine   combine_weights = einsum("GSE,GSC->GSEC", w1 * mask_1, one_hot(pos_1, C))
//                             + einsum("GSE,GSC->GSEC", w2 * mask_2, one_hot(pos_2, C))
//   dispatch  dispatch_mask = (combine_weights > 0)                                 [G,S,E,C]
// Every token goes to at most 2 experts, every (group, expert) slot holds at most one token, the
// combine weights of a token sum to at most 1, and a token dropped by both experts has all-zero
// combine weights (it passes through the MoE layer's residual unchanged). w1 >= 1/2 > 0 and a
// second expert is taken only when w2 > uniform / 2 >= 0, so dispatch_mask is exactly the set of
// slots given a token.
//   aux loss  (training only, when options.aux_loss) Algorithm 1's load-balancing loss, per
//             group l_aux = 1/E sum_e (c_e / S) m_e with c_e = sum_S(mask_1) the tokens kept by
//             their top-1 expert e and m_e = mean_S(gates[.., e]); averaged over the G groups.
//             Only m_e carries a gradient (c_e comes from argmax and compares).

#include <cstdint>

#include "ir/builder.h"
#include "ir/dtype.h"
#include "ir/instruction.h"

namespace podsim::models {

struct Top2GatingOptions {
  // C: slots per expert per group; >= 1.
  int64_t capacity = 1;
  // Seed of the random-uniform op of the second-expert policy.
  uint64_t seed = 0;
  // Element type of combine_weights and dispatch_mask; the gating itself runs in f32 (positions
  // and counts are exact integers there; bf16 would round counts above 256).
  ir::DType dtype = ir::DType::kF32;
  // Also build the auxiliary load-balancing loss (Top2GatingResult::aux_loss).
  bool aux_loss = false;
};

struct Top2GatingResult {
  ir::Instruction* combine_weights = nullptr;  // [G,S,E,C], dtype
  ir::Instruction* dispatch_mask = nullptr;    // [G,S,E,C], dtype, 0 or 1
  ir::Instruction* aux_loss = nullptr;         // f32[], when options.aux_loss
};

// Builds the gating above from `gates` (f32 [G,S,E], E >= 2). The ops up to the random policy
// and the combine/dispatch construction are scoped "gate_einsums", the cumsum positions and
// capacity masks "gate_cumsum" (the builder's scope is restored afterwards).
Top2GatingResult AddTop2Gating(ir::Builder& b, ir::Instruction* gates,
                               const Top2GatingOptions& options);

// Softmax of `x` over its last dim: exp(x - max) / sum, in the builder's current scope.
ir::Instruction* AddSoftmaxLastDim(ir::Builder& b, ir::Instruction* x);

// one_hot(index, depth) of an s32 or f32 `index` [..] as f32 [.., depth]: 1 where the new last
// dim's position equals index, else 0 (all zeros when index is outside [0, depth)).
ir::Instruction* AddOneHot(ir::Builder& b, ir::Instruction* index, int64_t depth);

}  // namespace podsim::models
