#include "models/optimizer.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "base/config.h"
#include "base/error.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::ReduceKind;
using ir::Shape;
using ir::Sharding;

const char* OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kAdafactor:
      return "adafactor";
  }
  return "?";
}

OptimizerConfig OptimizerConfig::FromJson(const nlohmann::json& json, const std::string& path,
                                          OptimizerConfig base) {
  JsonReader r(json, path);
  OptimizerConfig& c = base;
  if (r.Has("kind")) {
    const std::string kind = r.Choice("kind", {"adafactor", "adam", "sgd"});
    c.kind = kind == "sgd" ? OptimizerKind::kSgd
             : kind == "adam" ? OptimizerKind::kAdam
                              : OptimizerKind::kAdafactor;
  }
  c.learning_rate = r.Double("learning_rate", c.learning_rate, Limit::Positive());
  c.warmup_steps = r.Double("warmup_steps", c.warmup_steps, Limit::AtLeast(1));
  c.decay_exponent = r.Double("decay_exponent", c.decay_exponent, Limit::Positive());
  c.beta2_cap = r.Double("beta2_cap", c.beta2_cap, Limit::Between(0, 1));
  c.clipping_threshold = r.Double("clipping_threshold", c.clipping_threshold, Limit::Positive());
  c.epsilon1 = r.Double("epsilon1", c.epsilon1, Limit::NonNegative());
  c.epsilon2 = r.Double("epsilon2", c.epsilon2, Limit::NonNegative());
  c.adam_beta1 = r.Double("adam_beta1", c.adam_beta1, Limit::Between(0, 0.999999));
  c.adam_beta2 = r.Double("adam_beta2", c.adam_beta2, Limit::Between(0, 0.999999));
  c.adam_epsilon = r.Double("adam_epsilon", c.adam_epsilon, Limit::Positive());
  r.Finish();
  return c;
}

nlohmann::json OptimizerConfig::ToJson() const {
  nlohmann::json j = {{"kind", OptimizerName(kind)}, {"learning_rate", learning_rate}};
  if (kind == OptimizerKind::kAdafactor) {
    j["warmup_steps"] = warmup_steps;
    j["decay_exponent"] = decay_exponent;
    j["beta2_cap"] = beta2_cap;
    j["clipping_threshold"] = clipping_threshold;
    j["epsilon1"] = epsilon1;
    j["epsilon2"] = epsilon2;
  } else if (kind == OptimizerKind::kAdam) {
    j["adam_beta1"] = adam_beta1;
    j["adam_beta2"] = adam_beta2;
    j["adam_epsilon"] = adam_epsilon;
  }
  return j;
}

namespace {

// Whether a weight of shape `s` whose first `layer_dims` dims index layers gets factored
// statistics: each layer's slice is a matrix or more.
bool Factored(const Shape& s, int64_t layer_dims) { return s.rank() - layer_dims >= 2; }

// `s` with tensor dim `d` removed, when `s` does not split that dim; nullopt otherwise (or when
// there is no sharding): the partitioner's propagation then chooses.
std::optional<Sharding> DropDim(const std::optional<Sharding>& s, int64_t d) {
  if (!s) return std::nullopt;
  if (s->kind == Sharding::Kind::kReplicated) return s;
  if (s->kind != Sharding::Kind::kTiled || s->tile_dims.at(d) != 1) return std::nullopt;
  std::vector<int64_t> tiles = s->tile_dims;
  tiles.erase(tiles.begin() + d);
  return Sharding::Tiled(std::move(tiles), s->devices, s->last_tile_dim_replicate);
}

std::vector<int64_t> Without(std::vector<int64_t> dims, int64_t d) {
  dims.erase(dims.begin() + d);
  return dims;
}

std::vector<int64_t> AllBut(int64_t rank, int64_t d) {
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != d) keep.push_back(i);
  }
  return keep;
}

// Scalar and elementwise helpers over f32.
struct F32 {
  Builder& b;
  Instruction* Scalar(double v) { return b.ConstantScalar(DType::kF32, v); }
  Instruction* Fill(Instruction* scalar, const Shape& like) {
    return like.rank() == 0 ? scalar : b.BroadcastScalar(scalar, like.dims);
  }
  Instruction* Fill(double v, const Shape& like) { return Fill(Scalar(v), like); }
  // beta * state + (1 - beta) * x, beta a scalar instruction.
  Instruction* Ema(Instruction* beta, Instruction* state, Instruction* x) {
    Instruction* one_minus = b.Sub(Scalar(1), beta);
    return b.Add(b.Mul(Fill(beta, state->shape), state),
                 b.Mul(Fill(one_minus, x->shape), x));
  }
  // Mean of x over `dim`.
  Instruction* MeanOver(Instruction* x, int64_t dim) {
    Instruction* sum = b.Reduce(x, {dim}, ReduceKind::kAdd);
    return b.Div(sum, Fill(static_cast<double>(x->shape.dims[dim]), sum->shape));
  }
  // sqrt(mean(x^2)) over every element of each layer's slice (the dims from `layer_dims` on):
  // a scalar, or [layers...].
  Instruction* Rms(Instruction* x, int64_t layer_dims) {
    Instruction* sq = b.Mul(x, x);
    if (x->shape.rank() == layer_dims) return b.Sqrt(sq);
    std::vector<int64_t> slice(static_cast<size_t>(x->shape.rank() - layer_dims));
    std::iota(slice.begin(), slice.end(), layer_dims);
    Instruction* sum = b.Reduce(sq, slice, ReduceKind::kAdd);
    double count = 1;
    for (int64_t d : slice) count *= static_cast<double>(x->shape.dims[d]);
    return b.Sqrt(b.Div(sum, Fill(count, sum->shape)));
  }
  // A per-layer value ([layers...] or a scalar) broadcast over `like`.
  Instruction* PerLayer(Instruction* v, const Shape& like) {
    if (v->shape.rank() == 0) return Fill(v, like);
    std::vector<int64_t> dims(static_cast<size_t>(v->shape.rank()));
    std::iota(dims.begin(), dims.end(), 0);
    return b.Broadcast(v, like.dims, dims);
  }
};

Instruction* AsF32(Builder& b, Instruction* x) {
  return x->shape.dtype == DType::kF32 ? x : b.Convert(x, DType::kF32);
}

void CheckState(const std::vector<Instruction*>& state, const std::vector<OptimizerSlot>& slots,
                const Instruction* parameter) {
  if (state.size() != slots.size()) {
    throw Error("optimizer: %" + parameter->name + " needs " + std::to_string(slots.size()) +
                " state tensors, got " + std::to_string(state.size()));
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    if (state[k]->shape != slots[k].shape) {
      throw Error("optimizer: state " + slots[k].name + " must be " + slots[k].shape.ToString() +
                  ", got %" + state[k]->name + " " + state[k]->shape.ToString());
    }
  }
}

}  // namespace

std::vector<OptimizerSlot> OptimizerSlots(const OptimizerConfig& config, const std::string& name,
                                          const Shape& shape,
                                          const std::optional<Sharding>& sharding,
                                          int64_t layer_dims) {
  const Shape f32(DType::kF32, shape.dims);
  // Second moments: means of squares, so >= 0; [0, 1) covers gradients of order 1.
  const std::pair<double, double> kMoment = {0.0, 1.0};
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return {};
    case OptimizerKind::kAdam:
      return {{name + ".adam_m", f32, sharding, std::nullopt},
              {name + ".adam_v", f32, sharding, kMoment}};
    case OptimizerKind::kAdafactor:
      break;
  }
  if (layer_dims < 0 || layer_dims > shape.rank()) {
    throw Error("optimizer: %" + name + " " + shape.ToString() + " cannot have " +
                std::to_string(layer_dims) + " layer dims");
  }
  if (!Factored(shape, layer_dims)) return {{name + ".adafactor_v", f32, sharding, kMoment}};
  const int64_t r = shape.rank();
  return {{name + ".adafactor_row", Shape(DType::kF32, Without(shape.dims, r - 1)),
           DropDim(sharding, r - 1), kMoment},
          {name + ".adafactor_col", Shape(DType::kF32, Without(shape.dims, r - 2)),
           DropDim(sharding, r - 2), kMoment}};
}

OptimizerUpdate AddOptimizerUpdate(Builder& b, const OptimizerConfig& config,
                                   Instruction* parameter, Instruction* gradient,
                                   const std::vector<Instruction*>& state, Instruction* step,
                                   int64_t layer_dims) {
  if (gradient->shape.dims != parameter->shape.dims) {
    throw Error("optimizer: gradient %" + gradient->name + " " + gradient->shape.ToString() +
                " does not match parameter %" + parameter->name + " " +
                parameter->shape.ToString());
  }
  if (step->shape != Shape(DType::kS32, {})) {
    throw Error("optimizer: the step %" + step->name + " must be s32[], got " +
                step->shape.ToString());
  }
  CheckState(state,
             OptimizerSlots(config, parameter->name, parameter->shape, parameter->sharding,
                            layer_dims),
             parameter);
  Builder::ScopeGuard scope(b, "optimizer/" + parameter->name);
  F32 f{b};
  // t = step + 1, exact in f32 up to 2^24 steps.
  step = b.Add(b.Convert(step, DType::kF32), f.Scalar(1));
  Instruction* x = AsF32(b, parameter);
  Instruction* g = AsF32(b, gradient);
  const Shape& s = x->shape;
  OptimizerUpdate out;
  Instruction* delta = nullptr;  // X' = X - delta
  switch (config.kind) {
    case OptimizerKind::kSgd:
      delta = b.Mul(f.Fill(config.learning_rate, s), g);
      break;
    case OptimizerKind::kAdam: {
      Instruction* b1 = f.Scalar(config.adam_beta1);
      Instruction* b2 = f.Scalar(config.adam_beta2);
      Instruction* m = f.Ema(b1, state[0], g);
      Instruction* v = f.Ema(b2, state[1], b.Mul(g, g));
      // Bias corrections 1 - beta^t.
      Instruction* c1 = b.Sub(f.Scalar(1), b.Pow(b1, step));
      Instruction* c2 = b.Sub(f.Scalar(1), b.Pow(b2, step));
      Instruction* m_hat = b.Div(m, f.Fill(c1, s));
      Instruction* v_hat = b.Div(v, f.Fill(c2, s));
      Instruction* denom = b.Add(b.Sqrt(v_hat), f.Fill(config.adam_epsilon, s));
      delta = b.Mul(f.Fill(config.learning_rate, s), b.Div(m_hat, denom));
      out.state = {m, v};
      break;
    }
    case OptimizerKind::kAdafactor: {
      // beta2_t = min(cap, 1 - t^-p); rho_t = lr * rsqrt(max(t, warmup)).
      Instruction* decay = b.Sub(f.Scalar(1), b.Pow(step, f.Scalar(-config.decay_exponent)));
      Instruction* beta2 = b.Min(decay, f.Scalar(config.beta2_cap));
      Instruction* rho = b.Mul(f.Scalar(config.learning_rate),
                               b.Rsqrt(b.Max(step, f.Scalar(config.warmup_steps))));
      Instruction* g2 = b.Add(b.Mul(g, g), f.Fill(config.epsilon1, s));
      Instruction* v;
      if (Factored(s, layer_dims)) {
        const int64_t r = s.rank();
        Instruction* row = f.Ema(beta2, state[0], f.MeanOver(g2, r - 1));  // [.., R]
        Instruction* col = f.Ema(beta2, state[1], f.MeanOver(g2, r - 2));  // [.., C]
        Instruction* row_mean = f.MeanOver(row, r - 2);                    // [..]
        Instruction* row_norm = b.Div(row, b.Broadcast(row_mean, row->shape.dims,
                                                       AllBut(r - 1, r - 2)));
        v = b.Mul(b.Broadcast(row_norm, s.dims, AllBut(r, r - 1)),
                  b.Broadcast(col, s.dims, AllBut(r, r - 2)));
        out.state = {row, col};
      } else {
        v = f.Ema(beta2, state[0], g2);
        out.state = {v};
      }
      Instruction* u = b.Mul(g, b.Rsqrt(v));
      // Update clipping: U / max(1, RMS(U) / d), per layer.
      Instruction* rms_u = f.Rms(u, layer_dims);
      Instruction* clip = b.Max(f.Fill(1, rms_u->shape),
                                b.Div(rms_u, f.Fill(config.clipping_threshold, rms_u->shape)));
      u = b.Div(u, f.PerLayer(clip, s));
      Instruction* rms_x = f.Rms(x, layer_dims);
      Instruction* alpha =
          b.Mul(f.Fill(rho, rms_x->shape), b.Max(f.Fill(config.epsilon2, rms_x->shape), rms_x));
      delta = b.Mul(f.PerLayer(alpha, s), u);
      break;
    }
  }
  Instruction* updated = b.Sub(x, delta);
  if (parameter->shape.dtype != DType::kF32) updated = b.Convert(updated, parameter->shape.dtype);
  out.parameter = updated;
  return out;
}

}  // namespace podsim::models
