#pragma once
// One training-step point, as the training_step and sweep experiments run it: the whole model
// (models/gshard_model.h) on every core of a topology, its step built, partitioned and simulated
// with the rematerialisation chosen by fit (pipeline/training.h), and the throughput and memory
// figures derived from the step:
//   MFU = model FLOPs / (cores x step time x bf16 matrix peak), model FLOPs = 3 x the forward
//   pass's matmul FLOPs (recomputation not counted);
//   days = tokens / (batch_tokens x steps/s) / 86400; core-years = cores x days / 365;
//   chip-hours = chips x days x 24.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/gshard_model.h"
#include "models/optimizer.h"
#include "pipeline/training.h"
#include "sim/program/simulate.h"

namespace podsim::experiments {

struct TrainingPointSpec {
  nlohmann::json model;  // models::GShardModelConfig JSON (a preset: {"preset": name, ...})
  std::string topology;  // a topology preset name or file
  nlohmann::json topology_overrides = nlohmann::json::object();  // merged into the topology
  nlohmann::json sim = nlohmann::json::object();                 // sim::SimOptions JSON
  models::OptimizerConfig optimizer;
  std::optional<ir::LoopRemat> remat;  // nullopt: the least recomputation that fits HBM
  double tokens = 1e12;                // the training run's tokens, for days and core-years
};

// A point's topology config: the preset or file `topology` with `overrides` merged.
nlohmann::json PointTopologyJson(const std::string& topology, const nlohmann::json& overrides,
                                 const std::string& path);
// The sim options of a point on `cores` partitions: `sim`, with the device the topology names
// unless `sim` names one. ConfigError naming `path`.sim when they are not valid.
sim::SimOptions PointSimOptions(const nlohmann::json& sim, const nlohmann::json& topology_json,
                                const std::string& path, int64_t cores);

// What results.json records as "resolved" for a training experiment: its sim options and its
// optimizer with every default filled in.
nlohmann::json ResolvedTrainingSetup(const nlohmann::json& sim,
                                     const models::OptimizerConfig& optimizer);

// Checks that the point can run without running it: ConfigError naming `path` (its topology,
// its model on that many cores, its sim options).
void CheckTrainingPoint(const TrainingPointSpec& spec, const std::string& path);

struct TrainingPointResult {
  const char* status = nullptr;  // kPointOk or kPointOom (experiments/runners.h)
  pipeline::TrainingRun run;
  models::GShardModelConfig model;  // resolved
  sim::SimOptions options;          // as run
  int64_t cores = 0;
  int64_t chips = 0;
  double step_s = 0, steps_per_s = 0, days = 0, core_years = 0, chip_hours = 0, mfu = 0;
  int64_t weights_bytes = 0;      // weights and optimizer state at the peak
  int64_t activations_bytes = 0;  // the rest of the peak
};

// Runs the point. Throws ConfigError for a point that cannot run (CheckTrainingPoint's errors)
// and podsim::Error when the simulation fails.
TrainingPointResult RunTrainingPoint(const TrainingPointSpec& spec, const std::string& path);

}  // namespace podsim::experiments
