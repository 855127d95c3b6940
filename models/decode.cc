#include "models/decode.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "models/moe_transformer.h"
#include "models/naming.h"
#include "models/scopes.h"
#include "models/top2_gating.h"
#include "partitioner/annotations.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::Shape;

int64_t DecodeConfig::SentencesPerGroup() const {
  const int64_t d = partitions();
  return d > 0 ? (batch + d - 1) / d : 0;
}

DecodeConfig DecodeConfig::FromJson(const nlohmann::json& json, const std::string& path,
                                    DecodeConfig base) {
  JsonReader r(json, path);
  base.batch = r.Int("batch", base.batch, Limit::Between(1, 1 << 24));
  base.beam = r.Int("beam", base.beam, Limit::Between(1, 1024));
  base.source_len = r.Int("source_len", base.source_len, Limit::Between(1, 1 << 20));
  base.max_len = r.Int("max_len", base.max_len, Limit::Between(1, 1 << 20));
  r.Finish();
  return base;
}

namespace {

constexpr const char* kScopeKvCache = "kv_cache";
constexpr const char* kScopeBeamSearch = "beam_search";

// The model config with G = D groups of `tokens` tokens in sequences of `seq_len`, the default
// capacity for them and no dropout (inference).
GShardModelConfig Sized(const DecodeConfig& c, int64_t tokens, int64_t seq_len) {
  GShardModelConfig m = c.model;
  m.layer.num_groups = c.partitions();
  m.layer.tokens_per_group = tokens;
  m.layer.seq_len = seq_len;
  m.layer.capacity = 0;  // DefaultCapacity(S, E): 2S/E rounded up, at least 1
  m.layer.dropout = 0;
  m.dropout = 0;
  return m;
}

}  // namespace

void ValidateDecodeConfig(const DecodeConfig& c) {
  auto fail = [](const std::string& field, const std::string& why) {
    throw Error("inference." + field + ": " + why);
  };
  if (c.partitions() < 1) fail("partitions", "must be >= 1");
  // The decode step keeps the paper's layout (groups and experts over every partition): its
  // caches are split by group only.
  if (c.model.layer.model_parallel != 1 || c.model.layer.expert_parallel != 0) {
    fail("model",
         "model_parallel and expert_parallel are training-step layouts; inference runs "
         "the paper's (groups and experts split over every partition)");
  }
  if (c.model.micro_batches != 1) {
    fail("model", "micro_batches is a training-step setting (gradient accumulation)");
  }
  if (c.batch < 1) fail("batch", "must be >= 1, got " + std::to_string(c.batch));
  if (c.beam < 1) fail("beam", "must be >= 1, got " + std::to_string(c.beam));
  if (c.source_len < 1) fail("source_len", "must be >= 1, got " + std::to_string(c.source_len));
  if (c.max_len < 1) fail("max_len", "must be >= 1, got " + std::to_string(c.max_len));
  // The flat sequence and the candidates index s32 tensors; the token counts stay far below
  // int64 range when these hold.
  const double flat = static_cast<double>(c.beam) * static_cast<double>(c.max_len);
  if (flat > (1 << 30)) fail("max_len", "beam x max_len above 2^30 flat positions");
  if (static_cast<double>(c.beam) * static_cast<double>(c.model.target_vocab) > (1u << 31) - 1) {
    fail("beam", "beam x target_vocab above the s32 range of a candidate index");
  }
  const double tokens = static_cast<double>(c.SentencesPerGroup()) *
                        static_cast<double>(std::max(c.source_len, c.beam * c.max_len));
  if (tokens > (1 << 30)) fail("batch", "more than 2^30 tokens per group");
  // The caches' bytes (KvCacheBytesPerPartition) must be int64 values, with room to sum them.
  const MoeLayerConfig& l = c.model.layer;
  const double per_position = 2.0 * static_cast<double>(l.num_heads) *
                              static_cast<double>(l.head_dim) * 4.0 *
                              static_cast<double>(std::max<int64_t>(c.model.num_layers, 1));
  if (tokens * static_cast<double>(c.partitions()) * per_position > 0x1p60) {
    fail("batch", "the KV caches would exceed 2^60 bytes");
  }
  ValidateModelConfig(PrefillModelConfig(c));
  ValidateModelConfig(DecodeModelConfig(c));
}

GShardModelConfig PrefillModelConfig(const DecodeConfig& c) {
  return Sized(c, c.SentencesPerGroup() * c.source_len, c.source_len);
}

GShardModelConfig DecodeModelConfig(const DecodeConfig& c) {
  const int64_t s = c.HypothesesPerGroup();
  return Sized(c, s, s);
}

KvCacheBytes KvCacheBytesPerPartition(const DecodeConfig& c) {
  const MoeLayerConfig& l = c.model.layer;
  // Keys and values, N x K each per position, for every decoder layer (L/2 of them).
  const int64_t per_position =
      2 * l.num_heads * l.head_dim * ir::ByteWidth(l.dtype) * (c.model.num_layers / 2);
  const int64_t b = c.SentencesPerGroup();
  return {b * c.beam * c.max_len * per_position, b * c.source_len * per_position};
}

std::unique_ptr<ir::Module> BuildPrefill(const DecodeConfig& c) {
  ValidateDecodeConfig(c);
  const GShardModelConfig m = PrefillModelConfig(c);
  const MoeLayerConfig& l = m.layer;
  std::unique_ptr<ir::Module> module = BuildGShardEncoder(m);
  ir::Computation* entry = module->entry();
  Instruction* encoded = entry->root();
  Builder b(entry);
  int64_t next = static_cast<int64_t>(entry->parameters().size());
  const int64_t r = c.Iterations(), g = l.num_groups, sb = c.SentencesPerGroup();
  std::vector<Instruction*> caches;
  Builder::ScopeGuard scope(b, std::string(kScopeKvCache));
  for (int64_t p = 0; p < m.moe_every; ++p) {
    for (const char* which : {"key", "value"}) {
      const std::string name = "decoder.l" + std::to_string(p) + ".cross_w" + which[0];
      Instruction* w =
          b.Parameter(next++, Shape(l.weight_dtype, {r, l.d_model, l.num_heads, l.head_dim}), name);
      if (l.annotate) partitioner::Replicate(w);
      if (w->shape.dtype != l.dtype) w = b.Convert(w, l.dtype);
      // Every layer's projection of the encoder output at once: R is a free dim of the weights.
      Instruction* kv = b.Einsum("GSM,RMNK->RGSNK", encoded, w);
      kv = b.Reshape(kv, {r, g, sb, c.source_len, l.num_heads, l.head_dim});
      if (l.annotate) partitioner::Split(kv, 1, l.num_devices);
      caches.push_back(Named(kv, "decoder.l" + std::to_string(p) + ".cross_" + which));
    }
  }
  entry->set_root(b.Tuple(caches));
  ir::Verify(*module);
  return module;
}

namespace {

// Builds the decode step (see decode.h).
class DecodeBuilder {
 public:
  DecodeBuilder(const DecodeConfig& c, ir::Module* module)
      : c_(c),
        m_(DecodeModelConfig(c)),
        l_(m_.layer),
        module_(module),
        b_(module->AddComputation("main", /*is_entry=*/true)) {}

  void Build();

 private:
  Instruction* Param(const Shape& shape, const std::string& name) {
    return b_.Parameter(next_++, shape, name);
  }
  Instruction* SplitGroups(Instruction* x, int64_t dim = 0) {
    return l_.annotate ? partitioner::Split(x, dim, l_.num_devices) : x;
  }
  Instruction* Replicated(Instruction* x) { return l_.annotate ? partitioner::Replicate(x) : x; }
  // The self or cross cache stack of layer p: [R, G, b, positions, N, K].
  Shape CacheShape(int64_t positions) const {
    return Shape(l_.dtype, {c_.Iterations(), l_.num_groups, c_.SentencesPerGroup(), positions,
                            l_.num_heads, l_.head_dim});
  }
  // Multi-head attention of the group's hypotheses on one layer's keys and values:
  // q [G, b, W, N, K] over keys / values [G, b, P, N, K], plus `mask` [G, b, W, P] if given.
  // Returns the context [G, bW, N, K].
  Instruction* Attend(Builder& bb, Instruction* q, Instruction* keys, Instruction* values,
                      Instruction* mask);

  const DecodeConfig& c_;
  const GShardModelConfig m_;
  const MoeLayerConfig& l_;
  ir::Module* module_;
  Builder b_;
  int64_t next_ = 0;
};

Instruction* DecodeBuilder::Attend(Builder& bb, Instruction* q, Instruction* keys,
                                   Instruction* values, Instruction* mask) {
  Builder::ScopeGuard scope(bb, std::string(kScopeAttention));
  const DType dtype = q->shape.dtype;
  Instruction* scale = bb.ConstantScalar(dtype, 1.0 / std::sqrt(static_cast<double>(l_.head_dim)));
  q = bb.Mul(q, bb.BroadcastScalar(scale, q->shape.dims));
  Instruction* logits = bb.Einsum("GBWNK,GBPNK->GBNWP", q, keys);
  if (mask != nullptr) {
    Instruction* m = mask->shape.dtype == dtype ? mask : bb.Convert(mask, dtype);
    logits = bb.Add(logits, bb.Broadcast(m, logits->shape.dims, {0, 1, 3, 4}));
  }
  Instruction* probs = Named(AddSoftmaxLastDim(bb, logits), "attention_probs");
  Instruction* context = bb.Einsum("GBNWP,GBPNK->GBWNK", probs, values);
  return bb.Reshape(context, {l_.num_groups, c_.HypothesesPerGroup(), l_.num_heads, l_.head_dim});
}

void DecodeBuilder::Build() {
  const int64_t g = l_.num_groups, sb = c_.SentencesPerGroup(), w = c_.beam;
  const int64_t s = c_.HypothesesPerGroup(), mm = l_.d_model;
  const int64_t n = l_.num_heads, k = l_.head_dim, flat = w * c_.max_len;
  const int64_t v = m_.target_vocab, r = c_.Iterations();
  Instruction *tokens, *position, *scores, *mask, *table;
  {
    Builder::ScopeGuard scope(b_, "embedding");
    tokens = SplitGroups(Param(Shape(DType::kS32, {g, s}), "tokens"));
    tokens->argument_range = {0, static_cast<double>(v)};
    position = Param(Shape(DType::kS32, {}), "position");
    position->argument_range = {0, static_cast<double>(c_.max_len)};
    scores = SplitGroups(Param(Shape(DType::kF32, {g, sb, w}), "scores"));
    mask = SplitGroups(Param(Shape(DType::kF32, {g, sb, w, flat}), "mask"));
    table = Replicated(Param(Shape(m_.layer.weight_dtype, {v, mm}), "target_embedding"));
  }
  // The decoder's weights, stacked as the training model stacks them.
  const std::vector<LayerStack> stacks = SideStacks(m_, /*decoder=*/true);
  std::vector<Instruction*> weights;
  for (const LayerStack& st : stacks) {
    weights.push_back(StackParameter(b_, next_++, st, r, l_, "decoder." + st.name));
  }
  Instruction *final_scale, *final_bias;
  {
    Builder::ScopeGuard scope(b_, "softmax");
    final_scale = Replicated(Param(Shape(l_.weight_dtype, {mm}), "decoder.ln_final_scale"));
    final_bias = Replicated(Param(Shape(l_.weight_dtype, {mm}), "decoder.ln_final_bias"));
  }
  // The caches, per layer p of an iteration: self key, self value, cross key, cross value.
  std::vector<Instruction*> caches;
  {
    Builder::ScopeGuard scope(b_, std::string(kScopeKvCache));
    for (int64_t p = 0; p < m_.moe_every; ++p) {
      const std::string at = "decoder.l" + std::to_string(p) + ".";
      for (const char* name : {"self_key", "self_value"}) {
        caches.push_back(SplitGroups(Param(CacheShape(flat), at + name), 1));
      }
      for (const char* name : {"cross_key", "cross_value"}) {
        caches.push_back(SplitGroups(Param(CacheShape(c_.source_len), at + name), 1));
      }
    }
  }
  Instruction* x;
  {
    Builder::ScopeGuard scope(b_, "embedding");
    x = b_.Gather(table, tokens, 0);
    if (x->shape.dtype != l_.dtype) x = b_.Convert(x, l_.dtype);
    x = Named(SplitGroups(x), "target_embedded");
  }

  // The layer loop: carried (x, position, mask, weights..., caches...).
  ir::Computation* body = module_->AddComputation("decoder_layers");
  Builder bb(body);
  Instruction* t = bb.Parameter(0, Shape(DType::kS32, {}), "layer");
  int64_t bn = 1;
  Instruction* h = SplitGroups(bb.Parameter(bn++, x->shape, "x"));
  Instruction* bpos = bb.Parameter(bn++, position->shape, "position");
  Instruction* bmask = SplitGroups(bb.Parameter(bn++, mask->shape, "mask"));
  std::vector<Instruction*> bweights, bcaches;
  for (size_t i = 0; i < weights.size(); ++i) {
    bweights.push_back(bb.Parameter(bn++, weights[i]->shape, stacks[i].name + ".stack"));
  }
  for (Instruction* cache : caches) {
    bcaches.push_back(SplitGroups(bb.Parameter(bn++, cache->shape, cache->name), 1));
  }
  Instruction* zero = bb.ConstantScalar(DType::kS32, 0);
  size_t next_weight = 0;
  auto take = [&](bool cast = true) {
    const size_t at = next_weight++;
    return LayerWeight(bb, bweights[at], t, stacks[at], l_, cast);
  };
  // This iteration's [G, b, P, N, K] slice of a cache stack.
  auto layer_of = [&](Instruction* stack) {
    const std::vector<int64_t>& d = stack->shape.dims;
    std::vector<int64_t> sizes = d;
    sizes[0] = 1;
    Instruction* slice = bb.DynamicSlice(stack, {t, zero, zero, zero, zero, zero}, sizes);
    return SplitGroups(bb.Reshape(slice, {d[1], d[2], d[3], d[4], d[5]}));
  };
  auto project = [&](Instruction* in, Instruction* weight) {
    return bb.Reshape(bb.Einsum("GSM,MNK->GSNK", in, weight), {g, sb, w, n, k});
  };
  auto output = [&](Instruction* context, Instruction* wo, Instruction* residual) {
    Builder::ScopeGuard scope(bb, std::string(kScopeProjections));
    return SplitGroups(bb.Add(residual, bb.Einsum("GSNK,NKM->GSM", context, wo)));
  };
  std::vector<Instruction*> new_caches = bcaches;
  for (int64_t p = 0; p < m_.moe_every; ++p) {
    Instruction*& self_key = new_caches[static_cast<size_t>(4 * p)];
    Instruction*& self_value = new_caches[static_cast<size_t>(4 * p + 1)];
    Instruction* cross_key = new_caches[static_cast<size_t>(4 * p + 2)];
    Instruction* cross_value = new_caches[static_cast<size_t>(4 * p + 3)];
    {  // Self-attention over the flat beam, after writing this step's keys and values.
      Builder::ScopeGuard scope(bb, std::string(kScopeProjections));
      Instruction* scale = take(false);
      Instruction* bias = take(false);
      Instruction* wq = take();
      Instruction* wk = take();
      Instruction* wv = take();
      Instruction* wo = take();
      Instruction* normed = LayerNorm(bb, h, scale, bias);
      Instruction* q = project(normed, wq);
      Instruction* key = project(normed, wk);
      Instruction* value = project(normed, wv);
      {
        Builder::ScopeGuard cache_scope(bb, std::string(kScopeKvCache));
        // Hypothesis w of step t at flat position t x W + w: one in-place write of W positions.
        Instruction* at = bb.Mul(bpos, bb.ConstantScalar(DType::kS32, static_cast<double>(w)));
        auto write = [&](Instruction* stack, Instruction* update) {
          Instruction* u = bb.Reshape(update, {1, g, sb, w, n, k});
          return SplitGroups(bb.DynamicUpdateSlice(stack, u, {t, zero, zero, at, zero, zero}), 1);
        };
        self_key = write(self_key, key);
        self_value = write(self_value, value);
      }
      Instruction* context = Attend(bb, q, layer_of(self_key), layer_of(self_value), bmask);
      h = output(context, wo, h);
    }
    {  // Cross-attention over the source (prefill's keys and values).
      Builder::ScopeGuard scope(bb, std::string(kScopeProjections));
      Instruction* scale = take(false);
      Instruction* bias = take(false);
      Instruction* wq = take();
      next_weight += 2;  // cross_wk, cross_wv: prefill applied them to the encoder output
      Instruction* wo = take();
      Instruction* q = project(LayerNorm(bb, h, scale, bias), wq);
      Instruction* context = Attend(bb, q, layer_of(cross_key), layer_of(cross_value), nullptr);
      h = output(context, wo, h);
    }
    if (p + 1 < m_.moe_every) {
      Builder::ScopeGuard scope(bb, std::string(kScopeTransformerFfn));
      Instruction* scale = take(false);
      Instruction* bias = take(false);
      Instruction* wi = take();
      Instruction* wo = take();
      h = SplitGroups(bb.Add(h, AddFfnCore(bb, LayerNorm(bb, h, scale, bias), wi, wo)));
    } else {
      Builder::ScopeGuard scope(bb, std::string(kScopeGateEinsums));
      Instruction* scale = take(false);
      Instruction* bias = take(false);
      MoeWeights mw;
      mw.wg = take();
      mw.wi = take();
      mw.wo = take();
      h = SplitGroups(bb.Add(h, AddMoeCore(bb, LayerNorm(bb, h, scale, bias), mw, l_)));
    }
  }
  std::vector<Instruction*> root = {h, bpos, bmask};
  root.insert(root.end(), bweights.begin(), bweights.end());
  root.insert(root.end(), new_caches.begin(), new_caches.end());
  body->set_root(bb.Tuple(root));
  std::vector<Instruction*> init = {x, position, mask};
  init.insert(init.end(), weights.begin(), weights.end());
  init.insert(init.end(), caches.begin(), caches.end());
  Instruction* loop = Named(b_.Loop(init, body, r), "decoder");
  Instruction* decoded = SplitGroups(b_.GetTupleElement(loop, 0));
  const int64_t first_cache = 3 + static_cast<int64_t>(weights.size());

  // The output softmax and the beam update.
  Builder::ScopeGuard scope(b_, "softmax");
  decoded = SplitGroups(LayerNorm(b_, decoded, final_scale, final_bias));
  Instruction* embedding = table;
  if (embedding->shape.dtype != l_.dtype) embedding = b_.Convert(embedding, l_.dtype);
  Instruction* logits = b_.Einsum("GSM,VM->GSV", decoded, embedding);
  if (logits->shape.dtype != DType::kF32) logits = b_.Convert(logits, DType::kF32);
  Named(SplitGroups(logits), "logits");
  // log_softmax = logits - max - log(sum(exp(logits - max))).
  const std::vector<int64_t> dims = logits->shape.dims;
  Instruction* max = b_.Reduce(logits, {2}, ir::ReduceKind::kMax);
  Instruction* shifted = b_.Sub(logits, b_.Broadcast(max, dims, {0, 1}));
  Instruction* sum = b_.Reduce(b_.Exp(shifted), {2}, ir::ReduceKind::kAdd);
  Instruction* log_probs =
      Named(b_.Sub(shifted, b_.Broadcast(b_.Log(sum), dims, {0, 1})), "log_probs");
  Builder::ScopeGuard beam_scope(b_, std::string(kScopeBeamSearch));
  Instruction* candidates =
      b_.Add(b_.Reshape(log_probs, {g, sb, w, v}), b_.Broadcast(scores, {g, sb, w, v}, {0, 1, 2}));
  candidates = SplitGroups(b_.Reshape(candidates, {g, sb, w * v}));
  Instruction* best = b_.TopK(candidates, w);
  Instruction* new_scores = Named(SplitGroups(b_.GetTupleElement(best, 0)), "new_scores");
  Instruction* index = SplitGroups(b_.GetTupleElement(best, 1));
  Instruction* vocab =
      b_.BroadcastScalar(b_.ConstantScalar(DType::kS32, static_cast<double>(v)), index->shape.dims);
  Instruction* parents = Named(SplitGroups(b_.Div(index, vocab)), "parents");
  Instruction* next_tokens =
      Named(SplitGroups(b_.Sub(index, b_.Mul(parents, vocab))), "next_tokens");
  std::vector<Instruction*> results = {new_scores, parents, next_tokens};
  std::vector<ir::OutputAlias> aliases;
  for (size_t i = 0; i < caches.size(); ++i) {
    if (i % 4 >= 2) continue;  // cross caches: read only
    aliases.push_back({static_cast<int64_t>(results.size()), caches[i]->parameter_number});
    results.push_back(
        SplitGroups(b_.GetTupleElement(loop, first_cache + static_cast<int64_t>(i)), 1));
  }
  module_->set_output_aliases(std::move(aliases));
  module_->entry()->set_root(b_.Tuple(results));
}

}  // namespace

std::unique_ptr<ir::Module> BuildDecodeStep(const DecodeConfig& c) {
  ValidateDecodeConfig(c);
  auto module =
      std::make_unique<ir::Module>("gshard_decode_" + std::to_string(c.model.layer.num_experts) +
                                   "e_" + std::to_string(c.model.num_layers) + "l_b" +
                                   std::to_string(c.batch) + "_w" + std::to_string(c.beam));
  DecodeBuilder(c, module.get()).Build();
  module->RemoveDeadCode();  // as XLA's DCE would: the simulator runs every instruction
  ir::Verify(*module);
  return module;
}

}  // namespace podsim::models
