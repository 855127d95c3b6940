// podsim simulate FILE.hlo --topology NAME_OR_FILE [--mesh D] [--device NAME_OR_FILE]
//                 [--network MODEL] [--trace T.json] [--json] [--out DIR] [--check]
//                 [--no-fusion] [--sync] [--set PATH=VALUE]...
// Runs an SPMD module on every device of a pod (sim/program_runner.h) and prints a summary, or
// the results JSON, and writes results.json, CSV tables and a Chrome trace when asked. A global
// module with sharding annotations is partitioned for the mesh first (as podsim partition).
// --check also carries real tensors through the run (small pods) and checks every collective
// against its schedule's functional run and the outputs against the interpreter: for a module
// partitioned here, against the unpartitioned module run on the same (global) arguments.

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/module_io.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "partitioner/equivalence.h"
#include "partitioner/sharding_util.h"
#include "partitioner/spmd_partitioner.h"
#include "sim/program_runner.h"
#include "sim/results.h"
#include "topologies/json_reader.h"
#include "topologies/load.h"

namespace podsim::cli {
namespace {

void PrintUsage(std::ostream& os, const po::options_description& visible) {
  os << "usage: podsim simulate FILE.hlo --topology NAME_OR_FILE [options]\n"
        "FILE is an SPMD module (IR text or .pb): the partitioner's output, or a program written\n"
        "per partition with partition-id and collectives; or a global module with sharding\n"
        "annotations, which is partitioned for the mesh first (podsim partition).\n\n"
     << visible;
}

void PrintCheck(const sim::FunctionalResult& f, std::ostream& os) {
  os << "check: outputs vs reference interpreter (InterpretSpmd): max error "
     << f.max_error_vs_interpreter << (f.max_error_vs_interpreter == 0 ? " ok\n" : " MISMATCH\n");
  for (const sim::CollectiveCheck& c : f.collectives) {
    os << "check: %" << c.instruction << " x" << c.executions << ": ";
    if (!c.checked) {
      os << (c.note.empty() ? "not executed" : c.note) << "\n";
      continue;
    }
    os << "schedule vs interpreter max error " << c.max_abs_error << " <= " << c.tolerance
       << (c.ok() ? " ok" : " MISMATCH") << (c.note.empty() ? "" : " (" + c.note + ")") << "\n";
  }
}

}  // namespace

int SimulateCommand(const Args& args) {
  po::options_description visible("options");
  // clang-format off
  visible.add_options()
      ("help,h", "show this help")
      ("topology", po::value<std::string>(), "topology preset name or JSON file (required)")
      ("mesh", po::value<std::string>(), "partitions: 128 or 8x16 (default: every core)")
      ("device", po::value<std::string>(), "device preset or JSON file (default tpu-v3-core)")
      ("network", po::value<std::string>(), "network model: analytic, flow (default), packet")
      ("trace", po::value<std::string>(), "write a Chrome trace (Perfetto) to this file")
      ("json", "print results.json instead of the summary")
      ("out", po::value<std::string>(), "write results.json, CSV tables (and trace.json) here")
      ("check", "functional mode: real tensors, checked against the interpreter (small pods)")
      ("no-fusion", "do not fuse elementwise ops")
      ("sync", "collectives block the device (no async overlap)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "PATH=VALUE: override a config value, e.g. device.hbm_bandwidth=9e11, "
       "topology.link_bandwidth=2e11, collectives.all-to-all.algorithm=dim-staged (repeatable)");
  // clang-format on
  po::options_description hidden;
  hidden.add_options()("module", po::value<std::string>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("module", 1);
  po::variables_map vm;
  if (!ParseOptions(args, all, positional, vm)) {
    PrintUsage(std::cout, visible);
    return 0;
  }
  if (!vm.count("module")) throw Error("no module file given (see podsim simulate --help)");
  if (!vm.count("topology")) throw Error("--topology is required (a preset name or a JSON file)");

  // The config: the simulator options with the device and topology expanded, so that --set can
  // reach every field; then the overrides, in order.
  sim::SimOptions defaults;
  if (vm.count("device")) {
    defaults.device = sim::DeviceSpecFromConfig(vm["device"].as<std::string>(), "device");
  }
  if (vm.count("network")) defaults.network = vm["network"].as<std::string>();
  if (vm.count("mesh")) {
    defaults.num_partitions =
        partitioner::DeviceMesh::Parse(vm["mesh"].as<std::string>()).num_devices();
  }
  if (vm.count("no-fusion")) defaults.fusion = false;
  if (vm.count("sync")) defaults.async_collectives = false;
  if (vm.count("trace")) defaults.trace.enabled = true;
  if (vm.count("check")) defaults.functional = true;
  nlohmann::json config = defaults.ToJson();
  config["topology"] = topo::ExpandTopologyConfig(vm["topology"].as<std::string>(), "topology");
  if (vm.count("set")) {
    for (const std::string& assignment : vm["set"].as<std::vector<std::string>>()) {
      topo::ApplyOverride(config, assignment);
    }
  }
  const std::unique_ptr<topo::Topology> topology = topo::LoadTopology(config["topology"], "topology");
  nlohmann::json sim_config = config;
  sim_config.erase("topology");
  sim::SimOptions options = sim::SimOptions::FromJson(sim_config, "");
  if (options.num_partitions > topology->num_cores()) {
    throw topo::ConfigError("--mesh: " + std::to_string(options.num_partitions) +
                            " partitions do not fit topology '" + topology->name() + "' (" +
                            std::to_string(topology->num_cores()) + " cores)");
  }
  options.Validate("");
  if (options.num_partitions == 0) options.num_partitions = topology->num_cores();

  std::unique_ptr<ir::Module> module = LoadModule(vm["module"].as<std::string>());
  // A global annotated module: partition it here, and check against it unpartitioned.
  std::unique_ptr<ir::Module> global;
  partitioner::PartitionResult partitioned;
  std::vector<ir::Literal> global_args;
  sim::SimOptions run_options = options;
  const sim::ProgramKind kind = sim::ClassifyProgram(*module);
  if (options.num_partitions > 1 && kind == sim::ProgramKind::kUnannotated) {
    std::cerr << "note: module '" << module->name() << "' has no shardings, collectives or "
              << "partition-id: each of the " << options.num_partitions
              << " partitions runs the whole program (replicated); annotate it (podsim "
                 "partition) to split the work, or pass --mesh 1\n";
  }
  if (options.num_partitions > 1 && kind == sim::ProgramKind::kGlobalAnnotated) {
    global = std::move(module);
    partitioned = partitioner::PropagateAndPartition(*global, options.num_partitions);
    std::cerr << "partitioned " << global->name() << " for " << options.num_partitions
              << " partitions: " << global->InstructionCount() << " -> "
              << partitioned.module->InstructionCount() << " instructions\n";
    if (options.functional) {
      global_args = ir::RandomArguments(*global, options.functional_seed);
      run_options.functional_args = partitioner::ShardArguments(partitioned, global_args);
    }
  }
  const ir::Module& spmd = global ? *partitioned.module : *module;
  const sim::RunResult result = sim::Simulate(spmd, *topology, run_options);

  if (vm.count("json")) {
    std::cout << sim::ResultsToJson(result).dump(2) << "\n";
  } else {
    std::cout << sim::Summary(result);
  }
  if (vm.count("out")) {
    sim::WriteResults(result, vm["out"].as<std::string>());
    if (!vm.count("json")) std::cout << "wrote " << vm["out"].as<std::string>() << "/results.json\n";
  }
  if (vm.count("trace")) {
    sim::WriteChromeTrace(result.trace, vm["trace"].as<std::string>());
    if (!vm.count("json")) std::cout << "wrote " << vm["trace"].as<std::string>() << "\n";
  }
  if (result.functional) {
    std::ostream& os = vm.count("json") ? std::cerr : std::cout;
    PrintCheck(*result.functional, os);
    bool ok = result.functional->ok();
    if (global) {
      const partitioner::EquivalenceReport report = partitioner::CompareOutputs(
          *global, partitioned, global_args, result.functional->outputs);
      os << "check: outputs vs the unpartitioned module (podsim check tolerances):\n"
         << report.ToString();
      ok = ok && report.ok();
    }
    if (!ok) return 1;
  }
  return 0;
}

}  // namespace podsim::cli
