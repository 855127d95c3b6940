#pragma once
// The training-step program: forward + loss, backward (ir::Differentiate), and the optimizer
// update (models/optimizer.h) of every trainable parameter, in one module that the SPMD
// partitioner shards and the simulator runs like any other.
//
//   auto loss = BuildMoeLayerPairLoss(config, {});                  // root: the scalar loss
//   TrainingStep step = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{});
//
// The module's entry parameters: the loss module's parameters (same numbers, names, shardings),
// then the optimizer state of each trainable parameter in `trainable` order (OptimizerSlots),
// then "step" (s32[], the steps already taken: 0 on the first step). Its root:
//   tuple(loss, gradient of each trainable parameter... (unless options.return_gradients is
//         false), updated parameter..., updated state...)
// so one run of the module is one training step, and feeding the updated parameters and state
// back (with step + 1) runs the next. Scopes: forward instructions keep the loss module's
// scopes, backward ones are "backward/<scope>", the update "optimizer/<parameter>".

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/autodiff.h"
#include "ir/module.h"
#include "models/optimizer.h"

namespace podsim::models {

struct TrainingStepOptions {
  // > 0: the loss module's shardings are first propagated over this many partitions
  // (partitioner::PropagateShardings), so that every gradient, not only those of annotated
  // tensors, is sharded like its primal: the backward pass then mirrors the forward pass's
  // layout (the two AllToAlls of an MoE layer come back as two, and a replicated weight's
  // gradient is one AllReduce of its partial sums), as an SPMD training step is.
  int64_t num_partitions = 0;
  std::string loss;  // the loss instruction's name; "" = the loss module's root
  // Trainable weights whose dim 0 indexes the layers of a layer loop: the optimizer treats each
  // layer's slice as its own weight (OptimizerSlots' layer_dims = 1).
  std::set<std::string> layer_stacked;
  // Also return the gradients (for tests and checks). A training step as a framework runs it
  // returns only the loss and the updated values, so its gradients die after the update.
  bool return_gradients = true;
  // What the layer loops save for the backward pass (ir::LoopRemat): per-layer recomputation by
  // default.
  ir::LoopRemat remat = ir::LoopRemat::kIterationInputs;
  // > 1: gradient accumulation. The loss module is one micro-batch's loss; the step runs its
  // forward and backward pass once per micro-batch in a loop (ir kLoop, the micro-batches one
  // after another, so only one micro-batch's activations are live), sums the gradients, and
  // updates with their mean. Every entry parameter not in `trainable` is a micro-batch input:
  // the step takes it stacked, [micro_batches, ...its shape], iteration i reading row i, sharded
  // as the loss module shards it with the stacking dim whole. The loss returned is the
  // micro-batches' mean, the whole batch's loss when the loss is a mean over equal micro-batches.
  int64_t micro_batches = 1;
};

// Options with num_partitions and layer_stacked set, the rest defaults.
inline TrainingStepOptions StepOptions(int64_t num_partitions,
                                       std::set<std::string> layer_stacked = {}) {
  TrainingStepOptions o;
  o.num_partitions = num_partitions;
  o.layer_stacked = std::move(layer_stacked);
  return o;
}

struct TrainingStep {
  std::unique_ptr<ir::Module> module;
  std::vector<std::string> trainable;  // the parameters updated, in root order
  std::vector<OptimizerSlot> state;    // the optimizer state parameters, in order
  int64_t num_model_parameters = 0;    // entry parameters before the state
  bool has_gradients = true;           // TrainingStepOptions::return_gradients
  // Root tuple indices.
  int64_t GradientIndex(int64_t k) const { return 1 + k; }  // when has_gradients
  int64_t UpdatedParameterIndex(int64_t k) const {
    return 1 + (has_gradients ? static_cast<int64_t>(trainable.size()) : 0) + k;
  }
  int64_t UpdatedStateIndex(int64_t k) const {
    return UpdatedParameterIndex(static_cast<int64_t>(trainable.size())) + k;
  }
};

// Builds the training step of `loss_module`, whose loss instruction is the f32 scalar to
// minimise, for the entry parameters named in `trainable`. The updated weights and optimizer
// state are donated (ir::OutputAlias): each is written over its parameter. Throws podsim::Error
// naming the parameter or instruction at fault (ir::Differentiate's errors).
TrainingStep BuildTrainingStep(const ir::Module& loss_module,
                               const std::vector<std::string>& trainable,
                               const OptimizerConfig& optimizer,
                               const TrainingStepOptions& options = {});

// The names of the module's float (f32, bf16) entry parameters, in parameter order: what a model
// trains by default (token ids and labels are integers).
std::vector<std::string> FloatParameters(const ir::Module& module);

}  // namespace podsim::models
