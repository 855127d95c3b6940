// The "sweep" experiment (capacity planning): one training-step point (experiments/
// training_point.h: the whole model on every core of a topology) or Figure 8's layer pair,
// varied over axes of config paths, one row per point. The parts: the config and its points
// (sweep_config.h), running one point (sweep_point.h), the resumable points log
// (sweep_log.h), the plot (sweep_plot.h); this file runs them, over MPI ranks or a shard, with
// progress on a terminal (report/progress.h).
//
// Status of a point: ok; oom (the step does not fit HBM under any remat policy: memory is
// reported, no step time); invalid (the configuration cannot run, e.g. experts that do not
// divide over the slice's cores: the reason); failed (the simulation raised an error: the
// message); skipped (a skip rule). Each is in results.csv, results.json and the summary line.

#include <map>
#include <nlohmann/json.hpp>

#include "base/csv.h"
#include "base/io.h"
#include "experiments/distributed.h"
#include "experiments/runners.h"
#include "experiments/sweep_config.h"
#include "experiments/sweep_log.h"
#include "experiments/sweep_plot.h"
#include "experiments/sweep_point.h"
#include "report/progress.h"

namespace podsim::experiments {

using sweep::PointRecord;
using sweep::SweepConfig;

void CheckSweep(const nlohmann::json& config) { SweepConfig::FromJson(config); }

void RunSweepWorker(const ExperimentContext& ctx) {
  const SweepConfig c = SweepConfig::FromJson(ctx.config);
  const std::string fingerprint = sweep::Fingerprint(ctx.config);
  dist::Work([&](int64_t k) { return sweep::RunPointText(c, k, fingerprint); });
}

RunSummary RunSweep(const ExperimentContext& ctx) {
  const SweepConfig c = SweepConfig::FromJson(ctx.config);
  const int64_t n = c.NumPoints();
  const std::vector<std::string> columns = c.Columns();
  const std::string fingerprint = sweep::Fingerprint(ctx.config);
  const auto mine = [&](int64_t k) { return k % ctx.shard_count == ctx.shard_index; };
  sweep::PointsLog log(ctx.out_dir + "/" + sweep::kLogFile, fingerprint, n, columns.size());
  std::map<int64_t, PointRecord> done;
  log.Open(ctx.resume, done);
  for (const std::string& dir : ctx.merge_dirs) log.Merge(dir, done);
  std::vector<int64_t> todo;
  int64_t total = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (!mine(k)) continue;
    ++total;
    if (!done.count(k)) todo.push_back(k);
  }
  report::Progress progress(c.name, total, total - static_cast<int64_t>(todo.size()));
  const bool alone = dist::Size() == 1;
  dist::Coordinate(
      todo,
      [&](int64_t k) {
        if (alone) progress.Start(c.Label(c.ValuesOf(k)));
        return sweep::RunPointText(c, k, fingerprint);
      },
      [&](int64_t k, const std::string& text) {
        PointRecord rec = sweep::ParseRecord(text, fingerprint, n, columns.size(), "rank result");
        const std::string label = c.Label(c.ValuesOf(k));
        const std::string& status = rec.detail["status"].get_ref<const std::string&>();
        if (status != kPointOk && status != kPointSkipped) {
          progress.Note(c.name + ": " + label + ": " + status + ": " +
                        rec.detail.value("reason", std::string()));
        }
        log.Append(text);
        progress.Step(label);
        done.emplace(k, std::move(rec));
      });
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(columns);
  nlohmann::json points = nlohmann::json::array();
  std::vector<PointRecord> records;
  for (auto& [k, rec] : done) {
    if (!mine(k)) continue;
    CountPoint(summary, rec.detail["status"].get<std::string>());
    table.AddRow(rec.row);
    points.push_back(rec.detail);
    records.push_back(rec);
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  nlohmann::json results = {{"experiment", "sweep"},
                            {"name", c.name},
                            {"config", ctx.config},
                            {"fingerprint", fingerprint},
                            {"summary", summary.ToString()},
                            {"columns", columns},
                            {"points", points}};
  if (ctx.shard_count > 1) {
    results["shard"] = std::to_string(ctx.shard_index) + "/" + std::to_string(ctx.shard_count);
  }
  WriteResultsJson(ctx, std::move(results));
  if (!c.plot_x.empty()) sweep::WritePlot(ctx, c, records);
  return summary;
}

}  // namespace podsim::experiments
