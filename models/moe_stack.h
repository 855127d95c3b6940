#pragma once
// A deep MoE Transformer forward stack for the SPMD-versus-MPMD comparison (GShard section 3.3's
// O(1) compile-time claim): `num_layer_pairs` repetitions of models::BuildMoeLayerPair's layer
// pair (a Transformer layer, then an MoE layer), each pair with its own weights. 12 pairs are
// the 24-layer stack of experiments/spmd_vs_mpmd.json.
//
//   x [G,S,M]                                   Split(dim 0 = G, D)
//   repeat num_layer_pairs times:
//     y = x + SelfAttention(x); z = y + Ffn(y)           (Transformer layer)
//     u = z + SelfAttention(z); x = u + MoeFfn(u)        (MoE layer, Algorithm 2)
//   root: x
//
// Annotations are the layer pair's (models/moe_transformer.h): inputs split on G, gating
// weights replicated, dispatched expert inputs split on E, attention / FFN weights replicated,
// and (annotate_experts) expert weights split on E.

#include <cstdint>
#include <memory>

#include "ir/module.h"
#include "models/moe_transformer.h"

namespace podsim::models {

// The stack, verified. Throws podsim::Error for a bad config (models::ValidateMoeConfig) or
// num_layer_pairs < 1.
std::unique_ptr<ir::Module> BuildMoeStack(const MoeLayerConfig& config,
                                          int64_t num_layer_pairs);

}  // namespace podsim::models
