#include "models/dense_transformer.h"

#include <nlohmann/json.hpp>

#include "base/config.h"
#include "base/error.h"
#include "ir/autodiff.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "models/moe_loss.h"
#include "models/moe_transformer.h"
#include "models/naming.h"
#include "models/scopes.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::Shape;

DenseTransformerConfig DenseTransformerConfig::FromJson(const nlohmann::json& json,
                                                        const std::string& path,
                                                        DenseTransformerConfig base) {
  JsonReader r(json, path);
  DenseTransformerConfig& c = base;
  c.encoder_layers = r.Int("encoder_layers", c.encoder_layers, Limit::AtLeast(1));
  c.decoder_layers = r.Int("decoder_layers", c.decoder_layers, Limit::AtLeast(1));
  c.d_model = r.Int("d_model", c.d_model, Limit::AtLeast(1));
  c.d_ff = r.Int("d_ff", c.d_ff, Limit::AtLeast(1));
  c.num_heads = r.Int("num_heads", c.num_heads, Limit::AtLeast(1));
  c.head_dim = r.Int("head_dim", c.head_dim, Limit::AtLeast(1));
  c.seq_len = r.Int("seq_len", c.seq_len, Limit::AtLeast(1));
  c.source_vocab = r.Int("source_vocab", c.source_vocab, Limit::AtLeast(1));
  c.target_vocab = r.Int("target_vocab", c.target_vocab, Limit::AtLeast(1));
  c.dropout = r.Double("dropout", c.dropout);
  if (r.Has("dtype")) c.dtype = ir::ParseDType(r.Choice("dtype", {"f32", "bf16"}));
  if (r.Has("weight_dtype")) {
    c.weight_dtype = ir::ParseDType(r.Choice("weight_dtype", {"f32", "bf16"}));
  }
  r.Finish();
  try {
    ValidateDenseConfig(c);
  } catch (const Error& e) {
    throw ConfigError(path.empty() ? e.what() : path + "." + e.what());
  }
  return c;
}

nlohmann::json DenseTransformerConfig::ToJson() const {
  return {{"encoder_layers", encoder_layers},
          {"decoder_layers", decoder_layers},
          {"d_model", d_model},
          {"d_ff", d_ff},
          {"num_heads", num_heads},
          {"head_dim", head_dim},
          {"seq_len", seq_len},
          {"source_vocab", source_vocab},
          {"target_vocab", target_vocab},
          {"dropout", dropout},
          {"dtype", ir::DTypeName(dtype)},
          {"weight_dtype", ir::DTypeName(weight_dtype)},
          {"parameters", DenseParameters(*this)}};
}

void ValidateDenseConfig(const DenseTransformerConfig& c) {
  auto fail = [](const std::string& field, const std::string& what) {
    throw Error(field + ": " + what);
  };
  const std::pair<const char*, int64_t> sizes[] = {{"encoder_layers", c.encoder_layers},
                                                   {"decoder_layers", c.decoder_layers},
                                                   {"d_model", c.d_model},
                                                   {"d_ff", c.d_ff},
                                                   {"num_heads", c.num_heads},
                                                   {"head_dim", c.head_dim},
                                                   {"seq_len", c.seq_len},
                                                   {"source_vocab", c.source_vocab},
                                                   {"target_vocab", c.target_vocab}};
  for (const auto& [name, value] : sizes) {
    if (value < 1) fail(name, "must be >= 1, got " + std::to_string(value));
    // A weight or activation of two such sizes must stay far from int64 overflow.
    if (value > (int64_t{1} << 24)) {
      fail(name, "must be <= 2^24, got " + std::to_string(value));
    }
  }
  if (!(c.dropout >= 0 && c.dropout < 1)) fail("dropout", "must be in [0, 1)");
}

const char* DensePieceName(DensePiece piece) {
  switch (piece) {
    case DensePiece::kSourceEmbedding:
      return "source_embedding";
    case DensePiece::kEncoderLayer:
      return "encoder_layer";
    case DensePiece::kEncoderNorm:
      return "encoder_norm";
    case DensePiece::kTargetEmbedding:
      return "target_embedding";
    case DensePiece::kDecoderLayer:
      return "decoder_layer";
    case DensePiece::kSoftmaxLoss:
      return "softmax_loss";
  }
  return "?";
}

std::vector<DensePiece> DensePieces(const DenseTransformerConfig& c) {
  std::vector<DensePiece> pieces = {DensePiece::kSourceEmbedding};
  pieces.insert(pieces.end(), c.encoder_layers, DensePiece::kEncoderLayer);
  pieces.push_back(DensePiece::kEncoderNorm);
  pieces.push_back(DensePiece::kTargetEmbedding);
  pieces.insert(pieces.end(), c.decoder_layers, DensePiece::kDecoderLayer);
  pieces.push_back(DensePiece::kSoftmaxLoss);
  return pieces;
}

int64_t PieceInputTensors(DensePiece piece) {
  switch (piece) {
    case DensePiece::kSourceEmbedding:
      return 0;
    case DensePiece::kEncoderLayer:
    case DensePiece::kEncoderNorm:
    case DensePiece::kTargetEmbedding:  // the encoder output, passed on
      return 1;
    case DensePiece::kDecoderLayer:
    case DensePiece::kSoftmaxLoss:
      return 2;
  }
  return 0;
}

int64_t PieceOutputTensors(DensePiece piece) {
  switch (piece) {
    case DensePiece::kSourceEmbedding:
    case DensePiece::kEncoderLayer:
    case DensePiece::kEncoderNorm:
      return 1;
    case DensePiece::kTargetEmbedding:
    case DensePiece::kDecoderLayer:
      return 2;
    case DensePiece::kSoftmaxLoss:
      return 0;
  }
  return 0;
}

namespace {

// One weight of a piece: its name and shape; LayerNorm parameters are not cast to the
// activation type.
struct WeightSpec {
  std::string name;
  std::vector<int64_t> dims;
  bool layer_norm = false;
};

std::vector<WeightSpec> PieceWeights(const DenseTransformerConfig& c, DensePiece piece) {
  const int64_t m = c.d_model, h = c.d_ff, n = c.num_heads, k = c.head_dim;
  std::vector<WeightSpec> w;
  auto attention = [&](const std::string& prefix) {
    w.push_back({prefix + "ln_scale", {m}, true});
    w.push_back({prefix + "ln_bias", {m}, true});
    for (const char* p : {"wq", "wk", "wv"}) w.push_back({prefix + p, {m, n, k}});
    w.push_back({prefix + "wo", {n, k, m}});
  };
  auto ffn = [&] {
    w.push_back({"ffn_ln_scale", {m}, true});
    w.push_back({"ffn_ln_bias", {m}, true});
    w.push_back({"ffn_wi", {m, h}});
    w.push_back({"ffn_wo", {h, m}});
  };
  switch (piece) {
    case DensePiece::kSourceEmbedding:
      w.push_back({"source_embedding", {c.source_vocab, m}});
      break;
    case DensePiece::kEncoderLayer:
      attention("attention_");
      ffn();
      break;
    case DensePiece::kEncoderNorm:
      w.push_back({"ln_final_scale", {m}, true});
      w.push_back({"ln_final_bias", {m}, true});
      break;
    case DensePiece::kTargetEmbedding:
      w.push_back({"target_embedding", {c.target_vocab, m}});
      break;
    case DensePiece::kDecoderLayer:
      attention("attention_");
      attention("cross_");
      ffn();
      break;
    case DensePiece::kSoftmaxLoss:
      w.push_back({"ln_final_scale", {m}, true});
      w.push_back({"ln_final_bias", {m}, true});
      w.push_back({"softmax_weight", {c.target_vocab, m}});
      break;
  }
  return w;
}

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The piece's forward graph in `b`: its parameters from number 0 (activations or token ids,
// then weights, then the labels of softmax_loss). `inputs` receives the float activation
// parameters, `weights` the weight parameters; returns the output activations (the loss for
// softmax_loss).
std::vector<Instruction*> AddPieceForward(Builder& b, const DenseTransformerConfig& c,
                                          DensePiece piece, int64_t tokens,
                                          std::vector<Instruction*>* inputs,
                                          std::vector<Instruction*>* weights) {
  MoeLayerConfig l;
  l.num_groups = 1;
  l.tokens_per_group = tokens;
  l.d_model = c.d_model;
  l.d_ff = c.d_ff;
  l.num_heads = c.num_heads;
  l.head_dim = c.head_dim;
  l.seq_len = c.seq_len;
  l.dtype = c.dtype;
  l.weight_dtype = c.weight_dtype;
  l.annotate = false;
  l.layer_norm = true;
  l.dropout = c.dropout;
  l.num_devices = 1;

  int64_t next = 0;
  const Shape act(c.dtype, {1, tokens, c.d_model});
  const Shape ids(DType::kS32, {1, tokens});
  Instruction* x = nullptr;
  Instruction* memory = nullptr;
  Instruction* token_ids = nullptr;
  if (piece == DensePiece::kSourceEmbedding || piece == DensePiece::kTargetEmbedding) {
    token_ids = b.Parameter(next++, ids, "token_ids");
    token_ids->argument_range = {
        0, static_cast<double>(piece == DensePiece::kSourceEmbedding ? c.source_vocab
                                                                     : c.target_vocab)};
  } else {
    x = b.Parameter(next++, act, "x");
    inputs->push_back(x);
    if (PieceInputTensors(piece) == 2) {
      memory = b.Parameter(next++, act, "encoder_output");
      inputs->push_back(memory);
    }
  }
  // Weights, in PieceWeights order; each returned as used (cast unless a LayerNorm's).
  const std::vector<WeightSpec> specs = PieceWeights(c, piece);
  std::vector<Instruction*> used;
  for (const WeightSpec& s : specs) {
    Instruction* w = b.Parameter(next++, Shape(c.weight_dtype, s.dims), s.name);
    weights->push_back(w);
    used.push_back(!s.layer_norm && w->shape.dtype != c.dtype ? b.Convert(w, c.dtype) : w);
  }
  size_t k = 0;
  auto take = [&] { return used[k++]; };
  uint64_t site = 1;
  auto attention = [&](Instruction* in, Instruction* over, bool causal) {
    Builder::ScopeGuard scope(b, std::string(kScopeProjections));
    Instruction* scale = take();
    Instruction* bias = take();
    AttentionWeights w;
    w.wq = take();
    w.wk = take();
    w.wv = take();
    w.wo = take();
    Instruction* normed = LayerNorm(b, in, scale, bias);
    Instruction* out = AddAttentionCore(b, normed, over ? over : normed, w, l, causal);
    return b.Add(in, Dropout(b, out, c.dropout, site++, nullptr, 1));
  };
  auto ffn = [&](Instruction* in) {
    Builder::ScopeGuard scope(b, std::string(kScopeTransformerFfn));
    Instruction* scale = take();
    Instruction* bias = take();
    Instruction* wi = take();
    Instruction* wo = take();
    Instruction* out = AddFfnCore(b, LayerNorm(b, in, scale, bias), wi, wo, c.dropout, site++);
    return b.Add(in, Dropout(b, out, c.dropout, site++, nullptr, 1));
  };
  switch (piece) {
    case DensePiece::kSourceEmbedding:
    case DensePiece::kTargetEmbedding: {
      Builder::ScopeGuard scope(b, "embedding");
      Instruction* e = b.Gather(weights->front(), token_ids, 0);
      if (e->shape.dtype != c.dtype) e = b.Convert(e, c.dtype);
      return {Named(Dropout(b, e, c.dropout, site++, nullptr, 1), "embedded")};
    }
    case DensePiece::kEncoderLayer:
      return {Named(ffn(attention(x, nullptr, false)), "encoder_layer_out")};
    case DensePiece::kEncoderNorm: {
      Builder::ScopeGuard scope(b, "softmax");
      Instruction* scale = take();
      Instruction* bias = take();
      return {Named(LayerNorm(b, x, scale, bias), "encoder_output")};
    }
    case DensePiece::kDecoderLayer: {
      Instruction* y = attention(x, nullptr, true);
      y = attention(y, memory, false);
      return {Named(ffn(y), "decoder_layer_out"), memory};
    }
    case DensePiece::kSoftmaxLoss: {
      Builder::ScopeGuard scope(b, "softmax");
      Instruction* labels = b.Parameter(next++, ids, "targets");
      labels->argument_range = {0, static_cast<double>(c.target_vocab)};
      Instruction* scale = take();
      Instruction* bias = take();
      Instruction* table = take();
      Instruction* logits = b.Einsum("GSM,VM->GSV", LayerNorm(b, x, scale, bias), table);
      if (logits->shape.dtype != DType::kF32) logits = b.Convert(logits, DType::kF32);
      Named(logits, "logits");
      return {Named(AddSoftmaxCrossEntropy(b, logits, labels), "loss")};
    }
  }
  return {};
}

}  // namespace

int64_t PieceParameters(const DenseTransformerConfig& config, DensePiece piece) {
  int64_t n = 0;
  for (const WeightSpec& w : PieceWeights(config, piece)) n += Elements(w.dims);
  return n;
}

int64_t DenseParameters(const DenseTransformerConfig& config) {
  int64_t n = 0;
  for (DensePiece p : DensePieces(config)) n += PieceParameters(config, p);
  return n;
}

PieceModules BuildDensePiece(const DenseTransformerConfig& c, DensePiece piece, int64_t tokens,
                             const OptimizerConfig& optimizer) {
  ValidateDenseConfig(c);
  if (tokens < c.seq_len || tokens % c.seq_len != 0 || tokens > (int64_t{1} << 30)) {
    throw Error("a micro-batch of " + std::to_string(tokens) +
                " tokens is not a whole number of sequences of seq_len " +
                std::to_string(c.seq_len) + " (at most 2^30 tokens)");
  }
  const std::string name = DensePieceName(piece);
  PieceModules out;
  std::vector<Instruction*> inputs, weights;

  // Forward.
  out.forward = std::make_unique<ir::Module>(name + "_forward");
  {
    Builder b(out.forward->AddComputation("main", /*is_entry=*/true));
    std::vector<Instruction*> outs = AddPieceForward(b, c, piece, tokens, &inputs, &weights);
    // A pass-through (the encoder output beside the decoder) is not part of the forward work.
    out.forward->entry()->set_root(outs.front());
    ir::Verify(*out.forward);
  }

  // Backward: the forward again, the loss sum(out * d_out) that makes the VJP a gradient, the
  // gradients, and the accumulation.
  auto loss_module = std::make_unique<ir::Module>(name + "_backward");
  std::vector<std::string> wrt;
  {
    inputs.clear();
    weights.clear();
    Builder b(loss_module->AddComputation("main", /*is_entry=*/true));
    std::vector<Instruction*> outs = AddPieceForward(b, c, piece, tokens, &inputs, &weights);
    Instruction* loss = nullptr;
    if (piece == DensePiece::kSoftmaxLoss) {
      loss = outs.front();
    } else {
      int64_t next = static_cast<int64_t>(loss_module->entry()->parameters().size());
      for (size_t k = 0; k < outs.size(); ++k) {
        Instruction* d = b.Parameter(next++, outs[k]->shape, "d_output" + std::to_string(k));
        Instruction* term =
            b.Reduce(b.Mul(b.Convert(outs[k], DType::kF32), b.Convert(d, DType::kF32)), {0, 1, 2},
                     ir::ReduceKind::kAdd);
        loss = loss ? b.Add(loss, term) : term;
      }
    }
    loss_module->entry()->set_root(loss);
    for (Instruction* p : inputs) wrt.push_back(p->name);
    for (Instruction* p : weights) wrt.push_back(p->name);
  }
  out.backward = ir::Differentiate(*loss_module, wrt);
  {
    ir::Computation* entry = out.backward->entry();
    Builder b(entry);
    Instruction* root = entry->root();
    int64_t next = static_cast<int64_t>(entry->parameters().size());
    std::vector<Instruction*> results;
    for (size_t k = 0; k < inputs.size(); ++k) {
      results.push_back(b.GetTupleElement(root, 1 + static_cast<int64_t>(k)));
    }
    for (size_t k = 0; k < weights.size(); ++k) {
      Instruction* g = b.GetTupleElement(root, 1 + static_cast<int64_t>(inputs.size() + k));
      Instruction* acc = b.Parameter(next++, g->shape, weights[k]->name + ".accumulator");
      results.push_back(b.Add(acc, g));
    }
    entry->set_root(b.Tuple(results));
    ir::Verify(*out.backward);
  }

  // Optimizer.
  out.optimizer = std::make_unique<ir::Module>(name + "_optimizer");
  {
    Builder b(out.optimizer->AddComputation("main", /*is_entry=*/true));
    int64_t next = 0;
    std::vector<Instruction*> params, grads;
    std::vector<std::vector<Instruction*>> states;
    for (Instruction* w : weights) {
      params.push_back(b.Parameter(next++, w->shape, w->name));
      out.weight_bytes += w->shape.ByteSize();
    }
    for (Instruction* w : weights) {
      grads.push_back(b.Parameter(next++, w->shape, w->name + ".gradient"));
    }
    for (Instruction* w : weights) {
      states.emplace_back();
      for (const OptimizerSlot& s : OptimizerSlots(optimizer, w->name, w->shape, std::nullopt)) {
        Instruction* p = b.Parameter(next++, s.shape, s.name);
        if (s.range) p->argument_range = *s.range;
        states.back().push_back(p);
        out.state_bytes += s.shape.ByteSize();
      }
    }
    Instruction* step = b.Parameter(next++, Shape(DType::kS32, {}), "step");
    std::vector<Instruction*> updated, updated_state;
    for (size_t k = 0; k < params.size(); ++k) {
      Builder::ScopeGuard scope(b, "optimizer/" + params[k]->name);
      OptimizerUpdate u = AddOptimizerUpdate(b, optimizer, params[k], grads[k], states[k], step);
      updated.push_back(u.parameter);
      updated_state.insert(updated_state.end(), u.state.begin(), u.state.end());
    }
    updated.insert(updated.end(), updated_state.begin(), updated_state.end());
    out.optimizer->entry()->set_root(b.Tuple(updated));
    ir::Verify(*out.optimizer);
  }
  return out;
}

}  // namespace podsim::models
