#pragma once
// `podsim run CONFIG --out DIR`: an experiment config names its runner in "experiment"; the
// runner writes DIR/results.csv, DIR/results.json (which embeds the fully resolved config, so a
// result file reproduces itself) and plots. DIR is claimed as report/output_dir.h says: its
// status file reads "running" while the run writes and "done" (or "failed") at the end.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace podsim::experiments {

struct RunOptions {
  std::string out_dir;                 // created if missing; must be empty unless `force`
  std::vector<std::string> overrides;  // "path=value", applied to the config in order
  bool force = false;                  // replace an earlier run's files in out_dir
  // Continue the run that left out_dir (killed, failed or done): its finished points are kept
  // and not run again (sweep experiments; other kinds refuse it). A new out_dir starts afresh.
  bool resume = false;
  // Run only the points k with k % shard_count == shard_index (sweeps; `--shard K/N`, for job
  // arrays): results.csv then holds those points' rows.
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  // Output directories of other runs of the same sweep (shards): their finished points are
  // taken instead of run (`--merge DIR`).
  std::vector<std::string> merge_dirs;
  // Points run at once by the runners whose points are independent (collective_sweep); 0: the
  // machine's hardware threads. Results do not depend on it.
  int jobs = 0;
};

// How the points of a run ended. A point that ran out of device memory is "oom" (its times are
// still reported); one whose simulation raised an error is "failed" (no times; the error is in
// results.json and results.csv). A point whose configuration cannot run (a sweep's model that
// does not divide over its slice) is "invalid", with the reason. Points a runner chose not to
// run (MPMD over its time budget, a sweep's skip rule) are "skipped".
struct RunSummary {
  std::string name;  // the config's "name"
  int64_t ok = 0;
  int64_t oom = 0;
  int64_t failed = 0;
  int64_t invalid = 0;
  int64_t skipped = 0;

  int64_t points() const { return ok + oom + failed + invalid + skipped; }
  // No point gave a usable result: `podsim run` exits non-zero.
  bool all_failed() const { return points() > 0 && ok == 0; }
  // "2 ok, 1 oom, 0 failed" (", 1 invalid" and ", 1 skipped" when any were).
  std::string Counts() const;
  // "3 points: " + Counts().
  std::string ToString() const;
};

// Reads the config file, applies the overrides, claims the output directory, runs the named
// experiment and marks the directory done (or failed, when an exception leaves). Throws
// podsim::Error / ConfigError naming the file and JSON path at fault; a point that fails does
// not stop the run but is counted in the summary.
RunSummary RunExperimentFile(const std::string& config_path, const RunOptions& options);
// The same for a config already read: `config_path` names it in errors and in results.json
// (a script passes "<dict>" or its own label).
RunSummary RunExperiment(nlohmann::json config, const std::string& config_path,
                         const RunOptions& options);

// Validates an experiment config (after overrides) as the runner reads it, without running
// anything: the same ConfigErrors RunExperimentFile would raise before its first point.
void CheckExperimentConfig(const nlohmann::json& config, const std::string& config_path);

// Names of the experiment kinds `"experiment"` may take.
std::vector<std::string> ExperimentKinds();

}  // namespace podsim::experiments
