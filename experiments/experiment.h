#pragma once
// `podsim run CONFIG --out DIR`: an experiment config names its runner in "experiment"; the
// runner writes DIR/results.csv, DIR/results.json (which embeds the fully resolved config, so a
// result file reproduces itself) and plots.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace podsim::experiments {

struct RunOptions {
  std::string out_dir;                 // created if missing
  std::vector<std::string> overrides;  // "path=value", applied to the config in order
};

// Reads the config file, applies the overrides, runs the named experiment. Throws
// podsim::Error / ConfigError naming the file and JSON path at fault.
void RunExperimentFile(const std::string& config_path, const RunOptions& options);

// Names of the experiment kinds `"experiment"` may take.
std::vector<std::string> ExperimentKinds();

}  // namespace podsim::experiments
