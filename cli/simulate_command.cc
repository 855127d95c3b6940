// podsim simulate FILE.hlo --topology NAME_OR_FILE [--mesh D] [--device NAME_OR_FILE]
//                 [--network MODEL] [--trace T.json] [--json] [--out DIR] [--check]
//                 [--no-fusion] [--sync] [--set PATH=VALUE]...
// Runs an SPMD module on every device of a pod (pipeline/simulate.h) and prints a summary, or
// the results JSON, and writes results.json, CSV tables and a Chrome trace when asked. A global
// module with sharding annotations is partitioned for the mesh first (as podsim partition).
// --check also carries real tensors through the run (small pods) and checks every collective
// against its schedule's functional run and the outputs against the interpreter: for a module
// partitioned here, against the unpartitioned module run on the same (global) arguments.

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/module_io.h"
#include "cli/options.h"
#include "partitioner/sharding_util.h"
#include "pipeline/simulate.h"
#include "report/chrome_trace.h"
#include "report/output_dir.h"
#include "report/run_report.h"

namespace podsim::cli {
namespace {

void PrintSimulateUsage(std::ostream& os, const po::options_description& visible) {
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

int Run(const po::variables_map& vm, const nlohmann::json& config, const report::OutputDir* out);

}  // namespace

int SimulateCommand(const Args& args) {
  po::options_description visible("options");
  // clang-format off
  visible.add_options()
      ("help,h", "show this help")
      ("topology", po::value<std::string>(), "topology preset name or JSON file (required)")
      ("mesh", po::value<std::string>(), "partitions: 128 or 8x16 (default: every core)")
      ("device", po::value<std::string>(),
       "device preset or JSON file (default: the topology preset's chip, else tpu-v3-core)")
      ("network", po::value<std::string>(), "network model: analytic, flow (default), packet")
      ("trace", po::value<std::string>(), "write a Chrome trace (Perfetto) to this file")
      ("json", "print results.json instead of the summary")
      ("out", po::value<std::string>(),
       "write results.json, CSV tables (and trace.json) here: a new or empty directory")
      ("force", "replace the files of an earlier run in --out")
      ("check", "functional mode: real tensors, checked against the interpreter (small pods)")
      ("no-fusion", "do not fuse elementwise ops")
      ("sync", "collectives block the device (no async overlap)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "PATH=VALUE: override a config value, e.g. device.hbm_bandwidth=9e11, "
       "topology.link_bandwidth=2e11, collectives.all-to-all.algorithm=dim-staged (repeatable)");
  // clang-format on
  AddImportOptions(visible);
  po::options_description hidden;
  hidden.add_options()("module", po::value<std::string>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("module", 1);
  po::variables_map vm;
  if (!ParseOptions(args, all, positional, vm)) {
    PrintSimulateUsage(std::cout, visible);
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
  const nlohmann::json config = pipeline::SimulationConfig(
      defaults, vm["topology"].as<std::string>(),
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{},
      /*device_given=*/vm.count("device") > 0);

  // The output directory is claimed before the run, so that a refused --out costs nothing and a
  // run that fails says so in DIR/status.
  std::optional<report::OutputDir> out;
  if (vm.count("out")) out = report::OutputDir::Claim(vm["out"].as<std::string>(), vm.count("force") > 0);
  try {
    return Run(vm, config, out ? &*out : nullptr);
  } catch (const std::exception& e) {
    if (out) out->Failed(e.what());
    throw;
  }
}

namespace {

int Run(const po::variables_map& vm, const nlohmann::json& config, const report::OutputDir* out) {
  const pipeline::Simulation run =
      pipeline::Simulate(LoadModule(vm["module"].as<std::string>(), ImportOptions(vm)), config);
  for (const std::string& note : run.notes) std::cerr << note << "\n";
  const sim::RunResult& result = run.result;
  const bool json = vm.count("json") > 0;
  if (json) {
    std::cout << report::ResultsToJson(result).dump(2) << "\n";
  } else {
    std::cout << report::Summary(result);
  }
  if (out) {
    report::WriteResults(result, out->path());
    if (!json) std::cout << "wrote " << out->path() << "/results.json\n";
  }
  if (vm.count("trace")) {
    report::WriteChromeTrace(result.trace, vm["trace"].as<std::string>());
    if (!json) std::cout << "wrote " << vm["trace"].as<std::string>() << "\n";
  }
  if (result.functional) {
    std::ostream& os = json ? std::cerr : std::cout;
    PrintCheck(*result.functional, os);
    if (run.equivalence) {
      os << "check: outputs vs the unpartitioned module (podsim check tolerances):\n"
         << run.equivalence->ToString();
    }
  }
  if (out) {
    // Every file is complete here; a failed functional check is a result, so the directory is
    // done and says so.
    std::string details = std::string("run: ") + sim::RunStatusName(result.status);
    if (result.functional) details += std::string("\ncheck: ") + (run.ok() ? "ok" : "mismatch");
    out->Done(details);
  }
  return run.ok() ? 0 : 1;
}

}  // namespace

}  // namespace podsim::cli
