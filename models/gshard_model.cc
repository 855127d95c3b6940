#include "models/gshard_model.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "models/layer_mesh.h"
#include "models/moe_loss.h"
#include "models/naming.h"
#include "models/scopes.h"
#include "partitioner/annotations.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::ReduceKind;
using ir::Shape;

GShardModelConfig PaperModelConfig(int64_t num_experts, int64_t num_layers) {
  GShardModelConfig c;
  c.layer = PaperMoeConfig(num_experts);
  c.layer.dtype = DType::kBF16;
  c.num_layers = num_layers;
  return c;
}

GShardModelConfig ToyModelConfig(int64_t num_devices) {
  GShardModelConfig c;
  c.layer = ToyMoeConfig();
  c.layer.num_groups = c.layer.num_experts = std::max<int64_t>(2, num_devices);
  c.layer.num_devices = num_devices;
  c.num_layers = 2;
  c.moe_every = 1;
  c.source_vocab = 16;
  c.target_vocab = 12;
  return c;
}

const std::vector<GShardPreset>& GShardPresets() {
  static const std::vector<GShardPreset> presets = {
      {"128E,12L", 128, 12, int64_t{1} << 20},    {"128E,36L", 128, 36, int64_t{1} << 20},
      {"512E,12L", 512, 12, int64_t{1} << 20},    {"512E,36L", 512, 36, int64_t{1} << 20},
      {"2048E,12L", 2048, 12, int64_t{1} << 22},  {"2048E,24L", 2048, 24, int64_t{1} << 22},
      {"2048E,36L", 2048, 36, int64_t{1} << 22},  {"2048E,60L", 2048, 60, int64_t{1} << 22}};
  return presets;
}

GShardModelConfig PresetModelConfig(const std::string& name) {
  std::string names;
  for (const GShardPreset& p : GShardPresets()) {
    if (p.name == name) {
      GShardModelConfig c = PaperModelConfig(p.experts, p.layers);
      c.layer.num_groups = p.batch_tokens / c.layer.tokens_per_group;
      return c;
    }
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw Error("model.preset: '" + name + "' is not one of " + names);
}

ParameterCount CountParameters(const ir::Module& module) {
  ParameterCount n;
  for (const Instruction* p : module.entry()->parameters()) {
    const DType t = p->shape.dtype;
    if (p->shape.is_tuple || (t != DType::kF32 && t != DType::kBF16)) continue;
    const int64_t e = p->shape.NumElements();
    n.total += e;
    (t == DType::kF32 ? n.f32 : n.bf16) += e;
    // Tiles that split data (a last tile dim that replicates does not).
    int64_t tiles = 1;
    if (p->sharding && p->sharding->kind == ir::Sharding::Kind::kTiled) {
      const std::vector<int64_t>& dims = p->sharding->tile_dims;
      const size_t data_dims = dims.size() - (p->sharding->last_tile_dim_replicate ? 1 : 0);
      for (size_t d = 0; d < data_dims; ++d) tiles *= dims[d];
    }
    (tiles > 1 ? n.split : n.replicated) += e;
    n.per_device_bytes += e * ir::ByteWidth(t) / tiles;
  }
  return n;
}

void ValidateModelConfig(const GShardModelConfig& c) {
  ValidateMoeConfig(c.layer);
  auto fail = [](const std::string& field, const std::string& what) {
    throw Error("model." + field + ": " + what);
  };
  if (c.num_layers < 2 || c.num_layers % 2 != 0) {
    fail("num_layers", "must be even and >= 2 (encoder + decoder), got " +
                           std::to_string(c.num_layers));
  }
  if (c.moe_every < 1 || (c.num_layers / 2) % c.moe_every != 0) {
    fail("moe_every", "must be >= 1 and divide the " + std::to_string(c.num_layers / 2) +
                          " layers of each side, got " + std::to_string(c.moe_every));
  }
  if (c.source_vocab < 1) fail("source_vocab", "must be >= 1");
  if (c.target_vocab < 1) fail("target_vocab", "must be >= 1");
  if (!(c.dropout >= 0 && c.dropout < 1)) fail("dropout", "must be in [0, 1)");
  if (!(c.aux_loss_coefficient >= 0)) fail("aux_loss_coefficient", "must be >= 0");
  if (c.micro_batches < 1 || c.layer.num_groups % c.micro_batches != 0) {
    fail("micro_batches", "must be >= 1 and divide the " + std::to_string(c.layer.num_groups) +
                              " groups of the batch, got " + std::to_string(c.micro_batches));
  }
  // Each micro-batch's groups must split over the mesh as a whole batch's would.
  if (c.micro_batches > 1) {
    MoeLayerConfig micro = c.layer;
    micro.num_groups /= c.micro_batches;
    try {
      ValidateMoeConfig(micro);
    } catch (const Error& e) {
      fail("micro_batches", std::to_string(c.micro_batches) + " micro-batches of " +
                                std::to_string(micro.num_groups) + " groups: " + e.what());
    }
  }
}

std::vector<LayerStack> SideStacks(const GShardModelConfig& c, bool decoder) {
  const MoeLayerConfig& l = c.layer;
  const int64_t m = l.d_model, h = l.d_ff, e = l.num_experts;
  const int64_t n = l.num_heads, k = l.head_dim;
  std::vector<LayerStack> stacks;
  for (int64_t p = 0; p < c.moe_every; ++p) {
    const std::string at = "l" + std::to_string(p) + ".";
    auto attention = [&](const std::string& prefix, const std::string& ln) {
      stacks.push_back({at + ln + "_scale", {m}});
      stacks.push_back({at + ln + "_bias", {m}});
      for (const char* w : {"wq", "wk", "wv"}) {
        stacks.push_back({at + prefix + w, {m, n, k}, false, 1});
      }
      stacks.push_back({at + prefix + "wo", {n, k, m}, false, 0});
    };
    attention("attention_", "ln_attention");
    if (decoder) attention("cross_", "ln_cross");
    stacks.push_back({at + "ln_ffn_scale", {m}});
    stacks.push_back({at + "ln_ffn_bias", {m}});
    if (p + 1 < c.moe_every) {
      stacks.push_back({at + "ffn_wi", {m, h}, false, 1});
      stacks.push_back({at + "ffn_wo", {h, m}, false, 0});
    } else {
      stacks.push_back({at + "wg", {m, e}});
      stacks.push_back({at + "wi", {e, m, h}, true, 2});
      stacks.push_back({at + "wo", {e, h, m}, true, 1});
    }
  }
  return stacks;
}

Instruction* StackParameter(Builder& b, int64_t number, const LayerStack& s, int64_t iterations,
                            const MoeLayerConfig& l, const std::string& name) {
  std::vector<int64_t> dims = s.dims;
  dims.insert(dims.begin(), iterations);
  Builder::ScopeGuard scope(b, std::string(s.expert ? kScopeMoeFfn : kScopeProjections));
  Instruction* w = b.Parameter(number, Shape(l.weight_dtype, dims), name);
  const int64_t model_dim = s.model_dim < 0 ? -1 : s.model_dim + 1;
  if (s.expert) {
    AnnotateExperts(w, l, 1, model_dim);
  } else {
    AnnotateModel(w, l, model_dim);
  }
  return w;
}

Instruction* LayerWeight(Builder& b, Instruction* stack, Instruction* layer, const LayerStack& s,
                         const MoeLayerConfig& l, bool cast) {
  std::vector<Instruction*> starts = {layer};
  std::vector<int64_t> sizes = {1};
  Instruction* zero = b.ConstantScalar(DType::kS32, 0);
  for (int64_t d : s.dims) {
    starts.push_back(zero);
    sizes.push_back(d);
  }
  Instruction* w = b.Reshape(b.DynamicSlice(stack, starts, sizes), s.dims);
  if (cast && w->shape.dtype != l.dtype) w = b.Convert(w, l.dtype);
  Named(w, s.name);
  // An expert weight's layout is AddMoeCore's annotation on its use (none without
  // annotate_experts: replicated).
  if (!s.expert || !l.annotate_experts) AnnotateModel(w, l, s.expert ? -1 : s.model_dim);
  return w;
}

namespace {

enum class Side { kEncoder, kDecoder };

using Stack = LayerStack;

// The builder of one model: the config, the entry builder, the parameter counter.
class ModelBuilder {
 public:
  ModelBuilder(const GShardModelConfig& c, ir::Module* m, std::set<std::string>* stacked)
      : c_(c),
        l_(c.layer),
        m_(m),
        b_(m->AddComputation("main", /*is_entry=*/true)),
        stacked_(stacked) {}

  Instruction* Build();
  // The encoder alone: source tokens -> embedding -> encoder layers -> final LayerNorm.
  Instruction* BuildEncoder();

 private:
  Instruction* Param(const Shape& shape, const std::string& name) {
    return b_.Parameter(next_parameter_++, shape, name);
  }
  Instruction* Weight(std::vector<int64_t> dims, const std::string& name) {
    Instruction* w = Param(Shape(c_.layer.weight_dtype, std::move(dims)), name);
    return l_.annotate ? partitioner::Replicate(w) : w;
  }
  Instruction* SplitGroups(Instruction* x) { return AnnotateBatch(x, l_); }
  std::vector<Stack> Stacks(Side side) const { return SideStacks(c_, side == Side::kDecoder); }
  // The side's layer loop on x; returns its output (before the final LayerNorm) and adds its
  // auxiliary loss to *aux.
  Instruction* AddSide(Side side, Instruction* x, Instruction* memory, Instruction** aux);

  const GShardModelConfig& c_;
  const MoeLayerConfig& l_;
  ir::Module* m_;
  Builder b_;
  std::set<std::string>* stacked_;
  int64_t next_parameter_ = 0;
};

Instruction* ModelBuilder::AddSide(Side side, Instruction* x, Instruction* memory,
                                   Instruction** aux) {
  const std::string side_name = side == Side::kEncoder ? "encoder" : "decoder";
  const int64_t trips = c_.num_layers / 2 / c_.moe_every;
  const std::vector<Stack> stacks = Stacks(side);
  // Entry: the stacked weights.
  std::vector<Instruction*> weights;
  for (const Stack& s : stacks) {
    Instruction* w =
        StackParameter(b_, next_parameter_++, s, trips, l_, side_name + "." + s.name);
    weights.push_back(w);
    if (stacked_ != nullptr) stacked_->insert(w->name);
  }
  // The body: carried (x, aux, [memory], weights...).
  ir::Computation* body = m_->AddComputation(side_name + "_layers");
  Builder bb(body);
  Instruction* t = bb.Parameter(0, Shape(DType::kS32, {}), "layer");
  int64_t next = 1;
  Instruction* bx = SplitGroups(bb.Parameter(next++, x->shape, "x"));
  Instruction* baux = bb.Parameter(next++, Shape(DType::kF32, {}), "aux_loss");
  Instruction* bmemory = nullptr;
  if (memory != nullptr) bmemory = SplitGroups(bb.Parameter(next++, memory->shape, "memory"));
  std::vector<Instruction*> stacked;
  for (size_t k = 0; k < stacks.size(); ++k) {
    stacked.push_back(bb.Parameter(next++, weights[k]->shape, stacks[k].name + ".stack"));
  }
  // The next weight: this iteration's row of its stack, cast to the activation dtype unless it
  // is a LayerNorm's (LayerNorm runs in f32).
  size_t k = 0;
  auto take = [&](bool cast = true) {
    const size_t at = k++;
    return LayerWeight(bb, stacked[at], t, stacks[at], l_, cast);
  };
  uint64_t site = (side == Side::kEncoder ? 1000 : 2000) + l_.seed * 10007;
  auto attention_sublayer = [&](Instruction* in, Instruction* over, bool causal) {
    Builder::ScopeGuard scope(bb, std::string(kScopeProjections));
    Instruction* scale = take(false);
    Instruction* bias = take(false);
    AttentionWeights w;
    w.wq = take();
    w.wk = take();
    w.wv = take();
    w.wo = take();
    Instruction* normed = LayerNorm(bb, in, scale, bias);
    Instruction* out = AddAttentionCore(bb, normed, over ? over : normed, w, l_, causal);
    return SplitGroups(bb.Add(in, Dropout(bb, out, c_.dropout, site++, t, trips)));
  };
  Instruction* h = bx;
  Instruction* aux_sum = baux;
  for (int64_t p = 0; p < c_.moe_every; ++p) {
    h = attention_sublayer(h, nullptr, side == Side::kDecoder);
    if (side == Side::kDecoder) h = attention_sublayer(h, bmemory, false);
    if (p + 1 < c_.moe_every) {
      Builder::ScopeGuard scope(bb, std::string(kScopeTransformerFfn));
      Instruction* scale = take(false);
      Instruction* bias = take(false);
      Instruction* wi = take();
      Instruction* wo = take();
      Instruction* out =
          AddFfnCore(bb, LayerNorm(bb, h, scale, bias), wi, wo, c_.dropout, site++, t, trips);
      h = SplitGroups(bb.Add(h, Dropout(bb, out, c_.dropout, site++, t, trips)));
    } else {
      Builder::ScopeGuard scope(bb, std::string(kScopeGateEinsums));
      Instruction* scale = take(false);
      Instruction* bias = take(false);
      MoeWeights w;
      w.wg = take();
      w.wi = take();
      w.wo = take();
      Instruction* layer_aux = nullptr;
      Instruction* out = AddMoeCore(bb, LayerNorm(bb, h, scale, bias), w, l_, &layer_aux);
      h = SplitGroups(bb.Add(h, Dropout(bb, out, c_.dropout, site++, t, trips)));
      aux_sum = bb.Add(aux_sum, layer_aux);
    }
  }
  std::vector<Instruction*> root = {h, aux_sum};
  if (bmemory != nullptr) root.push_back(bmemory);
  root.insert(root.end(), stacked.begin(), stacked.end());
  body->set_root(bb.Tuple(root));
  // The loop.
  std::vector<Instruction*> init = {x, *aux};
  if (memory != nullptr) init.push_back(memory);
  init.insert(init.end(), weights.begin(), weights.end());
  Instruction* loop = Named(b_.Loop(init, body, trips), side_name);
  *aux = b_.GetTupleElement(loop, 1);
  return SplitGroups(b_.GetTupleElement(loop, 0));
}

Instruction* ModelBuilder::BuildEncoder() {
  Builder::ScopeGuard scope(b_, "embedding");
  Instruction* source =
      SplitGroups(Param(Shape(DType::kS32, {l_.num_groups, l_.tokens_per_group}), "source_tokens"));
  source->argument_range = {0, static_cast<double>(c_.source_vocab)};
  Instruction* table = Weight({c_.source_vocab, l_.d_model}, "source_embedding");
  Instruction* x = b_.Gather(table, source, 0);
  if (x->shape.dtype != l_.dtype) x = b_.Convert(x, l_.dtype);
  x = Named(SplitGroups(Dropout(b_, x, c_.dropout, 10 + l_.seed * 10007, nullptr, 1)),
            "source_embedded");
  Instruction* aux = b_.ConstantScalar(DType::kF32, 0);
  x = AddSide(Side::kEncoder, x, nullptr, &aux);
  Builder::ScopeGuard softmax(b_, "softmax");
  Instruction* scale = Weight({l_.d_model}, "encoder.ln_final_scale");
  Instruction* bias = Weight({l_.d_model}, "encoder.ln_final_bias");
  return Named(SplitGroups(LayerNorm(b_, x, scale, bias)), "encoded");
}

Instruction* ModelBuilder::Build() {
  const int64_t g = l_.num_groups, s = l_.tokens_per_group, m = l_.d_model;
  const Shape tokens(DType::kS32, {g, s});
  Instruction *source, *target_inputs, *targets, *source_embedding, *target_embedding;
  {
    Builder::ScopeGuard scope(b_, "embedding");
    source = SplitGroups(Param(tokens, "source_tokens"));
    target_inputs = SplitGroups(Param(tokens, "target_inputs"));
    targets = SplitGroups(Param(tokens, "targets"));
    source->argument_range = {0, static_cast<double>(c_.source_vocab)};
    target_inputs->argument_range = {0, static_cast<double>(c_.target_vocab)};
    targets->argument_range = {0, static_cast<double>(c_.target_vocab)};
    source_embedding = Weight({c_.source_vocab, m}, "source_embedding");
    target_embedding = Weight({c_.target_vocab, m}, "target_embedding");
  }
  auto embed = [&](Instruction* table, Instruction* ids, uint64_t site, const char* name) {
    Builder::ScopeGuard scope(b_, "embedding");
    Instruction* x = b_.Gather(table, ids, 0);
    if (x->shape.dtype != l_.dtype) x = b_.Convert(x, l_.dtype);
    return Named(SplitGroups(Dropout(b_, x, c_.dropout, site, nullptr, 1)), name);
  };
  auto final_norm = [&](Instruction* x, const std::string& side) {
    Builder::ScopeGuard scope(b_, "softmax");
    Instruction* scale = Weight({m}, side + ".ln_final_scale");
    Instruction* bias = Weight({m}, side + ".ln_final_bias");
    return SplitGroups(LayerNorm(b_, x, scale, bias));
  };
  Instruction* aux = b_.ConstantScalar(DType::kF32, 0);
  Instruction* encoded = embed(source_embedding, source, 10 + l_.seed * 10007, "source_embedded");
  encoded = final_norm(AddSide(Side::kEncoder, encoded, nullptr, &aux), "encoder");
  Instruction* decoded =
      embed(target_embedding, target_inputs, 11 + l_.seed * 10007, "target_embedded");
  decoded = final_norm(AddSide(Side::kDecoder, decoded, encoded, &aux), "decoder");
  Builder::ScopeGuard scope(b_, "softmax");
  Instruction* table = target_embedding;
  if (table->shape.dtype != l_.dtype) table = b_.Convert(table, l_.dtype);
  Instruction* logits = b_.Einsum("GSM,VM->GSV", decoded, table);
  if (logits->shape.dtype != DType::kF32) logits = b_.Convert(logits, DType::kF32);
  Named(SplitGroups(logits), "logits");
  Instruction* nll = Named(AddSoftmaxCrossEntropy(b_, logits, targets), "nll");
  Instruction* weighted = b_.Mul(b_.ConstantScalar(DType::kF32, c_.aux_loss_coefficient), aux);
  return Named(b_.Add(nll, weighted), "loss");
}

}  // namespace

std::unique_ptr<ir::Module> BuildGShardModelLoss(const GShardModelConfig& c,
                                                 std::set<std::string>* layer_stacked) {
  ValidateModelConfig(c);
  auto module = std::make_unique<ir::Module>("gshard_moe_" + std::to_string(c.layer.num_experts) +
                                             "e_" + std::to_string(c.num_layers) + "l");
  if (layer_stacked != nullptr) layer_stacked->clear();
  GShardModelConfig micro = c;
  micro.layer.num_groups /= c.micro_batches;
  micro.micro_batches = 1;
  ModelBuilder builder(micro, module.get(), layer_stacked);
  module->entry()->set_root(builder.Build());
  ir::Verify(*module);
  return module;
}

std::unique_ptr<ir::Module> BuildGShardEncoder(const GShardModelConfig& c) {
  ValidateModelConfig(c);
  auto module =
      std::make_unique<ir::Module>("gshard_encoder_" + std::to_string(c.layer.num_experts) + "e_" +
                                   std::to_string(c.num_layers) + "l");
  ModelBuilder builder(c, module.get(), nullptr);
  module->entry()->set_root(builder.BuildEncoder());
  ir::Verify(*module);
  return module;
}

}  // namespace podsim::models
