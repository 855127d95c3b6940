#pragma once
// The whole GShard model (paper section 2, Lingvo's MoE Transformer) as one IR module whose root
// is the training loss: an encoder-decoder Transformer in which every `moe_every`-th FFN, in the
// encoder and in the decoder, is an MoE layer (Algorithm 2).
//
//   GShardModelConfig c = ToyModelConfig(/*num_devices=*/4);
//   std::set<std::string> stacked;
//   std::unique_ptr<ir::Module> loss = BuildGShardModelLoss(c, &stacked);
//   TrainingStep step =
//       BuildTrainingStep(*loss, FloatParameters(*loss), {}, StepOptions(4, stacked));
//
// Layers (pre-LayerNorm, as Lingvo's Transformer layers), per group of S tokens cut into
// sequences of seq_len:
//   encoder layer  x = x + Dropout(SelfAttention(LN(x)))
//                  x = x + Dropout(Ffn(LN(x)))          or  x = x + Dropout(MoeFfn(LN(x)))
//   decoder layer  y = y + Dropout(CausalSelfAttention(LN(y)))
//                  y = y + Dropout(Attention(LN(y), over the encoder output))
//                  y = y + Dropout(Ffn(LN(y)))          or  y = y + Dropout(MoeFfn(LN(y)))
// with Ffn(h) = Dropout(relu(h wi)) wo: dropout where Lingvo's GShard builder puts it, on every
// sublayer's output and on the dense FFN's hidden activations, none inside the experts (its
// default moe_dropout_rate is 0). Each side is L/2 layers, built as a counted loop of
// (L/2)/moe_every iterations over stacked weights [R, ...] (R = iterations): one iteration is
// moe_every layers, the last of them MoE. The program's size does not depend on L.
// The loss: source tokens -> source embedding -> dropout -> encoder -> LN; target inputs ->
// target embedding -> dropout -> decoder -> LN -> logits through the target embedding (the
// shared softmax weights) -> mean softmax cross-entropy over all target tokens + k x the sum over
// MoE layers of Algorithm 1's auxiliary loss.
//
// Element types: weights, LayerNorm and the loss in layer.weight_dtype (f32 in the paper), cast to
// the activation dtype (layer.dtype) where a layer uses them; activations, attention and dispatch /
// combine tensors in layer.dtype; the gating softmax in f32 (models/moe_transformer.h).
//
// Entry parameters, in order: source_tokens, target_inputs, targets (s32 [G,S]; tokens must be
// in [0, vocab), which `range` states for random arguments), source_embedding [Vs,M],
// target_embedding [Vt,M], then per side ("encoder", "decoder") its stacked weights, named
// "<side>.l<p>.<weight>" for layer p of an iteration (ln_attention_scale / _bias,
// attention_wq / wk / wv / wo, in the decoder also ln_cross_* and cross_w*, ln_ffn_*, and
// ffn_wi / ffn_wo or wg / wi / wo), then "<side>.ln_final_scale" / "_bias".
//
// Annotations (when layer.annotate), on the layer's mesh (models/layer_mesh.h; the paper's is
// every device on the expert axis): tokens and activations split on G over data x expert, expert
// weights (and their stacks) split on E over expert and on H over model, dispatched expert
// inputs split on E over expert and G over data, attention weights split on heads and dense FFN
// weights on H over model, everything else replicated.
// Scopes: Figure 8's categories (models/scopes.h) for the layers, a sublayer's LayerNorm,
// dropout and residual in its sublayer's category; "embedding" for the lookups, "softmax" for
// the final LayerNorms, logits and loss.

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/dtype.h"
#include "ir/module.h"
#include "models/moe_transformer.h"

namespace podsim::models {

struct GShardModelConfig {
  // Sizes of one layer: G, S, M, H, E, C, N, K, seq_len, activation dtype, annotations, D, seed.
  // moe_layer_attention is not used (every layer here has its attention).
  MoeLayerConfig layer;
  int64_t num_layers = 12;  // L, encoder + decoder (L/2 each; the paper's 12L = 6 + 6)
  int64_t moe_every = 2;    // every moe_every-th FFN is MoE; divides L/2 (paper: 2)
  int64_t source_vocab = 64000;
  int64_t target_vocab = 32000;
  double dropout = 0.1;  // residual and embedding dropout rate, in [0, 1)
  double aux_loss_coefficient = 1e-2;
  // Gradient accumulation: the batch of num_groups groups runs as micro_batches micro-batches of
  // num_groups / micro_batches groups, one after another, and the optimizer updates once with
  // their mean gradient (TrainingStepOptions::micro_batches). It divides num_groups.
  int64_t micro_batches = 1;

  // `base` with what a JSON object gives, in one object: "preset" (a GShardPresets() name,
  // replacing `base` first), num_layers, moe_every, source_vocab, target_vocab, dropout,
  // micro_batches,
  // experts, groups or batch_tokens (groups = batch_tokens / tokens_per_group,
  // which must divide it), capacity_factor (C = ceil(factor * S / E); not with capacity), and
  // the layer's keys (MoeLayerConfig::FromJson). Unknown keys and bad values are ConfigErrors
  // naming `path`.key. num_devices is left to where the model runs.
  static GShardModelConfig FromJson(const nlohmann::json& json, const std::string& path,
                                    GShardModelConfig base);
  nlohmann::json ToJson() const;
};

// MoE(E experts, L layers) at the paper's sizes on D = E cores, one group of 2048 tokens per
// core, bf16 activations and f32 weights (see docs/training.md for why bf16).
GShardModelConfig PaperModelConfig(int64_t num_experts, int64_t num_layers);

// The paper's configurations (Tables 1 and 3): "128E,12L", "128E,36L", "512E,12L", "512E,36L",
// "2048E,12L", "2048E,24L", "2048E,36L", "2048E,60L". Each runs on E cores (one expert per core)
// with Table 3's batch: 2^20 tokens for 128E and 512E, 2^22 for 2048E (the paper's "1M" and
// "4M"; powers of two, since 2,048-token groups must divide them), so G = batch / 2048 groups:
// 4 per core at 128E, 1 per core otherwise.
struct GShardPreset {
  std::string name;
  int64_t experts = 0;
  int64_t layers = 0;
  int64_t batch_tokens = 0;
};
const std::vector<GShardPreset>& GShardPresets();
// The preset's config (PaperModelConfig with its batch); throws podsim::Error listing the
// presets when `name` is none of them.
GShardModelConfig PresetModelConfig(const std::string& name);

// Parameter counts of a loss module (or any module): elements of its float entry parameters,
// by kind (split over some mesh axis, i.e. the expert weights, or replicated) and by dtype.
struct ParameterCount {
  int64_t total = 0;
  int64_t split = 0;       // parameters with a sharding that splits a dim (expert weights)
  int64_t replicated = 0;  // the rest
  int64_t f32 = 0;
  int64_t bf16 = 0;
  int64_t per_device_bytes = 0;  // each device's shards: bytes / (tiles of its sharding)
};
ParameterCount CountParameters(const ir::Module& module);

// The encoder alone, verified: source_tokens [G,S] -> source_embedding -> dropout -> encoder
// layer loop -> final LayerNorm; root "encoded" [G,S,M]. Parameters and annotations as in the
// loss module (source_tokens, source_embedding, the encoder's stacks, its final LayerNorm).
// What an encoder-decoder's inference runs once per batch (models/decode.h).
std::unique_ptr<ir::Module> BuildGShardEncoder(const GShardModelConfig& config);

// A toy size on `num_devices` partitions for tests and demos: 2 layers (1 + 1, both MoE),
// G = E = max(2, D), S = 8, M = 16, H = 32, 2 heads of 8, seq_len 4, vocabularies 16 and 12, f32.
GShardModelConfig ToyModelConfig(int64_t num_devices);

// One stacked weight of a side's layer loop ("<side>.<name>" in the modules): [R, dims...] with
// R = the loop's iterations, split on its expert dim (dims[0] = E) when `expert`.
struct LayerStack {
  std::string name;           // "l1.wi"
  std::vector<int64_t> dims;  // one layer's shape
  bool expert = false;
  int64_t model_dim = -1;  // the dim of `dims` split over the model axis (-1: none)
};
// The stacks of the encoder's (decoder = false) or the decoder's layer loop, in parameter order.
std::vector<LayerStack> SideStacks(const GShardModelConfig& config, bool decoder);
// The entry parameter `number` holding `s` stacked over `iterations` layers ([iterations,
// s.dims...] in the weight dtype), named `name`, in the projections' or (expert weights) the
// MoE FFN's scope, annotated on the config's mesh (models/layer_mesh.h): its expert dim over the
// expert axis, its model_dim over the model axis, replicated over the rest.
ir::Instruction* StackParameter(ir::Builder& b, int64_t number, const LayerStack& s,
                                int64_t iterations, const MoeLayerConfig& config,
                                const std::string& name);
// Inside a layer loop's body: row `layer` (s32 scalar) of `stack` ([R, s.dims...]) as one
// layer's weight of shape s.dims, named s.name, cast to the activation dtype unless `cast` is
// false (a LayerNorm's scale and bias stay in the weight dtype), and annotated replicated
// unless it is an expert weight that the config splits over the experts.
ir::Instruction* LayerWeight(ir::Builder& b, ir::Instruction* stack, ir::Instruction* layer,
                             const LayerStack& s, const MoeLayerConfig& config, bool cast);

// Throws podsim::Error naming the field ("model.moe_every: ...") for a bad size.
void ValidateModelConfig(const GShardModelConfig& config);

// The loss module above, verified, for one micro-batch: num_groups / micro_batches groups (the
// training step, built with TrainingStepOptions::micro_batches = config.micro_batches, runs it
// once per micro-batch). Root: f32[] loss. `layer_stacked`, when given, receives the names of
// the stacked weights (dim 0 indexes the layer loop's iterations), for BuildTrainingStep.
std::unique_ptr<ir::Module> BuildGShardModelLoss(const GShardModelConfig& config,
                                                 std::set<std::string>* layer_stacked = nullptr);

}  // namespace podsim::models
