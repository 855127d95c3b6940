#include "models/training_step.h"

#include <algorithm>

#include "base/error.h"
#include "ir/autodiff.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "partitioner/propagation.h"

namespace podsim::models {

using ir::Builder;
using ir::Instruction;

std::vector<std::string> FloatParameters(const ir::Module& module) {
  std::vector<std::string> names;
  for (const Instruction* p : module.entry()->parameters()) {
    if (!p->shape.is_tuple && (p->shape.dtype == ir::DType::kF32 ||
                               p->shape.dtype == ir::DType::kBF16)) {
      names.push_back(p->name);
    }
  }
  return names;
}

TrainingStep BuildTrainingStep(const ir::Module& loss_module,
                               const std::vector<std::string>& trainable,
                               const OptimizerConfig& optimizer,
                               const TrainingStepOptions& options) {
  const int64_t num_partitions = options.num_partitions;
  const std::string& loss = options.loss;
  const std::set<std::string>& layer_stacked = options.layer_stacked;
  TrainingStep out;
  out.has_gradients = options.return_gradients;
  out.trainable = trainable;
  if (num_partitions > 0) {
    std::unique_ptr<ir::Module> propagated = loss_module.Clone();
    partitioner::PropagateShardings(*propagated, num_partitions);
    out.module = ir::Differentiate(*propagated, trainable, loss, options.remat);
  } else {
    out.module = ir::Differentiate(loss_module, trainable, loss, options.remat);
  }
  out.module->set_name(loss_module.name() + "_train_step");
  ir::Computation* entry = out.module->entry();
  Instruction* grads = entry->root();  // tuple(loss, gradients...)
  std::vector<Instruction*> params = entry->parameters();
  out.num_model_parameters = static_cast<int64_t>(params.size());
  auto find = [&](const std::string& name) {
    for (Instruction* p : params) {
      if (p->name == name) return p;
    }
    throw Error("training step: no parameter '" + name + "'");  // Differentiate checked already
  };
  auto layer_dims = [&](const std::string& name) -> int64_t {
    return layer_stacked.count(name) ? 1 : 0;
  };
  for (const std::string& name : layer_stacked) {
    if (std::find(trainable.begin(), trainable.end(), name) == trainable.end()) {
      throw Error("training step: layer-stacked weight '" + name + "' is not trained");
    }
  }
  ir::Builder b(entry);
  int64_t number = out.num_model_parameters;
  // State parameters, then the step.
  std::vector<std::vector<Instruction*>> state(trainable.size());
  for (size_t k = 0; k < trainable.size(); ++k) {
    const Instruction* p = find(trainable[k]);
    Builder::ScopeGuard scope(b, "optimizer/" + p->name);
    for (OptimizerSlot& slot :
         OptimizerSlots(optimizer, p->name, p->shape, p->sharding, layer_dims(p->name))) {
      Instruction* s = b.Parameter(number++, slot.shape, slot.name);
      s->sharding = slot.sharding;
      s->argument_range = slot.range;
      slot.name = s->name;  // as the module made it unique
      state[k].push_back(s);
      out.state.push_back(std::move(slot));
    }
  }
  Instruction* step;
  {
    Builder::ScopeGuard scope(b, "optimizer");
    step = b.Parameter(number++, ir::Shape(ir::DType::kS32, {}), "step");
  }
  std::vector<Instruction*> results = {grads->operands[0]};  // the loss
  if (options.return_gradients) {
    results.insert(results.end(), grads->operands.begin() + 1, grads->operands.end());
  }
  std::vector<ir::OutputAlias> aliases;
  std::vector<int64_t> state_numbers;
  std::vector<Instruction*> new_state;
  for (size_t k = 0; k < trainable.size(); ++k) {
    Instruction* p = find(trainable[k]);
    OptimizerUpdate u = AddOptimizerUpdate(b, optimizer, p, grads->operands[1 + k], state[k], step,
                                           layer_dims(p->name));
    if (p->sharding && !u.parameter->sharding) u.parameter->sharding = p->sharding;
    aliases.push_back({static_cast<int64_t>(results.size()), p->parameter_number});
    results.push_back(u.parameter);
    for (size_t j = 0; j < u.state.size(); ++j) {
      if (state[k][j]->sharding && !u.state[j]->sharding) u.state[j]->sharding = state[k][j]->sharding;
      new_state.push_back(u.state[j]);
      state_numbers.push_back(state[k][j]->parameter_number);
    }
  }
  for (size_t j = 0; j < new_state.size(); ++j) {
    aliases.push_back({static_cast<int64_t>(results.size()), state_numbers[j]});
    results.push_back(new_state[j]);
  }
  out.module->set_output_aliases(std::move(aliases));
  entry->set_root(b.Tuple(results));
  out.module->RemoveDeadCode();  // the gradient tuple
  ir::Verify(*out.module);
  return out;
}

}  // namespace podsim::models
