#pragma once
// The experiment runners `podsim run` dispatches to by the config's "experiment" key. Each
// reads its own keys from ctx.config with JsonReader (unknown keys are errors naming the
// JSON path), writes DIR/results.csv, DIR/results.json (embedding ctx.config as "config") and
// its plots.

#include <string>

#include <nlohmann/json.hpp>

namespace podsim::experiments {

struct ExperimentContext {
  nlohmann::json config;    // the config after --set overrides
  std::string config_path;  // for messages and for resolving relative paths
  std::string out_dir;      // exists
};

}  // namespace podsim::experiments
