#include "models/moe_transformer.h"

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/verifier.h"
#include "models/layer_mesh.h"
#include "models/naming.h"
#include "models/scopes.h"
#include "models/top2_gating.h"
#include "partitioner/annotations.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::ReduceKind;
using ir::Shape;

namespace {

Instruction* AddParameter(Builder& b, int64_t* next_parameter, std::vector<int64_t> dims,
                          DType dtype, const std::string& name) {
  return b.Parameter((*next_parameter)++, Shape(dtype, std::move(dims)), name);
}

Instruction* Relu(Builder& b, Instruction* x) {
  Instruction* zero = b.ConstantScalar(x->shape.dtype, 0);
  return b.Max(x, b.BroadcastScalar(zero, x->shape.dims));
}

// How a weight is laid out on the mesh (models/layer_mesh.h): an expert weight has its dim 0
// split over the expert axis; `model_dim` (-1: none) is the dim split over the model axis.
struct WeightSplit {
  int64_t model_dim = -1;
  bool expert = false;
};

// A weight parameter stored in c.weight_dtype, annotated as `split` says, and returned converted
// to the activation dtype when the two differ.
Instruction* AddWeight(Builder& b, int64_t* next_parameter, std::vector<int64_t> dims,
                       const MoeLayerConfig& c, const std::string& name, WeightSplit split) {
  Instruction* w = AddParameter(b, next_parameter, std::move(dims), c.weight_dtype, name);
  if (split.expert) {
    AnnotateExperts(w, c, 0, split.model_dim);
  } else {
    AnnotateModel(w, c, split.model_dim);
  }
  return w->shape.dtype == c.dtype ? w : b.Convert(w, c.dtype);
}

void RequireAtLeast(const char* field, int64_t value, int64_t minimum) {
  if (value < minimum) {
    throw Error(std::string("moe.") + field + ": must be >= " + std::to_string(minimum) + ", got " +
                std::to_string(value));
  }
}

}  // namespace

MoeLayerConfig PaperMoeConfig(int64_t num_devices) {
  MoeLayerConfig c;
  c.num_groups = num_devices;
  c.num_experts = num_devices;
  c.num_devices = num_devices;
  return c;
}

MoeLayerConfig ToyMoeConfig() {
  MoeLayerConfig c;
  c.num_groups = 4;
  c.tokens_per_group = 8;
  c.d_model = 16;
  c.d_ff = 32;
  c.num_experts = 4;
  c.num_heads = 2;
  c.head_dim = 8;
  c.seq_len = 4;
  c.num_devices = 4;
  return c;
}

int64_t DefaultCapacity(int64_t tokens_per_group, int64_t num_experts) {
  // ceil(2S / E) in checked arithmetic: a tokens_per_group near int64's limit is an error, not a
  // negative capacity.
  int64_t twice = 0, rounded = 0;
  if (num_experts < 1 || __builtin_mul_overflow(tokens_per_group, 2, &twice) ||
      __builtin_add_overflow(twice, num_experts - 1, &rounded)) {
    throw Error("moe.capacity: the default 2 x tokens_per_group / num_experts overflows int64 "
                "(tokens_per_group = " + std::to_string(tokens_per_group) +
                ", num_experts = " + std::to_string(num_experts) + ")");
  }
  const int64_t c = rounded / num_experts;
  return c < 1 ? 1 : c;
}

int64_t ExpertCapacity(const MoeLayerConfig& config) {
  return config.capacity > 0 ? config.capacity
                             : DefaultCapacity(config.tokens_per_group, config.num_experts);
}

namespace {

// The checks of ValidateMoeConfig that concern Algorithm 2 alone.
void ValidateMoeFields(const MoeLayerConfig& c) {
  RequireAtLeast("num_groups", c.num_groups, 1);
  RequireAtLeast("tokens_per_group", c.tokens_per_group, 1);
  RequireAtLeast("d_model", c.d_model, 1);
  RequireAtLeast("d_ff", c.d_ff, 1);
  RequireAtLeast("num_experts", c.num_experts, 2);
  RequireAtLeast("capacity", c.capacity, 0);
  RequireAtLeast("num_devices", c.num_devices, 1);
  for (const auto& [field, dtype] :
       {std::pair{"dtype", c.dtype}, {"weight_dtype", c.weight_dtype}}) {
    if (dtype != DType::kF32 && dtype != DType::kBF16) {
      throw Error(std::string("moe.") + field + ": must be f32 or bf16, got " +
                  std::string(ir::DTypeName(dtype)));
    }
  }
  if (c.annotate) {
    const LayerMesh mesh = MeshOf(c);
    // The paper's layout splits groups and experts over all D devices; another mesh names its
    // axes.
    const bool paper = mesh.data == 1 && mesh.model == 1;
    const std::string of = paper ? ""
                                 : " (mesh data " + std::to_string(mesh.data) + " x expert " +
                                       std::to_string(mesh.expert) + " x model " +
                                       std::to_string(mesh.model) + ")";
    if (mesh.data * mesh.expert > c.num_groups) {
      throw Error("moe.num_devices: " + std::to_string(mesh.data * mesh.expert) +
                  (paper ? " devices" : " data x expert devices" + of) +
                  " cannot split num_groups = " + std::to_string(c.num_groups));
    }
    if (mesh.expert > c.num_experts) {
      throw Error("moe.num_devices: " + std::to_string(mesh.expert) +
                  (paper ? " devices" : " expert devices" + of) +
                  " cannot split num_experts = " + std::to_string(c.num_experts));
    }
    if (c.d_ff % mesh.model != 0) {
      throw Error("moe.model_parallel: " + std::to_string(mesh.model) +
                  " must divide d_ff = " + std::to_string(c.d_ff));
    }
  }
}

}  // namespace

void ValidateMoeConfig(const MoeLayerConfig& c) {
  ValidateMoeFields(c);
  RequireAtLeast("num_heads", c.num_heads, 1);
  RequireAtLeast("head_dim", c.head_dim, 1);
  RequireAtLeast("seq_len", c.seq_len, 1);
  if (!(c.dropout >= 0 && c.dropout < 1)) {
    throw Error("moe.dropout: must be in [0, 1), got " + std::to_string(c.dropout));
  }
  if (c.tokens_per_group % c.seq_len != 0) {
    throw Error("moe.seq_len: must divide tokens_per_group (" + std::to_string(c.tokens_per_group) +
                "), got " + std::to_string(c.seq_len));
  }
  if (c.annotate && c.num_heads % c.model_parallel != 0) {
    throw Error("moe.model_parallel: " + std::to_string(c.model_parallel) +
                " must divide num_heads = " + std::to_string(c.num_heads));
  }
}

Instruction* LayerNorm(Builder& b, Instruction* x, Instruction* scale, Instruction* bias) {
  const std::vector<int64_t> dims = x->shape.dims;
  const int64_t last = x->shape.rank() - 1;
  std::vector<int64_t> lead(last);
  for (int64_t d = 0; d < last; ++d) lead[d] = d;
  const double width = static_cast<double>(dims.back());
  Instruction* xf = x->shape.dtype == DType::kF32 ? x : b.Convert(x, DType::kF32);
  // Per-token statistics stay [lead dims] and are broadcast where they are applied, as a
  // LayerNorm kernel computes them: one rsqrt per token, not per element.
  auto mean = [&](Instruction* t) {
    Instruction* sum = b.Reduce(t, {last}, ReduceKind::kAdd);
    return b.Div(sum, b.BroadcastScalar(b.ConstantScalar(DType::kF32, width), sum->shape.dims));
  };
  Instruction* centered = b.Sub(xf, b.Broadcast(mean(xf), dims, lead));
  Instruction* var = mean(b.Mul(centered, centered));
  Instruction* eps = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1e-6), var->shape.dims);
  Instruction* normed = b.Mul(centered, b.Broadcast(b.Rsqrt(b.Add(var, eps)), dims, lead));
  auto row = [&](Instruction* v) {
    if (v->shape.dtype != DType::kF32) v = b.Convert(v, DType::kF32);
    return b.Broadcast(v, dims, {last});
  };
  Instruction* y = b.Add(b.Mul(normed, row(scale)), row(bias));
  return x->shape.dtype == DType::kF32 ? y : b.Convert(y, x->shape.dtype);
}

Instruction* Dropout(Builder& b, Instruction* x, double rate, uint64_t site, Instruction* index,
                     int64_t count) {
  if (rate == 0) return x;
  std::vector<int64_t> dims = x->shape.dims;
  std::vector<int64_t> one = dims, global = dims;
  one.insert(one.begin(), 1);
  global.insert(global.begin(), count);
  std::vector<Instruction*> offsets;
  if (index != nullptr) {
    offsets.push_back(index);
    Instruction* zero = b.ConstantScalar(DType::kS32, 0);
    for (size_t d = 0; d < dims.size(); ++d) offsets.push_back(zero);
  }
  Instruction* u = b.RandomUniform(Shape(DType::kF32, one), site, 0.0, 1.0, offsets,
                                   index != nullptr ? global : std::vector<int64_t>{});
  u = b.Reshape(u, dims);
  Instruction* keep = b.Compare(u, b.BroadcastScalar(b.ConstantScalar(DType::kF32, rate), dims),
                                ir::Comparison::kGe);
  const DType t = x->shape.dtype;
  Instruction* scaled = b.Mul(x, b.BroadcastScalar(b.ConstantScalar(t, 1.0 / (1.0 - rate)), dims));
  return b.Select(keep, scaled, b.BroadcastScalar(b.ConstantScalar(t, 0), dims));
}

Instruction* AddAttentionCore(Builder& b, Instruction* queries, Instruction* memory,
                              const AttentionWeights& w, const MoeLayerConfig& c, bool causal) {
  const int64_t g = c.num_groups, s = c.tokens_per_group, m = c.d_model;
  const int64_t n = c.num_heads, k = c.head_dim, l = c.seq_len, seqs = s / l;
  Instruction *q, *key, *value;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeProjections));
    q = b.Einsum("GSM,MNK->GSNK", queries, w.wq);
    key = b.Einsum("GSM,MNK->GSNK", memory, w.wk);
    value = b.Einsum("GSM,MNK->GSNK", memory, w.wv);
  }
  Instruction* context;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeAttention));
    const std::vector<int64_t> seq_dims = {g, seqs, l, n, k};
    auto sequences = [&](Instruction* t) { return b.Reshape(t, seq_dims); };
    const DType dtype = queries->shape.dtype;
    Instruction* scale = b.ConstantScalar(dtype, 1.0 / std::sqrt(static_cast<double>(k)));
    Instruction* q_seq = b.Mul(sequences(q), b.BroadcastScalar(scale, seq_dims));
    Instruction* logits = b.Einsum("GBLNK,GBTNK->GBNLT", q_seq, sequences(key));
    if (causal) {
      // Query position l sees key positions t <= l. The others get a logit of -1e9: its
      // exponential after the max subtraction is exactly 0 in f32 and bf16.
      const Shape square(DType::kS32, {l, l});
      Instruction* visible =
          b.Compare(b.Iota(square, 0), b.Iota(square, 1), ir::Comparison::kGe);
      const std::vector<int64_t> dims = logits->shape.dims;
      Instruction* hidden = b.BroadcastScalar(b.ConstantScalar(dtype, -1e9), dims);
      logits = b.Select(b.Broadcast(visible, dims, {3, 4}), logits, hidden);
    }
    Instruction* probs = Named(AddSoftmaxLastDim(b, logits), "attention_probs");
    context = b.Einsum("GBNLT,GBTNK->GBNLK", probs, sequences(value));
  }
  Builder::ScopeGuard scope(b, std::string(kScopeProjections));
  return b.Reshape(b.Einsum("GBNLK,NKM->GBLM", context, w.wo), {g, s, m});
}

namespace {

// LN(x) with its own [M] scale and bias parameters (stored in weight_dtype, replicated) when the
// config asks for LayerNorm, else x. Scope: the caller's.
Instruction* AddInputNorm(Builder& b, Instruction* x, int64_t* next_parameter,
                          const MoeLayerConfig& c) {
  if (!c.layer_norm) return x;
  Instruction* scale = AddParameter(b, next_parameter, {c.d_model}, c.weight_dtype, "ln_scale");
  Instruction* bias = AddParameter(b, next_parameter, {c.d_model}, c.weight_dtype, "ln_bias");
  AnnotateModel(scale, c, -1);
  AnnotateModel(bias, c, -1);
  return LayerNorm(b, x, scale, bias);
}

// The random stream of a sublayer's dropout `k` (0: residual, 1: the dense FFN's hidden): from
// the next parameter number, distinct for every sublayer of a module (each adds parameters
// before its dropouts).
uint64_t DropoutSite(const MoeLayerConfig& c, int64_t next_parameter, int k) {
  return c.seed + 1 + 2 * static_cast<uint64_t>(next_parameter) + static_cast<uint64_t>(k);
}

// x + Dropout(out) at the config's rate.
Instruction* AddResidual(Builder& b, Instruction* x, Instruction* out, int64_t next_parameter,
                         const MoeLayerConfig& c) {
  return b.Add(x, Dropout(b, out, c.dropout, DropoutSite(c, next_parameter, 0), nullptr, 1));
}

}  // namespace

Instruction* AddSelfAttention(Builder& b, Instruction* x, int64_t* next_parameter,
                              const MoeLayerConfig& c) {
  const int64_t m = c.d_model, n = c.num_heads, k = c.head_dim;
  AttentionWeights w;
  Builder::ScopeGuard scope(b, std::string(kScopeProjections));
  Instruction* in = AddInputNorm(b, x, next_parameter, c);
  // Heads (N) split over the model axis.
  auto weight = [&](std::vector<int64_t> dims, const char* name, int64_t heads_dim) {
    return AddWeight(b, next_parameter, std::move(dims), c, name, {heads_dim});
  };
  w.wq = weight({m, n, k}, "attention_wq", 1);
  w.wk = weight({m, n, k}, "attention_wk", 1);
  w.wv = weight({m, n, k}, "attention_wv", 1);
  w.wo = weight({n, k, m}, "attention_wo", 0);
  Instruction* out = AddAttentionCore(b, in, in, w, c, /*causal=*/false);
  return Named(AddResidual(b, x, out, *next_parameter, c), "attention_residual");
}

Instruction* AddFfnCore(Builder& b, Instruction* x, Instruction* wi, Instruction* wo,
                        double dropout, uint64_t site, Instruction* index, int64_t count) {
  Builder::ScopeGuard scope(b, std::string(kScopeTransformerFfn));
  Instruction* hidden = Named(Relu(b, b.Einsum("GSM,MH->GSH", x, wi)), "ffn_hidden");
  return b.Einsum("GSH,HM->GSM", Dropout(b, hidden, dropout, site, index, count), wo);
}

Instruction* AddDenseFfn(Builder& b, Instruction* x, int64_t* next_parameter,
                         const MoeLayerConfig& c) {
  Builder::ScopeGuard scope(b, std::string(kScopeTransformerFfn));
  Instruction* in = AddInputNorm(b, x, next_parameter, c);
  Instruction* wi = AddWeight(b, next_parameter, {c.d_model, c.d_ff}, c, "ffn_wi", {1});
  Instruction* wo = AddWeight(b, next_parameter, {c.d_ff, c.d_model}, c, "ffn_wo", {0});
  Instruction* out =
      AddFfnCore(b, in, wi, wo, c.dropout, DropoutSite(c, *next_parameter, 1), nullptr, 1);
  return Named(AddResidual(b, x, out, *next_parameter, c), "ffn_residual");
}

Instruction* AddMoeSublayer(Builder& b, Instruction* u, int64_t* next_parameter,
                            const MoeLayerConfig& c, Instruction** aux_loss) {
  Instruction* in;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
    in = AddInputNorm(b, u, next_parameter, c);
  }
  Instruction* moe = AddMoeFfn(b, in, next_parameter, c, aux_loss);
  Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
  return Named(AddResidual(b, u, moe, *next_parameter, c), "moe_layer_out");
}

Instruction* AddMoeFfn(Builder& b, Instruction* inputs, int64_t* next_parameter,
                       const MoeLayerConfig& c, Instruction** aux_loss) {
  MoeWeights w;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
    w.wg = AddWeight(b, next_parameter, {c.d_model, c.num_experts}, c, "wg", {});
  }
  {
    Builder::ScopeGuard scope(b, std::string(kScopeMoeFfn));
    w.wi = AddWeight(b, next_parameter, {c.num_experts, c.d_model, c.d_ff}, c, "wi", {2, true});
    w.wo = AddWeight(b, next_parameter, {c.num_experts, c.d_ff, c.d_model}, c, "wo", {1, true});
  }
  return AddMoeCore(b, inputs, w, c, aux_loss);
}

Instruction* AddMoeCore(Builder& b, Instruction* inputs, const MoeWeights& w,
                        const MoeLayerConfig& c, Instruction** aux_loss) {
  const bool annotate_experts = c.annotate && c.annotate_experts;
  AnnotateBatch(inputs, c);
  AnnotateExperts(w.wi, c, 0, 2);
  AnnotateExperts(w.wo, c, 0, 1);
  Top2GatingResult gating;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
    Instruction* logits = Named(b.Einsum("GSM,ME->GSE", inputs, w.wg), "gating_logits");
    if (logits->shape.dtype != DType::kF32) logits = b.Convert(logits, DType::kF32);
    Instruction* gates = Named(AddSoftmaxLastDim(b, logits), "gates");
    Top2GatingOptions options;
    options.capacity = ExpertCapacity(c);
    options.seed = c.seed;
    options.dtype = inputs->shape.dtype;
    options.aux_loss = aux_loss != nullptr;
    gating = AddTop2Gating(b, gates, options);
    if (aux_loss) *aux_loss = gating.aux_loss;
    Named(gating.combine_weights, "combine_weights");
    Named(gating.dispatch_mask, "dispatch_mask");
  }
  Instruction* gathered;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
    gathered = b.Einsum("GSEC,GSM->GECM", gating.dispatch_mask, inputs);
  }
  Instruction* dispatched;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeDispatchCombine));
    dispatched = Named(b.Transpose(gathered, {1, 0, 2, 3}), "dispatched_expert_inputs");
    AnnotateDispatched(dispatched, c);
  }
  Instruction* expert_major;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeMoeFfn));
    Instruction* hidden =
        Named(Relu(b, b.Einsum("EGCM,EMH->EGCH", dispatched, w.wi)), "expert_hidden");
    expert_major = b.Einsum("EGCH,EHM->EGCM", hidden, w.wo);
  }
  Instruction* expert_outputs;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeDispatchCombine));
    expert_outputs = Named(b.Transpose(expert_major, {1, 0, 2, 3}), "expert_outputs");
    if (annotate_experts)
      AnnotateBatch(expert_outputs, c);  // [G,E,C,M]: back to the groups' layout
  }
  Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
  return Named(b.Einsum("GSEC,GECM->GSM", gating.combine_weights, expert_outputs), "moe_outputs");
}

std::unique_ptr<ir::Module> BuildMoeLayerPair(const MoeLayerConfig& c) {
  ValidateMoeConfig(c);
  auto module = std::make_unique<ir::Module>("moe_layer_pair");
  Builder b(module->AddComputation("main", /*is_entry=*/true));
  int64_t next_parameter = 0;
  Instruction* x;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeProjections));
    x = b.Parameter(next_parameter++, Shape(c.dtype, {c.num_groups, c.tokens_per_group, c.d_model}),
                    "x");
    AnnotateBatch(x, c);
  }
  // The Transformer layer.
  Instruction* y = AddSelfAttention(b, x, &next_parameter, c);
  Instruction* z = AddDenseFfn(b, y, &next_parameter, c);
  // The MoE layer.
  Instruction* u = c.moe_layer_attention ? AddSelfAttention(b, z, &next_parameter, c) : z;
  AddMoeSublayer(b, u, &next_parameter, c);
  ir::Verify(*module);
  return module;
}

std::unique_ptr<ir::Module> BuildMoeLayer(const MoeLayerConfig& c) {
  ValidateMoeFields(c);
  auto module = std::make_unique<ir::Module>("moe_layer");
  Builder b(module->AddComputation("main", /*is_entry=*/true));
  int64_t next_parameter = 0;
  Instruction* inputs;
  {
    Builder::ScopeGuard scope(b, std::string(kScopeGateEinsums));
    inputs = b.Parameter(next_parameter++,
                         Shape(c.dtype, {c.num_groups, c.tokens_per_group, c.d_model}), "inputs");
  }
  AddMoeFfn(b, inputs, &next_parameter, c);
  ir::Verify(*module);
  return module;
}

}  // namespace podsim::models
