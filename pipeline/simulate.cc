#include "pipeline/simulate.h"

#include "base/config.h"
#include "base/error.h"
#include "ir/interpreter.h"
#include "sim/device/device.h"
#include "sim/program/simulate.h"
#include "topologies/load.h"

namespace podsim::pipeline {

nlohmann::json SimulationConfig(const sim::SimOptions& defaults, const nlohmann::json& topology,
                                const std::vector<std::string>& overrides, bool device_given) {
  nlohmann::json config = defaults.ToJson();
  config["topology"] = topo::ExpandTopologyConfig(topology, "topology");
  if (const auto it = config["topology"].find("device");
      !device_given && it != config["topology"].end()) {
    config["device"] = sim::DeviceSpecFromConfig(*it, "topology.device").ToJson();
  }
  for (const std::string& assignment : overrides) ApplyOverride(config, assignment);
  return config;
}

bool Simulation::ok() const {
  if (result.functional && !result.functional->ok()) return false;
  return !equivalence || equivalence->ok();
}

Simulation Simulate(std::unique_ptr<ir::Module> module, const nlohmann::json& config) {
  Simulation s;
  s.topology = topo::LoadTopology(config.at("topology"), "topology");
  nlohmann::json sim_config = config;
  sim_config.erase("topology");
  s.options = sim::SimOptions::FromJson(sim_config, "");
  if (s.options.num_partitions > s.topology->num_cores()) {
    throw ConfigError("--mesh: " + std::to_string(s.options.num_partitions) +
                      " partitions do not fit topology '" + s.topology->name() + "' (" +
                      std::to_string(s.topology->num_cores()) + " cores)");
  }
  s.options.Validate("");
  if (s.options.num_partitions == 0) s.options.num_partitions = s.topology->num_cores();
  s.module = std::move(module);

  sim::SimOptions run_options = s.options;
  std::vector<ir::Literal> global_args;
  s.kind = sim::ClassifyProgram(*s.module);
  const int64_t n = s.options.num_partitions;
  if (n > 1 && s.kind == sim::ProgramKind::kUnannotated) {
    s.notes.push_back("note: module '" + s.module->name() + "' has no shardings, collectives or " +
                      "partition-id: each of the " + std::to_string(n) +
                      " partitions runs the whole program (replicated); annotate it (podsim "
                      "partition) to split the work, or pass --mesh 1");
  }
  if (n > 1 && s.kind == sim::ProgramKind::kGlobalAnnotated) {
    s.partitioned = partitioner::PropagateAndPartition(*s.module, n);
    s.notes.push_back("partitioned " + s.module->name() + " for " + std::to_string(n) +
                      " partitions: " + std::to_string(s.module->InstructionCount()) + " -> " +
                      std::to_string(s.partitioned->module->InstructionCount()) +
                      " instructions");
    if (s.options.functional) {
      global_args = ir::RandomArguments(*s.module, s.options.functional_seed);
      run_options.functional_args = partitioner::ShardArguments(*s.partitioned, global_args);
    }
  }
  s.result = sim::Simulate(s.spmd(), *s.topology, run_options);
  if (s.result.functional && s.partitioned) {
    s.equivalence = partitioner::CompareOutputs(*s.module, *s.partitioned, global_args,
                                                s.result.functional->outputs);
  }
  return s;
}

sim::RunResult SimulateMoeLayerPair(const models::MoeLayerConfig& model,
                                    const topo::Topology& topology, sim::SimOptions options) {
  if (options.num_partitions == 0) options.num_partitions = topology.num_cores();
  std::unique_ptr<ir::Module> m = models::BuildMoeLayerPair(model);
  const partitioner::PartitionResult p =
      partitioner::PropagateAndPartition(*m, options.num_partitions);
  options.Validate("sim");
  return sim::Simulate(*p.module, topology, options);
}

}  // namespace podsim::pipeline
