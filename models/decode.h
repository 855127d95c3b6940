#pragma once
// Inference of the GShard MoE Transformer (models/gshard_model.h): the two programs a
// translation server runs, as IR modules with global shapes and the paper's annotations, ready
// for the SPMD partitioner and the simulator.
//
//   DecodeConfig c;  c.model = PresetModelConfig("128E,12L");  c.batch = 64;  c.beam = 4;
//   c.model.layer.num_devices = 128;
//   std::unique_ptr<ir::Module> prefill = BuildPrefill(c);     // once per batch
//   std::unique_ptr<ir::Module> step = BuildDecodeStep(c);     // once per target token
//
// Batching: the batch's B sentences are spread over the D partitions, b = ceil(B / D) per
// partition (static shapes: the batch is padded to b x D sentences; a partition with padding
// computes on it all the same). One group per partition (G = D), as in training.
//
// Prefill: the encoder on b x Ls source tokens per group (Ls = source_len, one attention
// sequence per sentence), then every decoder layer's cross-attention keys and values of the
// encoder output, which the decode steps read: root tuple(cross keys and values, one
// [R, G, b, Ls, N, K] stack per layer of a loop iteration and each of the two).
//
// Decode step: flat beam search (the paper's Appendix A.1). A sentence's W hypotheses are one
// flat sequence of W x T positions (T = max_len): step t writes the new key and value of
// hypothesis w at flat position t x W + w of its sentence's self-attention cache, and each
// hypothesis attends over the whole flat sequence under a mask that keeps its own prefix (the
// `mask` parameter, maintained by the search: 0 where hypothesis w may attend, -1e9 elsewhere).
// So no key/value reordering follows a beam expansion; the attention is W times longer
// instead, and its cost does not depend on t (static shapes: the cache has all W x T positions
// from the start). The step runs the decoder's layer loop on the b x W newest tokens of each
// group (S = b x W tokens per group, an MoE layer's capacity C = ceil(2S / E): a handful of
// tokens fill a whole [E, G, C, M] dispatch, so the AllToAlls are sized by E, not by the
// batch), the output softmax over the target vocabulary V, and the beam update: each sentence's
// W x V candidates scored by hypothesis score + log-probability, the W best kept (top-k),
// each with its parent hypothesis (index / V) and token (index mod V).
//
// Decode step parameters, in order: tokens s32[G, bW] (each hypothesis's last token), position
// s32[] (t, in [0, T)), scores f32[G, b, W], mask f32[G, b, W, WT], target_embedding [V, M],
// the decoder's stacks as the training model names them ("decoder.<stack>", [R, ...]),
// decoder.ln_final_scale / _bias, then per layer p of a loop iteration:
// "decoder.l<p>.self_key", "decoder.l<p>.self_value" [R, G, b, WT, N, K] (the self-attention
// cache) and "decoder.l<p>.cross_key", "decoder.l<p>.cross_value" [R, G, b, Ls, N, K] (from
// prefill). Root: tuple(new scores f32[G, b, W], parents s32[G, b, W], tokens s32[G, b, W],
// the updated self caches in parameter order), each updated cache donated (ir::OutputAlias)
// to its parameter: the step writes W positions of it in place.
// Activations and caches are in the model's activation dtype, the softmaxes in f32, no dropout.
// Scopes: the training model's categories, the cache writes "kv_cache", the beam update
// "beam_search".

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "ir/module.h"
#include "models/gshard_model.h"

namespace podsim::models {

struct DecodeConfig {
  GShardModelConfig model;   // sizes; model.layer.num_devices is D; its G, S, C are replaced
  int64_t batch = 8;         // B, sentences decoded together
  int64_t beam = 4;          // W, hypotheses per sentence
  int64_t source_len = 128;  // Ls, source tokens per sentence (padded)
  int64_t max_len = 128;     // T, target tokens per hypothesis: the self-attention cache length

  int64_t partitions() const { return model.layer.num_devices; }
  int64_t SentencesPerGroup() const;                                             // b = ceil(B / D)
  int64_t HypothesesPerGroup() const { return SentencesPerGroup() * beam; }      // S of a step
  int64_t Iterations() const { return model.num_layers / 2 / model.moe_every; }  // R

  // `base` with what a JSON object gives: "batch", "beam", "source_len", "max_len".
  // ConfigErrors name `path`.key.
  static DecodeConfig FromJson(const nlohmann::json& json, const std::string& path,
                               DecodeConfig base);
};

// Throws podsim::Error naming the field for a bad size (the model's errors included).
void ValidateDecodeConfig(const DecodeConfig& config);

// The model configs the two programs are built from: the encoder's (G = D, S = b x Ls,
// one attention sequence per sentence) and the decode step's layer (S = b x W), each with the
// default capacity for its S and no dropout.
GShardModelConfig PrefillModelConfig(const DecodeConfig& config);
GShardModelConfig DecodeModelConfig(const DecodeConfig& config);

// Per partition, bytes: the self-attention cache (keys and values, every decoder layer, W x T
// positions per sentence) and the cross-attention cache (Ls positions per sentence).
struct KvCacheBytes {
  int64_t self = 0;
  int64_t cross = 0;
  int64_t total() const { return self + cross; }
};
KvCacheBytes KvCacheBytesPerPartition(const DecodeConfig& config);

// The programs above, verified.
std::unique_ptr<ir::Module> BuildPrefill(const DecodeConfig& config);
std::unique_ptr<ir::Module> BuildDecodeStep(const DecodeConfig& config);

}  // namespace podsim::models
