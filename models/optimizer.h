#pragma once
// Optimizers written in the IR, as functions of (parameter, gradient, optimizer state, step):
// the update is part of the training-step program, so the partitioner shards it and the
// simulator times it and counts its memory like any other op.
//
// Adafactor (Shazeer & Stern 2018) as GShard trained with it (paper section 4; reference file
// "optimizer"): beta1 = 0 (no first moment), second-moment decay beta2_t = min(beta2,
// 1 - t^-0.8), update clipping at RMS 1.0, learning rate 1.0 with rsqrt decay after 10,000
// steps (rho_t = lr / sqrt(max(t, 10000)), which is Adafactor's relative step min(1e-2, 1/sqrt t))
// scaled by the parameter's RMS (alpha_t = rho_t * max(eps2, RMS(X))). With G2 = G^2 + eps1:
//   rank >= 2 (factored over the last two dims [.., R, C]; leading dims are a batch, so an
//   expert weight [E,M,H] keeps per-expert statistics):
//     r' = beta2_t r + (1 - beta2_t) mean_C(G2)     [.., R]
//     c' = beta2_t c + (1 - beta2_t) mean_R(G2)     [.., C]
//     V  = r' c' / mean_R(r')                       (the rank-1 estimate of Shazeer & Stern)
//   rank 0 or 1: v' = beta2_t v + (1 - beta2_t) G2, V = v'
//   U = G / sqrt(V); U /= max(1, RMS(U) / clip); X' = X - alpha_t U.
// State of a factored parameter: "<name>.adafactor_row" [.., R] and "<name>.adafactor_col"
// [.., C]; of an unfactored one "<name>.adafactor_v". Each is sharded like its parameter with
// the reduced dim dropped, when that dim is not split (otherwise propagation chooses).
//
// Adam: m' = b1 m + (1-b1) G, v' = b2 v + (1-b2) G^2, X' = X - lr m'/(1-b1^t) /
// (sqrt(v'/(1-b2^t)) + eps); state "<name>.adam_m", "<name>.adam_v" like the parameter.
// SGD: X' = X - lr G; no state.
//
// All arithmetic is f32; a bf16 parameter is converted to f32, updated and converted back.
// Instructions are scoped "optimizer/<parameter name>".

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/builder.h"
#include "ir/instruction.h"

namespace podsim::models {

enum class OptimizerKind { kSgd, kAdam, kAdafactor };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdafactor;
  // SGD and Adam: the step size. Adafactor: the scale of its relative step (1.0 in the paper).
  double learning_rate = 1.0;
  // Adafactor.
  double warmup_steps = 10000;      // the rsqrt decay starts here
  double decay_exponent = 0.8;      // beta2_t = 1 - t^-decay_exponent ...
  double beta2_cap = 0.99;          // ... capped at this
  double clipping_threshold = 1.0;  // update clipping: RMS(U) <= this
  double epsilon1 = 1e-30;          // added to G^2
  double epsilon2 = 1e-3;           // floor of the parameter scale
  // Adam.
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;

  // `base` with the fields of `json` ("kind": "adafactor" | "adam" | "sgd", and the fields
  // above by name); unknown keys and bad values are ConfigErrors naming `path`.key.
  static OptimizerConfig FromJson(const nlohmann::json& json, const std::string& path,
                                  OptimizerConfig base);
  nlohmann::json ToJson() const;
};

const char* OptimizerName(OptimizerKind kind);

// One optimizer state tensor of a parameter.
struct OptimizerSlot {
  std::string name;   // "<parameter>.adafactor_row", ...
  ir::Shape shape;    // f32
  std::optional<ir::Sharding> sharding;
  // The values it can hold, when narrower than any real: second moments are >= 0 (a training
  // step module gives its state parameters this range, so random arguments are meaningful).
  std::optional<std::pair<double, double>> range;
};

// The state `config` keeps for a parameter of `shape` named `name` with `sharding`. The first
// `layer_dims` dims of a stacked weight (the [R, ...] weights of a layer loop) index layers:
// each layer's slice is treated as its own weight, as a framework that keeps one variable per
// layer does (Adafactor factors a slice that is a matrix or more, and takes RMS and clipping
// per slice).
std::vector<OptimizerSlot> OptimizerSlots(const OptimizerConfig& config, const std::string& name,
                                          const ir::Shape& shape,
                                          const std::optional<ir::Sharding>& sharding,
                                          int64_t layer_dims = 0);

struct OptimizerUpdate {
  ir::Instruction* parameter = nullptr;  // the updated parameter, of the parameter's type
  std::vector<ir::Instruction*> state;   // the updated state, in OptimizerSlots' order
};

// Builds the update of `parameter` from its `gradient` (same shape), its `state` (instructions
// of OptimizerSlots' shapes, in order) and `step` (s32 scalar: the steps already taken, as a
// framework's global step counter; the formulas above use t = step + 1).
OptimizerUpdate AddOptimizerUpdate(ir::Builder& b, const OptimizerConfig& config,
                                   ir::Instruction* parameter, ir::Instruction* gradient,
                                   const std::vector<ir::Instruction*>& state,
                                   ir::Instruction* step, int64_t layer_dims = 0);

}  // namespace podsim::models
