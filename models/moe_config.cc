// MoeLayerConfig as JSON (models/moe_transformer.h): the one reader and writer of a model config.

#include <nlohmann/json.hpp>

#include "base/config.h"
#include "ir/dtype.h"
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

}  // namespace podsim::models
