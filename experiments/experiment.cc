#include "experiments/experiment.h"

#include <functional>
#include <map>

#include "base/config.h"
#include "base/csv.h"
#include "base/io.h"
#include "experiments/runners.h"
#include "report/plot.h"

namespace podsim::experiments {

// Defined in their own files.
void RunCollectiveSweep(const ExperimentContext& ctx);
void RunSpmdVsMpmd(const ExperimentContext& ctx);
void RunMoeLayerBreakdown(const ExperimentContext& ctx);

namespace {

using Runner = std::function<void(const ExperimentContext&)>;

const std::map<std::string, Runner>& Runners() {
  static const std::map<std::string, Runner> runners = {
      {"collective_sweep", RunCollectiveSweep},
      {"spmd_vs_mpmd", RunSpmdVsMpmd},
      {"moe_layer_breakdown", RunMoeLayerBreakdown},
  };
  return runners;
}

}  // namespace


std::vector<std::string> ExperimentKinds() {
  std::vector<std::string> kinds;
  for (const auto& [k, r] : Runners()) kinds.push_back(k);
  return kinds;
}

void RunExperimentFile(const std::string& config_path, const RunOptions& options) {
  ExperimentContext ctx;
  ctx.config = ReadJsonFile(config_path);
  for (const std::string& o : options.overrides) ApplyOverride(ctx.config, o);
  ctx.config_path = config_path;
  ctx.out_dir = options.out_dir;
  if (!ctx.config.is_object() || !ctx.config.contains("experiment")) {
    FailAt(config_path, "missing key \"experiment\"");
  }
  std::vector<std::string> kinds = ExperimentKinds();
  std::string kind = AsChoice(ctx.config["experiment"], "experiment", kinds);
  MakeDirectories(ctx.out_dir);
  Runners().at(kind)(ctx);
}

}  // namespace podsim::experiments
