// The "collective_sweep" experiment (GShard Figure 9): collectives x payloads x pod slices,
// timed with the network model, beside the paper's measured points where it has them.
//
// Config keys:
//   collectives   ["all-reduce", "all-to-all", ...]
//   payloads      per-partition payloads: numbers or strings like "8MiB"
//   slices        [{"partitions": 16, "topology": "tpu-v3-16"}, ...]: one group of cores
//                 0..partitions-1 on that topology
//   collective    defaults for every point: CollectiveRunConfig keys except topology, op,
//                 bytes, partitions (algorithm, chunks, network, network_options, overhead_us,
//                 dtype_bytes)
//   topology_overrides  object merged into every slice's topology (calibrated link figures)
//   reference     {"file": path relative to the source tree, "figure": key, "payload_bytes": n}:
//                 paper points "<collective>_<MB>MB" arrays aligned with "partitions"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "base/parallel.h"
#include "base/resources.h"
#include "experiments/collective_run.h"
#include "experiments/runners.h"
#include "report/plot.h"
#include "report/progress.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

struct Slice {
  int64_t partitions = 0;
  std::string topology;
};

// Paper points: (collective name, payload bytes, partitions) -> microseconds.
using PaperPoints = std::map<std::tuple<std::string, int64_t, int64_t>, double>;

PaperPoints ReadPaperPoints(JsonReader& r) {
  PaperPoints points;
  if (!r.Has("reference")) return points;
  JsonReader ref = r.Object("reference");
  const std::string file = FindDataFile(ref.String("file"));
  const std::string figure = ref.String("figure");
  const nlohmann::json& series = ref.Value("series");
  ref.Finish();
  nlohmann::json data = ReadJsonFile(file);
  if (!data.contains(figure)) FailAt(ref.PathOf("figure"), "'" + figure + "' not in " + file);
  const nlohmann::json& fig = data[figure];
  // The figure's layout is checked like any config: a figure without "partitions" or with a
  // value that is not a number is an error naming the file, not an escaped library exception.
  const std::string fig_path = file + ": " + figure;
  if (!fig.is_object() || !fig.contains("partitions")) {
    FailAt(ref.PathOf("figure"), "'" + figure + "' in " + file + " has no \"partitions\" array");
  }
  const nlohmann::json& parts = AsArray(fig["partitions"], fig_path + ".partitions");
  // series: {"alltoall_8MB": {"collective": "all-to-all", "payload_bytes": 8388608}, ...}
  for (auto it = series.begin(); it != series.end(); ++it) {
    const std::string path = ref.PathOf("series") + "." + it.key();
    if (!fig.contains(it.key())) FailAt(path, "no such series in " + file);
    JsonReader s(it.value(), path);
    std::string collective = sim::CollectiveKindName(
        sim::ParseCollectiveKind(s.String("collective"), s.PathOf("collective")));
    int64_t bytes = s.Int("payload_bytes", Limit::Positive());
    s.Finish();
    const nlohmann::json& values = AsArray(fig[it.key()], fig_path + "." + it.key());
    for (size_t k = 0; k < parts.size() && k < values.size(); ++k) {
      points[{collective, bytes, AsInt(parts[k], IndexPath(fig_path + ".partitions", k))}] =
          AsDouble(values[k], IndexPath(fig_path + "." + it.key(), k));
    }
  }
  return points;
}

// series_files: (file, whether it has paper points); partitions: every slice's size. The x axis
// spans the slices (a quarter-octave of margin each side, a tic at each); each series has its own
// colour (report::kPalette), shared by its paper points.
std::string PlotScript(const std::vector<std::pair<std::string, bool>>& series_files,
                       const std::vector<int64_t>& partitions, const std::string& title) {
  const auto [lo, hi] = std::minmax_element(partitions.begin(), partitions.end());
  std::ostringstream gp;
  gp << "set datafile separator ','\n"
        "set logscale xy\n"
        "set xlabel 'partitions (cores)'\n"
        "set ylabel 'time (us)'\n"
        "set title '"
     << title
     << "'\n"
        "set key top left\n"
        "set grid\n"
        "set termoption noenhanced\n"
     << "set xrange [" << FormatShortest(static_cast<double>(*lo) / 1.19) << ":"
     << FormatShortest(static_cast<double>(*hi) * 1.19) << "]\n"
     << "set xtics (";
  for (size_t k = 0; k < partitions.size(); ++k) gp << (k ? "," : "") << partitions[k];
  gp << ")\nplot ";
  for (size_t k = 0; k < series_files.size(); ++k) {
    const auto& [f, has_paper] = series_files[k];
    const std::string colour = report::kPalette[k % report::kPalette.size()];
    if (k) gp << ", \\\n     ";
    std::string name = f.substr(7, f.size() - 11);  // series_<name>.csv
    std::replace(name.begin(), name.end(), '_', ' ');
    gp << "'" << f << "' using 1:2 every ::1 with linespoints lw 2 lc rgb '" << colour
       << "' title '" << name << " (podsim)'";
    if (has_paper) {
      gp << ", \\\n     '" << f << "' using 1:3 every ::1 with points pt 7 ps 1.4 lc rgb '"
         << colour << "' title '" << name << " (paper)'";
    }
  }
  gp << "\n";
  return gp.str();
}

struct SweepPoint {
  std::string collective;
  int64_t bytes = 0;
  int64_t partitions = 0;
  std::string topology_name;  // the slice's topology, named before it is built
  CollectiveRunConfig run;
};

struct CollectiveSweepConfig {
  std::vector<SweepPoint> points;  // collectives x payloads x slices, in that nesting
  std::string name;
  std::vector<std::string> collectives;
  std::vector<int64_t> payloads;
  std::vector<Slice> slices;
  nlohmann::json defaults = nlohmann::json::object();
  nlohmann::json topology_overrides = nlohmann::json::object();
  PaperPoints paper;

  static CollectiveSweepConfig FromJson(const nlohmann::json& config) {
    CollectiveSweepConfig c;
    JsonReader r(config, "");
    r.String("experiment");
    c.name = r.String("name", "collective_sweep");
    {
      const std::string p = r.PathOf("collectives");
      const nlohmann::json& arr = AsArray(r.Value("collectives"), p);
      for (size_t k = 0; k < arr.size(); ++k) {
        c.collectives.push_back(sim::CollectiveKindName(
            sim::ParseCollectiveKind(AsString(arr[k], IndexPath(p, k)), IndexPath(p, k))));
      }
    }
    {
      const std::string p = r.PathOf("payloads");
      const nlohmann::json& arr = AsArray(r.Value("payloads"), p);
      for (size_t k = 0; k < arr.size(); ++k) {
        const std::string kp = IndexPath(p, k);
        c.payloads.push_back(arr[k].is_string() ? ParseBytes(arr[k].get<std::string>(), kp)
                                                : AsInt(arr[k], kp, Limit::Positive()));
      }
    }
    {
      const std::string p = r.PathOf("slices");
      const nlohmann::json& arr = AsArray(r.Value("slices"), p);
      for (size_t k = 0; k < arr.size(); ++k) {
        JsonReader s(arr[k], IndexPath(p, k));
        Slice slice;
        slice.partitions = s.Int("partitions", Limit::AtLeast(1));
        slice.topology = s.String("topology");
        s.Finish();
        c.slices.push_back(slice);
      }
    }
    if (r.Has("collective")) c.defaults = r.Object("collective").json();
    if (r.Has("topology_overrides")) c.topology_overrides = r.Object("topology_overrides").json();
    c.paper = ReadPaperPoints(r);
    r.Finish();
    // Every point's run config, validated now rather than after the first points have run.
    for (const std::string& collective : c.collectives) {
      for (int64_t bytes : c.payloads) {
        for (size_t k = 0; k < c.slices.size(); ++k) {
          const std::string path = IndexPath(r.PathOf("slices"), k);
          nlohmann::json point = c.defaults;
          nlohmann::json topology =
              topo::ExpandTopologyConfig(c.slices[k].topology, path + ".topology");
          topology.merge_patch(c.topology_overrides);
          point["topology"] = topology;
          point["op"] = collective;
          point["bytes"] = bytes;
          point["partitions"] = c.slices[k].partitions;
          const std::string topology_name =
              topo::TopologyConfig::FromJson(topology, path + ".topology").ResolvedName();
          c.points.push_back({collective, bytes, c.slices[k].partitions, topology_name,
                              CollectiveRunConfig::FromJson(point, path)});
        }
      }
    }
    return c;
  }
};

}  // namespace

void CheckCollectiveSweep(const nlohmann::json& config) { CollectiveSweepConfig::FromJson(config); }

RunSummary RunCollectiveSweep(const ExperimentContext& ctx) {
  const CollectiveSweepConfig c = CollectiveSweepConfig::FromJson(ctx.config);
  RunSummary summary;
  summary.name = c.name;
  CsvTable table({"collective", "payload_bytes", "partitions", "topology", "status", "time_us",
                  "paper_us", "error"});
  nlohmann::json points = nlohmann::json::array();
  // Per series (collective, payload): rows "partitions,time_us,paper_us" for the plot.
  std::map<std::string, CsvTable> series;
  report::Progress progress(c.name, static_cast<int64_t>(c.points.size()));
  // The points run on ctx.jobs threads (they share nothing); their rows go out in point order.
  struct Outcome {
    std::string status = kPointOk, error, topology_name;
    double time_us = std::nan("");
    nlohmann::json json;
  };
  std::vector<Outcome> outcomes(c.points.size());
  std::mutex mutex;  // progress and stderr
  ParallelFor(c.points.size(), ctx.jobs, [&](size_t i) {
    const SweepPoint& pt = c.points[i];
    Outcome& o = outcomes[i];
    o.topology_name = pt.topology_name;
    try {
      const CollectiveRunResult result = RunCollective(pt.run);
      o.json = result.ToJson();
      o.time_us = result.time_us;
      o.topology_name = result.topology_name;
    } catch (const Error& e) {
      // This point cannot run (too large for memory, a group the pod cannot hold): the sweep
      // goes on and says so.
      o.status = kPointFailed;
      o.error = e.what();
      o.json = {{"partitions", pt.partitions}, {"topology", o.topology_name}, {"error", o.error}};
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (o.status == kPointFailed) {
      std::cerr << c.name << ": " << pt.collective << " " << pt.bytes << " B on "
                << pt.partitions << " partitions failed: " << o.error << "\n";
    }
    progress.Step(pt.collective + " " + std::to_string(pt.bytes) + " B on " +
                  std::to_string(pt.partitions));
  });
  for (size_t i = 0; i < c.points.size(); ++i) {
    const SweepPoint& pt = c.points[i];
    Outcome& o = outcomes[i];
    auto it = c.paper.find({pt.collective, pt.bytes, pt.partitions});
    const double paper_us = it == c.paper.end() ? std::nan("") : it->second;
    CountPoint(summary, o.status);
    table.AddRow({pt.collective, std::to_string(pt.bytes), std::to_string(pt.partitions),
                  o.topology_name, o.status, CsvFixed(o.time_us, 3), CsvNumber(paper_us), o.error});
    const std::string key = pt.collective + "_" + std::to_string(pt.bytes >> 20) + "MiB";
    series.try_emplace(key, std::vector<std::string>{"partitions", "time_us", "paper_us"});
    series.at(key).AddRow(
        {std::to_string(pt.partitions), CsvFixed(o.time_us, 3), CsvNumber(paper_us)});
    nlohmann::json& p = o.json;
    p["status"] = o.status;
    p["collective"] = pt.collective;
    p["payload_bytes"] = pt.bytes;
    if (!std::isnan(paper_us)) p["paper_us"] = paper_us;
    points.push_back(std::move(p));
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "collective_sweep"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"points", points}});
  std::vector<std::pair<std::string, bool>> files;
  for (const auto& [key, t] : series) {
    bool has_paper = false;
    for (const auto& row : t.rows()) has_paper |= !row[2].empty();
    files.emplace_back("series_" + key + ".csv", has_paper);
    WriteFileAtomic(ctx.out_dir + "/" + files.back().first, t.ToString());
  }
  // A plot of no data is no plot (gnuplot would fail on it).
  if (summary.ok + summary.oom > 0) {
    std::vector<int64_t> sizes;
    for (const Slice& sl : c.slices) sizes.push_back(sl.partitions);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    const bool paper =
        std::any_of(files.begin(), files.end(), [](const auto& f) { return f.second; });
    report::RenderPlot(
        ctx.out_dir, "plot",
        PlotScript(files, sizes,
                   c.name + ": podsim (lines)" + (paper ? " vs the paper, measured (dots)" : "")));
  }
  return summary;
}

}  // namespace podsim::experiments
