// MoeLayerConfig as JSON (models/moe_transformer.h): the one reader and writer of a model config.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/config.h"
#include "ir/dtype.h"
#include "models/gshard_model.h"
#include "models/moe_transformer.h"

namespace podsim::models {

MoeLayerConfig MoeLayerConfig::FromJson(const nlohmann::json& json, const std::string& path,
                                        MoeLayerConfig base) {
  JsonReader r(json, path);
  MoeLayerConfig& m = base;
  m.tokens_per_group = r.Int("tokens_per_group", m.tokens_per_group, Limit::AtLeast(1));
  m.d_model = r.Int("d_model", m.d_model, Limit::AtLeast(1));
  m.d_ff = r.Int("d_ff", m.d_ff, Limit::AtLeast(1));
  m.num_heads = r.Int("num_heads", m.num_heads, Limit::AtLeast(1));
  m.head_dim = r.Int("head_dim", m.head_dim, Limit::AtLeast(1));
  m.seq_len = r.Int("seq_len", m.seq_len, Limit::AtLeast(1));
  m.capacity = r.Int("capacity", m.capacity, Limit::NonNegative());
  m.moe_layer_attention = r.Bool("moe_layer_attention", m.moe_layer_attention);
  m.layer_norm = r.Bool("layer_norm", m.layer_norm);
  m.dropout = r.Double("dropout", m.dropout, Limit::NonNegative());
  if (m.dropout >= 1) r.Fail("dropout", "must be below 1, got " + std::to_string(m.dropout));
  if (r.Has("dtype")) m.dtype = ir::ParseDType(r.Choice("dtype", {"f32", "bf16"}));
  if (r.Has("weight_dtype")) {
    m.weight_dtype = ir::ParseDType(r.Choice("weight_dtype", {"f32", "bf16"}));
  }
  m.model_parallel = r.Int("model_parallel", m.model_parallel, Limit::AtLeast(1));
  m.expert_parallel = r.Int("expert_parallel", m.expert_parallel, Limit::NonNegative());
  r.Finish();
  return m;
}

nlohmann::json MoeLayerConfig::ToJson() const {
  return {{"num_groups", num_groups},
          {"tokens_per_group", tokens_per_group},
          {"d_model", d_model},
          {"d_ff", d_ff},
          {"num_experts", num_experts},
          {"capacity", ExpertCapacity(*this)},
          {"num_heads", num_heads},
          {"head_dim", head_dim},
          {"seq_len", seq_len},
          {"moe_layer_attention", moe_layer_attention},
          {"layer_norm", layer_norm},
          {"dropout", dropout},
          {"dtype", std::string(ir::DTypeName(dtype))},
          {"weight_dtype", std::string(ir::DTypeName(weight_dtype))},
          {"num_devices", num_devices},
          {"model_parallel", model_parallel},
          {"expert_parallel", expert_parallel}};
}

GShardModelConfig GShardModelConfig::FromJson(const nlohmann::json& json, const std::string& path,
                                              GShardModelConfig base) {
  JsonReader check(json, path);  // an object, or a ConfigError naming path
  (void)check;
  // The model's own keys are read here, the rest as the layer's (which rejects unknown ones).
  nlohmann::json own = nlohmann::json::object(), layer = json;
  for (const char* key :
       {"preset", "num_layers", "moe_every", "source_vocab", "target_vocab", "dropout", "experts",
        "groups", "batch_tokens", "capacity_factor", "micro_batches"}) {
    if (layer.contains(key)) {
      own[key] = layer[key];
      layer.erase(key);
    }
  }
  JsonReader m(own, path);
  GShardModelConfig& c = base;
  if (m.Has("preset")) {
    const std::string name = m.String("preset");
    std::string names;
    bool known = false;
    for (const GShardPreset& p : GShardPresets()) {
      known = known || p.name == name;
      names += (names.empty() ? "" : ", ") + p.name;
    }
    if (!known) m.Fail("preset", "'" + name + "' is not one of " + names);
    c = PresetModelConfig(name);
  }
  c.num_layers = m.Int("num_layers", c.num_layers, Limit::AtLeast(2));
  c.moe_every = m.Int("moe_every", c.moe_every, Limit::AtLeast(1));
  c.source_vocab = m.Int("source_vocab", c.source_vocab, Limit::AtLeast(1));
  c.target_vocab = m.Int("target_vocab", c.target_vocab, Limit::AtLeast(1));
  c.dropout = m.Double("dropout", c.dropout, Limit::NonNegative());
  c.micro_batches = m.Int("micro_batches", c.micro_batches, Limit::AtLeast(1));
  if (c.dropout >= 1) m.Fail("dropout", "must be below 1, got " + std::to_string(c.dropout));
  c.layer.num_experts = m.Int("experts", c.layer.num_experts, Limit::AtLeast(2));
  const int64_t groups = m.Int("groups", 0, Limit::AtLeast(1));
  const int64_t batch = m.Int("batch_tokens", 0, Limit::AtLeast(1));
  const double factor = m.Double("capacity_factor", 0, Limit::Positive());
  m.Finish();
  if (layer.contains("layer_norm")) {
    m.Fail("layer_norm", "the whole model always has LayerNorm; the key is the layer pair's");
  }
  c.layer = MoeLayerConfig::FromJson(layer, path, c.layer);
  if (groups > 0 && batch > 0) m.Fail("batch_tokens", "give groups or batch_tokens, not both");
  if (groups > 0) c.layer.num_groups = groups;
  if (batch > 0) {
    if (batch % c.layer.tokens_per_group != 0) {
      m.Fail("batch_tokens", std::to_string(batch) + " tokens do not divide into groups of " +
                                 std::to_string(c.layer.tokens_per_group) + " (tokens_per_group)");
    }
    c.layer.num_groups = batch / c.layer.tokens_per_group;
  }
  if (factor > 0) {
    if (layer.contains("capacity")) m.Fail("capacity_factor", "give capacity or capacity_factor, not both");
    const double slots = std::ceil(factor * static_cast<double>(c.layer.tokens_per_group) /
                                   static_cast<double>(c.layer.num_experts));
    c.layer.capacity = static_cast<int64_t>(std::max(1.0, slots));
  }
  return c;
}

nlohmann::json GShardModelConfig::ToJson() const {
  nlohmann::json j = layer.ToJson();
  j.erase("moe_layer_attention");
  j.erase("layer_norm");  // always on; "dropout" is the model's own below
  j["num_layers"] = num_layers;
  j["moe_every"] = moe_every;
  j["source_vocab"] = source_vocab;
  j["target_vocab"] = target_vocab;
  j["dropout"] = dropout;
  j["aux_loss_coefficient"] = aux_loss_coefficient;
  j["micro_batches"] = micro_batches;
  return j;
}

}  // namespace podsim::models
