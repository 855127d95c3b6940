// MoeLayerConfig as JSON (models/moe_transformer.h): the one reader and writer of a model config.

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
  if (r.Has("dtype")) m.dtype = ir::ParseDType(r.Choice("dtype", {"f32", "bf16"}));
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
          {"dtype", std::string(ir::DTypeName(dtype))},
          {"num_devices", num_devices}};
}

GShardModelConfig GShardModelConfig::FromJson(const nlohmann::json& json, const std::string& path,
                                              GShardModelConfig base) {
  JsonReader check(json, path);  // an object, or a ConfigError naming path
  (void)check;
  // The model's own keys are read here, the rest as the layer's (which rejects unknown ones).
  nlohmann::json own = nlohmann::json::object(), layer = json;
  for (const char* key : {"num_layers", "moe_every", "source_vocab", "target_vocab", "dropout",
                          "weight_dtype"}) {
    if (layer.contains(key)) {
      own[key] = layer[key];
      layer.erase(key);
    }
  }
  JsonReader m(own, path);
  GShardModelConfig& c = base;
  c.num_layers = m.Int("num_layers", c.num_layers, Limit::AtLeast(2));
  c.moe_every = m.Int("moe_every", c.moe_every, Limit::AtLeast(1));
  c.source_vocab = m.Int("source_vocab", c.source_vocab, Limit::AtLeast(1));
  c.target_vocab = m.Int("target_vocab", c.target_vocab, Limit::AtLeast(1));
  c.dropout = m.Double("dropout", c.dropout, Limit::NonNegative());
  if (c.dropout >= 1) m.Fail("dropout", "must be below 1, got " + std::to_string(c.dropout));
  if (m.Has("weight_dtype")) c.weight_dtype = ir::ParseDType(m.Choice("weight_dtype", {"f32", "bf16"}));
  m.Finish();
  c.layer = MoeLayerConfig::FromJson(layer, path, c.layer);
  return c;
}

nlohmann::json GShardModelConfig::ToJson() const {
  nlohmann::json j = layer.ToJson();
  j.erase("moe_layer_attention");
  j["num_layers"] = num_layers;
  j["moe_every"] = moe_every;
  j["source_vocab"] = source_vocab;
  j["target_vocab"] = target_vocab;
  j["dropout"] = dropout;
  j["aux_loss_coefficient"] = aux_loss_coefficient;
  j["weight_dtype"] = std::string(ir::DTypeName(weight_dtype));
  return j;
}

}  // namespace podsim::models
