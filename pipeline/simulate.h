#pragma once
// The one path from a config and a program to a simulated result, called alike by the CLI
// (`podsim simulate`), the experiment runners and the tests:
//
//   config -> topology, simulator options -> module (given, or built from a model config)
//          -> classify -> propagate and partition when it is a global annotated module
//          -> simulate on every device -> (functional mode) check against the interpreter and
//             the unpartitioned module -> Simulation
//
// Nothing here prints or writes files: report/ turns the result into text and files.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/literal.h"
#include "ir/module.h"
#include "models/moe_transformer.h"
#include "partitioner/equivalence.h"
#include "partitioner/spmd_partitioner.h"
#include "sim/program/run_result.h"
#include "sim/program/sim_options.h"
#include "sim/program/simulate.h"
#include "topologies/topology.h"

namespace podsim::pipeline {

// The config of one run as JSON: `defaults` (sim::SimOptions::ToJson) with "topology" set to the
// expanded topology config value, then `overrides` ("PATH=VALUE", base/config.h) applied in
// order, so that an override reaches every field of the device, the topology and the options.
// Unless `device_given` (the caller chose defaults.device), the device is the one the topology
// names ("device": a preset of its chip generation), when it names one.
nlohmann::json SimulationConfig(const sim::SimOptions& defaults, const nlohmann::json& topology,
                                const std::vector<std::string>& overrides,
                                bool device_given = false);

// One simulated run and everything a caller may want to show of it.
struct Simulation {
  std::unique_ptr<topo::Topology> topology;
  sim::SimOptions options;  // validated; num_partitions resolved (0 -> every core)
  sim::ProgramKind kind = sim::ProgramKind::kSpmd;
  // The module as given. When it was a global annotated module on several partitions, it was
  // partitioned here: `partitioned` holds the SPMD program that ran.
  std::unique_ptr<ir::Module> module;
  std::optional<partitioner::PartitionResult> partitioned;
  sim::RunResult result;
  // Functional mode on a module partitioned here: its outputs against the unpartitioned module
  // run on the same (global) arguments.
  std::optional<partitioner::EquivalenceReport> equivalence;
  // Lines a user should be told on stderr: that the module was partitioned here, or that an
  // unannotated module runs replicated ("note: ...").
  std::vector<std::string> notes;

  // The SPMD program that was simulated.
  const ir::Module& spmd() const { return partitioned ? *partitioned->module : *module; }
  // False when a functional check failed (true when there was none).
  bool ok() const;
};

// Runs `module` with the config of SimulationConfig. Errors (a bad config value, a mesh that
// does not fit the topology, a sharding the partitioner rejects) are podsim::Errors naming
// the config path or the instruction.
Simulation Simulate(std::unique_ptr<ir::Module> module, const nlohmann::json& config);

// The GShard MoE layer pair of `model` (models::BuildMoeLayerPair), partitioned for
// options.num_partitions (0: every core of `topology`) and simulated on `topology`.
sim::RunResult SimulateMoeLayerPair(const models::MoeLayerConfig& model,
                                    const topo::Topology& topology, sim::SimOptions options);

}  // namespace podsim::pipeline
