#include "experiments/experiment.h"

#include <functional>
#include <map>

#include "base/config.h"
#include "base/error.h"
#include "base/io.h"
#include "base/version.h"
#include "experiments/distributed.h"
#include "experiments/runners.h"
#include "report/output_dir.h"

namespace podsim::experiments {

namespace {

struct Runner {
  std::function<RunSummary(const ExperimentContext&)> run;
  std::function<void(const nlohmann::json&)> check;
};

const std::map<std::string, Runner>& Runners() {
  static const std::map<std::string, Runner> runners = {
      {"collective_sweep", {RunCollectiveSweep, CheckCollectiveSweep}},
      {"spmd_vs_mpmd", {RunSpmdVsMpmd, CheckSpmdVsMpmd}},
      {"moe_layer_breakdown", {RunMoeLayerBreakdown, CheckMoeLayerBreakdown}},
      {"parameter_count", {RunParameterCount, CheckParameterCount}},
      {"training_step", {RunTrainingStep, CheckTrainingStep}},
      {"sweep", {RunSweep, CheckSweep}},
      {"routing_skew", {RunRoutingSkew, CheckRoutingSkew}},
      {"spatial_partitioning", {RunSpatialPartitioning, CheckSpatialPartitioning}},
      {"dense_baseline", {RunDenseBaseline, CheckDenseBaseline}},
      {"inference", {RunInference, CheckInference}},
  };
  return runners;
}

const Runner& RunnerOf(const nlohmann::json& config, const std::string& config_path) {
  if (!config.is_object() || !config.contains("experiment")) {
    FailAt(config_path, "missing key \"experiment\"");
  }
  const std::string kind = AsChoice(config["experiment"], "experiment", ExperimentKinds());
  return Runners().at(kind);
}

}  // namespace

std::string RunSummary::Counts() const {
  std::string s = std::to_string(ok) + " ok, " + std::to_string(oom) + " oom, " +
                  std::to_string(failed) + " failed";
  if (invalid > 0) s += ", " + std::to_string(invalid) + " invalid";
  if (skipped > 0) s += ", " + std::to_string(skipped) + " skipped";
  return s;
}

std::string RunSummary::ToString() const {
  return std::to_string(points()) + (points() == 1 ? " point: " : " points: ") + Counts();
}

void WriteResultsJson(const ExperimentContext& ctx, nlohmann::json results) {
  StampVersion(results);
  WriteJsonFile(ctx.out_dir + "/results.json", results);
}

void CountPoint(RunSummary& summary, const std::string& status) {
  if (status == kPointOk) {
    ++summary.ok;
  } else if (status == kPointOom) {
    ++summary.oom;
  } else if (status == kPointSkipped) {
    ++summary.skipped;
  } else if (status == kPointInvalid) {
    ++summary.invalid;
  } else {
    ++summary.failed;
  }
}

std::vector<std::string> ExperimentKinds() {
  std::vector<std::string> kinds;
  for (const auto& [k, r] : Runners()) kinds.push_back(k);
  return kinds;
}

void CheckExperimentConfig(const nlohmann::json& config, const std::string& config_path) {
  RunnerOf(config, config_path).check(config);
}

RunSummary RunExperimentFile(const std::string& config_path, const RunOptions& options) {
  return RunExperiment(ReadJsonFile(config_path), config_path, options);
}

RunSummary RunExperiment(nlohmann::json config, const std::string& config_path,
                         const RunOptions& options) {
  ExperimentContext ctx;
  ctx.config = std::move(config);
  for (const std::string& o : options.overrides) ApplyOverride(ctx.config, o);
  ctx.config_path = config_path;
  ctx.out_dir = options.out_dir;
  ctx.jobs = options.jobs;
  ctx.resume = options.resume;
  ctx.shard_index = options.shard_index;
  ctx.shard_count = options.shard_count;
  ctx.merge_dirs = options.merge_dirs;
  const Runner& runner = RunnerOf(ctx.config, config_path);
  // A config error is found before the output directory is touched.
  runner.check(ctx.config);
  const bool sweep = ctx.config["experiment"] == "sweep";
  const std::string kind = ctx.config["experiment"].get<std::string>();
  if (!sweep && (options.resume || options.shard_count > 1 || !options.merge_dirs.empty())) {
    throw ConfigError("--resume, --shard and --merge are for sweep experiments (this is a " +
                      kind + ")");
  }
  if (options.shard_count < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_count) {
    throw ConfigError("--shard: K/N needs 0 <= K < N, got " + std::to_string(options.shard_index) +
                      "/" + std::to_string(options.shard_count));
  }
  if (dist::Rank() > 0) {
    // MPI: rank 0 writes the output directory; a sweep's other ranks run the points it hands
    // out, any other experiment runs on rank 0 alone.
    if (sweep) RunSweepWorker(ctx);
    RunSummary idle;
    idle.name = ctx.config.value("name", kind);
    return idle;
  }
  if (options.resume && options.force) throw ConfigError("--resume and --force exclude each other");
  const report::OutputDir out = options.resume
                                    ? report::OutputDir::Resume(ctx.out_dir)
                                    : report::OutputDir::Claim(ctx.out_dir, options.force);
  try {
    const RunSummary summary = runner.run(ctx);
    if (summary.all_failed()) {
      out.Failed("every point failed or ran out of device memory (" + summary.ToString() + ")");
    } else {
      out.Done("points: " + std::to_string(summary.points()) + " (" + summary.Counts() + ")");
    }
    return summary;
  } catch (const std::exception& e) {
    out.Failed(e.what());
    throw;
  }
}

}  // namespace podsim::experiments
