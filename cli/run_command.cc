// podsim run CONFIG --out DIR [--force | --resume] [--jobs N] [--set path=value ...]: runs an
// experiment config.
// Prints how its points ended; exits 1 when no point gave a result (every one failed or ran
// out of device memory), as well as on an error.

#include <iostream>
#include <stdexcept>
#include <string>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "experiments/distributed.h"
#include "experiments/experiment.h"

namespace podsim::cli {

int RunCommand(const Args& args) {
  std::string kinds;
  for (const std::string& k : experiments::ExperimentKinds()) {
    kinds += (kinds.empty() ? "" : ", ") + k;
  }
  po::options_description desc("podsim run options");
  desc.add_options()("help,h", "show this help")(
      "config", po::value<std::string>()->required(), "experiment JSON file")(
      "out", po::value<std::string>()->required(),
      "output directory: new or empty (DIR/status says running, done or failed)")(
      "force", "replace the files of an earlier run in --out")(
      "resume",
      "continue the sweep that left --out (killed, failed or done): its finished points are "
      "kept, the others run; the results equal a clean run's")(
      "shard", po::value<std::string>(),
      "K/N: run only the sweep points k with k % N == K (job arrays without MPI; merge the "
      "shards' directories with --merge)")(
      "merge", po::value<std::vector<std::string>>()->composing(),
      "DIR of another run of the same sweep (a shard): take its finished points (repeatable)")(
      "jobs,j", po::value<int>()->default_value(0),
      "points run at once where they are independent (collective sweeps); 0: one per hardware "
      "thread. Results are the same for any value")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a config value: --set topology.link_bandwidth=2e11 (repeatable)");
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  if (!ParseOptions(args, desc, pos, vm)) {
    std::cout << "usage: podsim run CONFIG.json --out DIR [--force | --resume] [--jobs N] "
                 "[--shard K/N] [--merge DIR ...] [--set path=value ...]\n"
                 "       mpirun -np N podsim run SWEEP.json --out DIR [...]   (a sweep's points "
                 "over N ranks)\n\n"
              << "experiment kinds: " << kinds << "\n\n" << desc;
    return 0;
  }
  experiments::RunOptions options;
  options.out_dir = vm["out"].as<std::string>();
  options.force = vm.count("force") > 0;
  options.resume = vm.count("resume") > 0;
  if (vm.count("shard")) {
    const std::string shard = vm["shard"].as<std::string>();
    const size_t slash = shard.find('/');
    try {
      if (slash == std::string::npos) throw std::invalid_argument("no slash");
      size_t used_k = 0, used_n = 0;
      options.shard_index = std::stoll(shard.substr(0, slash), &used_k);
      options.shard_count = std::stoll(shard.substr(slash + 1), &used_n);
      if (used_k != slash || used_n != shard.size() - slash - 1) {
        throw std::invalid_argument("trailing text");
      }
    } catch (const std::logic_error&) {
      throw ConfigError("--shard: expected K/N (e.g. 0/4), got '" + shard + "'");
    }
  }
  if (vm.count("merge")) options.merge_dirs = vm["merge"].as<std::vector<std::string>>();
  options.jobs = vm["jobs"].as<int>();
  if (options.jobs < 0) throw ConfigError("--jobs: must be >= 0, got " + std::to_string(options.jobs));
  if (vm.count("set")) options.overrides = vm["set"].as<std::vector<std::string>>();
  const experiments::RunSummary summary =
      experiments::RunExperimentFile(vm["config"].as<std::string>(), options);
  if (experiments::dist::Rank() > 0) return 0;  // rank 0 reports for the run
  std::cout << summary.name << ": " << summary.ToString() << "; results in " << options.out_dir
            << "\n";
  if (summary.all_failed()) {
    std::cerr << "podsim run: error: no point of " << summary.name
              << " gave a result (see " << options.out_dir << "/results.json)\n";
    return 1;
  }
  return 0;
}

}  // namespace podsim::cli
