#pragma once
// A loss over the MoE layer pair (models/moe_transformer.h), so the layer pair can be trained:
// token embeddings in, a softmax over the vocabulary out, with the embedding table shared by the
// input lookup and the output projection (as the paper's model shares its softmax weights).
//
//   tokens, targets s32[G,S]     Split(dim 0 = G, D)
//   embedding [V,M]              Replicate
//   x      = gather(embedding, tokens)                                  [G,S,M]   "embedding"
//   out    = layer pair (attention, FFN, attention, MoE FFN) of x       [G,S,M]
//   logits = f32(einsum("GSM,VM->GSV", out, embedding))                           "softmax"
//   nll    = mean over G,S of logsumexp_V(logits) - logits[targets]               "softmax"
//   loss   = nll + aux_loss_coefficient * aux_loss         (aux_loss: models/top2_gating.h)
// The entry root is `loss` (f32[]); parameters: tokens, targets, embedding, then the layer
// pair's in BuildMoeLayerPair's order (without x).

#include <cstdint>
#include <memory>

#include "ir/builder.h"
#include "ir/module.h"
#include "models/moe_transformer.h"

namespace podsim::models {

struct MoeLossConfig {
  int64_t vocab_size = 32;  // V; the paper's target vocabulary is 32,000
  // k of the paper's L = l_nll + k * l_aux. The paper does not state it; Lingvo's GShard
  // configurations use 1e-2.
  double aux_loss_coefficient = 1e-2;
};

// Mean over every label of -log softmax(logits)[label]: logits f32 [.., V], labels s32 [..]
// (a label outside [0, V) contributes logsumexp alone). Built in the builder's scope.
ir::Instruction* AddSoftmaxCrossEntropy(ir::Builder& b, ir::Instruction* logits,
                                        ir::Instruction* labels);

// The module above, verified. Throws podsim::Error for a bad config.
std::unique_ptr<ir::Module> BuildMoeLayerPairLoss(const MoeLayerConfig& config,
                                                  const MoeLossConfig& loss);

}  // namespace podsim::models
