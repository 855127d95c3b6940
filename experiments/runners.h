#pragma once
// The experiment runners `podsim run` dispatches to by the config's "experiment" key. Each
// reads its own keys from ctx.config with JsonReader (unknown keys are errors naming the
// JSON path), writes DIR/results.csv, DIR/results.json (embedding ctx.config as "config") and
// its plots, and returns how its points ended. Each also has a Check function that reads the
// config as the runner does and runs nothing.

#include <string>

#include <nlohmann/json.hpp>

#include "experiments/experiment.h"
#include "sim/program/run_result.h"

namespace podsim::experiments {

struct ExperimentContext {
  nlohmann::json config;    // the config after --set overrides
  std::string config_path;  // for messages and for resolving relative paths
  std::string out_dir;      // exists
  int jobs = 0;             // RunOptions::jobs
  bool resume = false;      // RunOptions::resume: out_dir may hold the run's finished points
  int64_t shard_index = 0;  // RunOptions::shard_index, shard_count, merge_dirs
  int64_t shard_count = 1;
  std::vector<std::string> merge_dirs;
};

// The status cell of results.csv and the "status" of a point in results.json.
inline constexpr const char* kPointOk = "ok";
inline constexpr const char* kPointOom = "oom";
inline constexpr const char* kPointFailed = "failed";
inline constexpr const char* kPointSkipped = "skipped";
inline constexpr const char* kPointInvalid = "invalid";

// Counts a point of `status` (one of the names above) into `summary`.
void CountPoint(RunSummary& summary, const std::string& status);

// Writes `results` (an object) to ctx.out_dir/results.json, atomically, with the podsim and
// schema versions (base/version.h) added.
void WriteResultsJson(const ExperimentContext& ctx, nlohmann::json results);
// kPointOk or kPointOom.
inline const char* PointStatus(const sim::RunResult& r) {
  return r.status == sim::RunStatus::kOom ? kPointOom : kPointOk;
}

RunSummary RunCollectiveSweep(const ExperimentContext& ctx);
RunSummary RunSpmdVsMpmd(const ExperimentContext& ctx);
RunSummary RunMoeLayerBreakdown(const ExperimentContext& ctx);
RunSummary RunParameterCount(const ExperimentContext& ctx);
RunSummary RunTrainingStep(const ExperimentContext& ctx);
RunSummary RunSweep(const ExperimentContext& ctx);
RunSummary RunRoutingSkew(const ExperimentContext& ctx);
RunSummary RunSpatialPartitioning(const ExperimentContext& ctx);
RunSummary RunDenseBaseline(const ExperimentContext& ctx);
RunSummary RunInference(const ExperimentContext& ctx);
// An MPI rank other than 0: runs the points rank 0 hands out (experiments/distributed.h).
void RunSweepWorker(const ExperimentContext& ctx);
void CheckCollectiveSweep(const nlohmann::json& config);
void CheckSpmdVsMpmd(const nlohmann::json& config);
void CheckMoeLayerBreakdown(const nlohmann::json& config);
void CheckParameterCount(const nlohmann::json& config);
void CheckTrainingStep(const nlohmann::json& config);
void CheckSweep(const nlohmann::json& config);
void CheckRoutingSkew(const nlohmann::json& config);
void CheckSpatialPartitioning(const nlohmann::json& config);
void CheckDenseBaseline(const nlohmann::json& config);
void CheckInference(const nlohmann::json& config);

}  // namespace podsim::experiments
