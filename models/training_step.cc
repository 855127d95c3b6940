#include "models/training_step.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "ir/autodiff.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "partitioner/propagation.h"

namespace podsim::models {

using ir::Builder;
using ir::Instruction;

namespace {

// Gradient accumulation (TrainingStepOptions::micro_batches): the differentiated entry, whose
// root is tuple(loss, gradients...), becomes the body of a loop of `k` iterations that adds each
// micro-batch's loss and gradients to sums it carries; the entry runs the loop over the stacked
// inputs and returns tuple(mean loss, mean gradients...). The old root is left dead.
Instruction* AccumulateMicroBatches(ir::Module& m, const std::vector<std::string>& trainable,
                                    int64_t k) {
  ir::Computation* entry = m.entry();
  const Instruction* root = entry->root();
  const std::vector<Instruction*> params = entry->parameters();
  const std::set<std::string> trained(trainable.begin(), trainable.end());
  const size_t n = root->operands.size();  // the loss, then the gradients
  std::string name = "micro_batch";
  for (int j = 1; m.FindComputation(name) != nullptr; ++j)
    name = "micro_batch." + std::to_string(j);
  ir::Computation* body = m.AddComputation(name);
  Builder bb(body);
  Instruction* iteration = bb.Parameter(0, ir::Shape(ir::DType::kS32, {}), "micro_batch");
  std::vector<Instruction*> carried_in;
  for (size_t j = 0; j < n; ++j) {
    const Instruction* v = root->operands[j];
    Instruction* sum = bb.Parameter(static_cast<int64_t>(1 + j), v->shape, v->name + ".sum");
    sum->sharding = v->sharding;
    carried_in.push_back(sum);
  }
  // The body's copy of each entry instruction; an input reads its micro-batch's row.
  std::unordered_map<const Instruction*, Instruction*> value;
  Instruction* zero = nullptr;
  for (size_t j = 0; j < params.size(); ++j) {
    const Instruction* p = params[j];
    const bool input = trained.count(p->name) == 0;
    ir::Shape shape = p->shape;
    if (input) shape.dims.insert(shape.dims.begin(), k);
    Instruction* q = bb.Parameter(static_cast<int64_t>(1 + n + j), shape, p->name);
    q->sharding = input ? ir::StackedSharding(p->sharding) : p->sharding;
    carried_in.push_back(q);
    value[p] = q;
    if (!input) continue;
    if (zero == nullptr) zero = bb.ConstantScalar(ir::DType::kS32, 0);
    std::vector<Instruction*> starts(shape.dims.size(), zero);
    starts[0] = iteration;
    std::vector<int64_t> sizes = shape.dims;
    sizes[0] = 1;
    Instruction* row = bb.Reshape(bb.DynamicSlice(q, starts, sizes), p->shape.dims);
    row->sharding = p->sharding;
    value[p] = row;
  }
  for (const auto& owned : entry->instructions()) {
    const Instruction& x = *owned;
    if (x.opcode == ir::Opcode::kParameter) continue;
    auto copy = std::make_unique<Instruction>(x);
    for (Instruction*& o : copy->operands) o = value.at(o);
    copy->parent = nullptr;
    value[&x] = bb.Add(std::move(copy), /*infer_shape=*/false);
  }
  std::vector<Instruction*> carried_out = carried_in;
  {
    Builder::ScopeGuard scope(bb, "accumulate");
    for (size_t j = 0; j < n; ++j) {
      carried_out[j] = bb.Add(carried_in[j], value.at(root->operands[j]));
      carried_out[j]->sharding = carried_in[j]->sharding;
    }
  }
  body->set_root(bb.Tuple(carried_out));

  // The entry: the inputs stacked, the loop, the means.
  for (Instruction* p : params) {
    if (trained.count(p->name) != 0) continue;
    p->shape.dims.insert(p->shape.dims.begin(), k);
    p->sharding = ir::StackedSharding(p->sharding);
  }
  Builder b(entry);
  Builder::ScopeGuard scope(b, "accumulate");
  std::vector<Instruction*> init;
  for (size_t j = 0; j < n; ++j) {
    init.push_back(b.Zeros(root->operands[j]->shape));
    init.back()->sharding = root->operands[j]->sharding;
  }
  init.insert(init.end(), params.begin(), params.end());
  Instruction* loop = b.Loop(init, body, k);
  std::vector<Instruction*> means;
  for (size_t j = 0; j < n; ++j) {
    const Instruction* v = root->operands[j];
    Instruction* inverse = b.Full(v->shape, 1.0 / static_cast<double>(k));
    means.push_back(b.Mul(b.GetTupleElement(loop, static_cast<int64_t>(j)), inverse));
    means.back()->sharding = v->sharding;
  }
  return b.Tuple(means);
}

}  // namespace

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
  if (options.micro_batches < 1) {
    throw Error("training step: micro_batches must be >= 1, not " +
                std::to_string(options.micro_batches));
  }
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
  Instruction* grads = options.micro_batches == 1  // tuple(loss, gradients...)
                           ? entry->root()
                           : AccumulateMicroBatches(*out.module, trainable, options.micro_batches);
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
