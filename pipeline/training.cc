#include "pipeline/training.h"

#include <algorithm>
#include <memory>
#include <set>

#include "base/error.h"
#include "ir/cost.h"
#include "models/training_step.h"
#include "partitioner/spmd_partitioner.h"
#include "sim/program/simulate.h"

namespace podsim::pipeline {

namespace {

// The partitioned training step of `loss` under one layer-loop policy.
std::unique_ptr<ir::Module> PartitionedStep(const ir::Module& loss,
                                            const std::set<std::string>& stacked,
                                            const models::OptimizerConfig& optimizer,
                                            ir::LoopRemat remat, int64_t cores,
                                            int64_t micro_batches) {
  models::TrainingStepOptions step_options = models::StepOptions(cores, stacked);
  step_options.return_gradients = false;
  step_options.remat = remat;
  step_options.micro_batches = micro_batches;
  models::TrainingStep step =
      models::BuildTrainingStep(loss, models::FloatParameters(loss), optimizer, step_options);
  return std::move(partitioner::PropagateAndPartition(*step.module, cores).module);
}

}  // namespace

ConvTrainingRun RunConvNetTraining(const models::ConvNetConfig& model,
                                   const models::OptimizerConfig& optimizer,
                                   const topo::Topology& topology, const sim::SimOptions& options) {
  const int64_t cores = topology.num_cores();
  if (model.num_devices() != cores) {
    throw Error("the model's mesh " + std::to_string(model.mesh_rows) + "x" +
                std::to_string(model.mesh_cols) + " has " + std::to_string(model.num_devices()) +
                " partitions, topology '" + topology.name() + "' has " + std::to_string(cores) +
                " cores");
  }
  const std::unique_ptr<ir::Module> loss = models::BuildConvNetLoss(model);
  ConvTrainingRun run;
  const std::vector<std::string> weights = models::ConvNetWeights(*loss);
  {
    models::ConvNetConfig one = model;
    one.batch = 1;
    one.mesh_rows = one.mesh_cols = 1;
    one.annotate = false;
    const std::unique_ptr<ir::Module> one_loss = models::BuildConvNetLoss(one);
    models::TrainingStepOptions one_options = models::StepOptions(1);
    one_options.return_gradients = false;
    const models::TrainingStep one_step =
        models::BuildTrainingStep(*one_loss, weights, optimizer, one_options);
    sim::SimOptions one_core = options;
    one_core.num_partitions = 1;
    run.one_image = sim::SimulateMemory(*one_step.module, topology, one_core);
  }
  for (const auto* p : loss->entry()->parameters()) {
    for (const std::string& w : weights) {
      if (p->name == w) run.parameters += p->shape.NumElements();
    }
  }
  run.model_flops = 3 * ir::AnalyzeCost(*loss).per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;
  models::TrainingStepOptions step_options = models::StepOptions(cores);
  step_options.return_gradients = false;
  const models::TrainingStep step =
      models::BuildTrainingStep(*loss, weights, optimizer, step_options);
  const std::unique_ptr<ir::Module> spmd =
      std::move(partitioner::PropagateAndPartition(*step.module, cores).module);
  sim::SimOptions run_options = options;
  run_options.num_partitions = cores;
  run.result = sim::Simulate(*spmd, topology, run_options);
  for (const sim::CollectiveResult& c : run.result.collectives) {
    ConvTrainingRun::Traffic& t = run.traffic[c.kind];
    t.count += c.executions;
    t.bytes += c.bytes * c.executions;
    t.time_us += c.mean.micros() * static_cast<double>(c.executions);
  }
  return run;
}

std::optional<ir::LoopRemat> ParseRematChoice(const std::string& name) {
  if (name == "auto") return std::nullopt;
  return ir::ParseLoopRemat(name);
}

TrainingRun RunTraining(const models::GShardModelConfig& model,
                        const models::OptimizerConfig& optimizer,
                        std::optional<ir::LoopRemat> remat, const topo::Topology& topology,
                        const sim::SimOptions& options) {
  const int64_t cores = topology.num_cores();
  models::ValidateModelConfig(model);
  if (model.layer.num_devices != cores) {
    throw Error("the model is configured for " + std::to_string(model.layer.num_devices) +
                " devices, topology '" + topology.name() + "' has " + std::to_string(cores) +
                " cores");
  }
  sim::SimOptions run_options = options;
  run_options.num_partitions = cores;
  std::set<std::string> stacked;
  const std::unique_ptr<ir::Module> loss = models::BuildGShardModelLoss(model, &stacked);

  TrainingRun run;
  run.batch_tokens = model.layer.num_groups * model.layer.tokens_per_group;
  run.parameters = models::CountParameters(*loss).total;
  // The backward matmuls are twice the forward's; recomputation is not model work. The loss
  // module is one micro-batch's.
  run.model_flops = 3 * static_cast<double>(model.micro_batches) *
                    ir::AnalyzeCost(*loss).per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;

  // Most saved memory first: the first policy that fits recomputes the least.
  const std::vector<ir::LoopRemat> order = {ir::LoopRemat::kAll, ir::LoopRemat::kDots,
                                            ir::LoopRemat::kIterationInputs};
  std::unique_ptr<ir::Module> chosen;
  for (ir::LoopRemat policy : order) {
    if (remat && policy != ir::LoopRemat::kAll && policy != *remat) continue;
    std::unique_ptr<ir::Module> spmd =
        PartitionedStep(*loss, stacked, optimizer, policy, cores, model.micro_batches);
    sim::MemoryResult memory = sim::SimulateMemory(*spmd, topology, run_options);
    run.candidates.push_back({policy, memory.peak_bytes, !memory.oom});
    if (policy == ir::LoopRemat::kAll) run.no_remat_peak_bytes = memory.peak_bytes;
    // Forced: the given policy. Automatic: the first that fits, else the smallest peak.
    const bool take = remat ? policy == *remat
                            : !memory.oom || chosen == nullptr ||
                                  memory.peak_bytes < run.memory.peak_bytes;
    if (take) {
      chosen = std::move(spmd);
      run.remat = policy;
      run.memory = std::move(memory);
    }
    if (!remat && !run.memory.oom) break;
  }
  run.memory_saved_bytes = run.no_remat_peak_bytes - run.memory.peak_bytes;

  run.result = sim::Simulate(*chosen, topology, run_options);
  run.memory = run.result.memory;
  const double step_us = run.result.step_time.micros();
  double recompute_us = 0;
  for (const sim::CategoryResult& c : run.result.categories) {
    if (c.category == "recompute" || c.category.rfind("recompute/", 0) == 0) {
      recompute_us += c.modelled().micros();
    }
  }
  if (step_us > 0) run.recompute_fraction = recompute_us / step_us;
  return run;
}

}  // namespace podsim::pipeline
