// The "moe_layer_breakdown" experiment (GShard Figure 8), see experiments/moe_breakdown.h.
//
// Config keys (defaults in MoeBreakdownConfig):
//   points       [{"experts": 128, "topology": "tpu-v3-128"}, ...]: E = G = D experts on the
//                first E cores of that topology, ascending in experts
//   topology_overrides  object merged into every point's topology (e.g. the effective link
//                figures fitted to Figure 9 in experiments/gshard_fig9.json)
//   sim          sim::SimOptions JSON (device, network, collectives, fusion, ...); num_partitions
//                is set per point
//   model        {tokens_per_group, d_model, d_ff, num_heads, head_dim, seq_len, capacity,
//                moe_layer_attention, dtype} overrides of models::PaperMoeConfig(E)
//   baseline_experts  the size growth and shares are reported against (the first point's when
//                absent)
//   details      write each point's simulator tables (sim::WriteResults: results.json,
//                categories.csv, ops.csv, collectives.csv, ...) to DIR/<E>E/ (default true)
//   reference    {"file": path relative to the source tree, "figure": key, "experts": size,
//                "category_map": {paper name: our category}}
//
// Outputs: results.csv (kBreakdownColumns), results.json (the config, the resolved model and
// sim options, per point the rows, the step time, the total growth vs the baseline, the
// AllToAll share and the collectives), bars.csv and plot.{png,svg} (stacked bars per category:
// roofline and modelled per size, the paper's roofline and measured beside them).

#include "experiments/moe_breakdown.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/io.h"
#include "base/resources.h"
#include "experiments/runners.h"
#include "models/scopes.h"
#include "pipeline/simulate.h"
#include "report/plot.h"
#include "report/progress.h"
#include "report/run_report.h"
#include "sim/device/device.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kTotal = "total";

struct BreakdownPoint {
  int64_t experts = 0;
  std::string topology;
};

struct ModelOverrides {
  nlohmann::json json = nlohmann::json::object();  // as given

  models::MoeLayerConfig Apply(int64_t experts) const {
    return models::MoeLayerConfig::FromJson(json, "model", models::PaperMoeConfig(experts));
  }
};

struct Reference {
  std::string file;  // relative to the source tree
  std::string figure;
  int64_t experts = 128;
  std::map<std::string, std::string> category_map;
};

struct MoeBreakdownConfig {
  std::string name = "moe_layer_breakdown";
  std::vector<BreakdownPoint> points = {
      {128, "tpu-v3-128"}, {512, "tpu-v3-512"}, {2048, "tpu-v3-2048"}};
  nlohmann::json sim = nlohmann::json::object();
  nlohmann::json topology_overrides = nlohmann::json::object();
  ModelOverrides model;
  int64_t baseline_experts = 0;  // 0: the first point's
  bool details = true;
  std::optional<Reference> reference;

  static MoeBreakdownConfig FromJson(const nlohmann::json& j) {
    MoeBreakdownConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    if (r.Has("points")) {
      const nlohmann::json& ps = r.Value("points");
      if (!ps.is_array() || ps.empty()) FailAt(r.PathOf("points"), "must be a non-empty array");
      c.points.clear();
      for (size_t k = 0; k < ps.size(); ++k) {
        JsonReader p(ps[k], IndexPath(r.PathOf("points"), k));
        BreakdownPoint pt;
        pt.experts = p.Int("experts", Limit::AtLeast(2));
        pt.topology = p.String("topology");
        p.Finish();
        if (!c.points.empty() && pt.experts <= c.points.back().experts) {
          FailAt(IndexPath(r.PathOf("points"), k) + ".experts", "must be ascending");
        }
        c.points.push_back(pt);
      }
    }
    if (r.Has("topology_overrides")) {
      c.topology_overrides = r.Value("topology_overrides");
      if (!c.topology_overrides.is_object()) {
        FailAt(r.PathOf("topology_overrides"), "must be an object");
      }
    }
    // Each point's topology, checked now: a bad override or a slice with fewer cores than
    // experts is an error before anything runs.
    for (size_t k = 0; k < c.points.size(); ++k) {
      const std::string path = IndexPath(r.PathOf("points"), k) + ".topology";
      nlohmann::json t = topo::ExpandTopologyConfig(c.points[k].topology, path);
      t.merge_patch(c.topology_overrides);
      const topo::TopologyConfig config = topo::TopologyConfig::FromJson(t, path);
      if (c.points[k].experts > config.NumCores()) {
        FailAt(path, std::to_string(c.points[k].experts) + " experts need as many cores; '" +
                         c.points[k].topology + "' has " + std::to_string(config.NumCores()));
      }
    }
    if (r.Has("sim")) {
      c.sim = r.Value("sim");
      sim::SimOptions::FromJson(c.sim, r.PathOf("sim"));  // errors now, not after a run
    }
    if (r.Has("model")) {
      c.model.json = r.Value("model");
      c.model.Apply(c.points.front().experts);  // errors now
    }
    c.baseline_experts = r.Int("baseline_experts", c.points.front().experts, Limit::AtLeast(2));
    if (std::none_of(c.points.begin(), c.points.end(),
                     [&](const BreakdownPoint& p) { return p.experts == c.baseline_experts; })) {
      FailAt(r.PathOf("baseline_experts"), "must be one of the points' experts");
    }
    c.details = r.Bool("details", c.details);
    if (r.Has("reference")) {
      JsonReader ref = r.Object("reference");
      Reference rf;
      rf.file = ref.String("file");
      rf.figure = ref.String("figure");
      rf.experts = ref.Int("experts", rf.experts, Limit::AtLeast(2));
      if (ref.Has("category_map")) {
        const nlohmann::json& m = ref.Value("category_map");
        if (!m.is_object()) FailAt(ref.PathOf("category_map"), "must be an object");
        for (auto it = m.begin(); it != m.end(); ++it) {
          rf.category_map[it.key()] =
              AsString(it.value(), ref.PathOf("category_map") + "." + it.key());
        }
      }
      ref.Finish();
      c.reference = rf;
    }
    r.Finish();
    return c;
  }
};

// Sums of the category rows of one size (every row but "total").
const BreakdownRow& TotalRow(const std::vector<BreakdownRow>& rows) { return rows.back(); }

double RowModelled(const std::vector<BreakdownRow>& rows, const std::string& category) {
  for (const BreakdownRow& r : rows) {
    if (r.category == category) return r.modelled_us;
  }
  return 0;
}

// bars.csv: one row per bar ("128E roofline", ...), one column per category, times in us to the
// nanosecond. A size that ran out of device memory is labelled so ("2048E modelled (OOM)"), in
// the plot too. Time outside Figure 8's seven categories is an "other" column, present only when
// some bar has any.
CsvTable BarsTable(const std::vector<std::vector<BreakdownRow>>& per_point,
                   const std::vector<std::string>& statuses, const std::optional<PaperBars>& paper) {
  std::vector<std::vector<double>> values;  // per bar: the seven categories, then other
  std::vector<std::string> labels;
  // A paper bar: its seven categories, nothing in "other".
  auto add = [&](const std::string& label, const std::map<std::string, double>& by_category) {
    std::vector<double> row;
    for (std::string_view s : models::kFigure8Scopes) {
      auto it = by_category.find(std::string(s));
      row.push_back(it == by_category.end() ? 0.0 : it->second);
    }
    row.push_back(0);
    labels.push_back(label);
    values.push_back(std::move(row));
  };
  for (size_t k = 0; k < per_point.size(); ++k) {
    const std::vector<BreakdownRow>& rows = per_point[k];
    const std::string e = std::to_string(rows.front().experts) + "E";
    const std::string oom = statuses[k] == kPointOom ? " (OOM)" : "";
    if (paper && paper->experts == rows.front().experts) {
      add("paper " + e + " roofline", paper->roofline);
      add("paper " + e + " measured", paper->measured);
    }
    for (bool roofline : {true, false}) {
      std::map<std::string, double> by_category;
      double other = 0;
      for (const BreakdownRow& r : rows) {
        if (r.category == kTotal) continue;
        const double v = roofline ? r.roofline_us : r.modelled_us;
        const bool figure8 = std::find(models::kFigure8Scopes.begin(), models::kFigure8Scopes.end(),
                                       r.category) != models::kFigure8Scopes.end();
        (figure8 ? by_category[r.category] : other) += v;
      }
      add(e + (roofline ? " roofline" : " modelled") + oom, by_category);
      values.back().back() = other;
    }
  }
  const bool with_other = std::any_of(values.begin(), values.end(),
                                      [](const std::vector<double>& v) { return v.back() != 0; });
  std::vector<std::string> header = {"bar"};
  for (std::string_view s : models::kFigure8Scopes) header.emplace_back(s);
  if (with_other) header.emplace_back("other");
  CsvTable bars(header);
  for (size_t b = 0; b < values.size(); ++b) {
    std::vector<std::string> row = {labels[b]};
    for (size_t k = 0; k + (with_other ? 0 : 1) < values[b].size(); ++k) {
      row.push_back(CsvFixed(values[b][k], 3));
    }
    bars.AddRow(std::move(row));
  }
  return bars;
}

// The stacked bars of bars.csv, whose columns 2..last are categories.
std::string PlotScript(const std::string& name, size_t columns) {
  std::ostringstream gp;
  gp << "set datafile separator ','\n"
        "set style data histograms\n"
        "set style histogram rowstacked\n"
        "set style fill solid 0.85 border -1\n"
        "set boxwidth 0.7\n"
        "set termoption noenhanced\n"
        "set key outside right top vertical\n"
        "set grid ytics\n"
        "set ylabel 'time per core (us), forward pass of an MoE + Transformer layer pair'\n"
        "set xlabel 'experts (one per core): the paper, roofline and measured; podsim, roofline "
        "and modelled'\n"
        "set xtics rotate by -30\n"
        "set title '"
     << name
     << ": time per category, podsim roofline / modelled vs GShard Figure 8 (paper: 128E only)'\n"
        "plot for [i=2:"
     << columns << "] 'bars.csv' using i:xtic(1) title columnheader(i)\n";
  return gp.str();
}

}  // namespace

PaperBars ReadPaperBars(const std::string& file, const std::string& figure, int64_t experts,
                        const std::map<std::string, std::string>& category_map,
                        const std::string& path) {
  const nlohmann::json data = ReadJsonFile(file);
  if (!data.contains(figure)) FailAt(path + ".figure", "'" + figure + "' not in " + file);
  const nlohmann::json& fig = data[figure];
  PaperBars bars;
  bars.experts = experts;
  for (const char* series : {"roofline", "measured"}) {
    if (!fig.contains(series) || !fig[series].is_object()) {
      FailAt(path + ".figure", "'" + figure + "' in " + file + " has no object \"" + series + "\"");
    }
    std::map<std::string, double>& out =
        std::string(series) == "roofline" ? bars.roofline : bars.measured;
    for (auto it = fig[series].begin(); it != fig[series].end(); ++it) {
      auto mapped = category_map.find(it.key());
      out[mapped == category_map.end() ? it.key() : mapped->second] =
          AsDouble(it.value(), file + ": " + figure + "." + series + "." + it.key());
    }
  }
  return bars;
}

std::vector<BreakdownRow> BreakdownRows(int64_t experts, const sim::RunResult& result,
                                        const std::optional<PaperBars>& paper) {
  const bool has_paper = paper && paper->experts == experts;
  auto paper_value = [&](const std::map<std::string, double>& m, const std::string& c) {
    if (!has_paper) return kNaN;
    auto it = m.find(c);
    return it == m.end() ? kNaN : it->second;
  };
  std::map<std::string, const sim::CategoryResult*> by_name;
  for (const sim::CategoryResult& c : result.categories) by_name[c.category] = &c;
  std::vector<std::string> order;
  for (std::string_view s : models::kFigure8Scopes) order.emplace_back(s);
  for (const auto& [name, c] : by_name) {
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  std::vector<BreakdownRow> rows;
  BreakdownRow total{experts, kTotal, 0, 0, paper_value(paper ? paper->roofline : std::map<std::string, double>{}, kTotal),
                     paper_value(paper ? paper->measured : std::map<std::string, double>{}, kTotal)};
  for (const std::string& name : order) {
    BreakdownRow row;
    row.experts = experts;
    row.category = name;
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      row.roofline_us = it->second->roofline.micros();
      row.modelled_us = it->second->modelled().micros();
    }
    row.paper_roofline_us = has_paper ? paper_value(paper->roofline, name) : kNaN;
    row.paper_measured_us = has_paper ? paper_value(paper->measured, name) : kNaN;
    total.roofline_us += row.roofline_us;
    total.modelled_us += row.modelled_us;
    rows.push_back(row);
  }
  rows.push_back(total);
  return rows;
}

CsvTable BreakdownTable(const std::vector<BreakdownRow>& rows, const std::string& status) {
  CsvTable table(kBreakdownColumns);
  for (const BreakdownRow& r : rows) {
    table.AddRow({std::to_string(r.experts), r.category, CsvFixed(r.roofline_us, 3),
                  CsvFixed(r.modelled_us, 3), CsvNumber(r.paper_roofline_us),
                  CsvNumber(r.paper_measured_us), status});
  }
  return table;
}

void CheckMoeLayerBreakdown(const nlohmann::json& config) { MoeBreakdownConfig::FromJson(config); }

RunSummary RunMoeLayerBreakdown(const ExperimentContext& ctx) {
  const MoeBreakdownConfig c = MoeBreakdownConfig::FromJson(ctx.config);
  std::optional<PaperBars> paper;
  if (c.reference) {
    paper = ReadPaperBars(FindDataFile(c.reference->file), c.reference->figure,
                          c.reference->experts, c.reference->category_map, "reference");
  }
  const sim::SimOptions base = sim::SimOptions::FromJson(c.sim, "sim");
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(kBreakdownColumns);
  // The points that gave times (ok or oom), their rows and their index in `points`.
  std::vector<std::vector<BreakdownRow>> per_point;
  std::vector<size_t> point_index;
  std::vector<std::string> point_statuses;
  nlohmann::json points = nlohmann::json::array();
  nlohmann::json resolved_models = nlohmann::json::array();
  report::Progress progress(c.name, static_cast<int64_t>(c.points.size()));
  for (const BreakdownPoint& pt : c.points) {
    const models::MoeLayerConfig model = c.model.Apply(pt.experts);
    resolved_models.push_back(model.ToJson());
    sim::RunResult result;
    try {
      nlohmann::json topology_json = topo::ExpandTopologyConfig(pt.topology, "points.topology");
      topology_json.merge_patch(c.topology_overrides);
      const std::unique_ptr<topo::Topology> topology =
          topo::LoadTopology(topology_json, "points.topology");
      sim::SimOptions options = base;
      options.num_partitions = pt.experts;
      // No device in "sim": the one the topology names for its chip generation, if any.
      if (!c.sim.contains("device") && topology_json.contains("device")) {
        options.device =
            sim::DeviceSpecFromConfig(topology_json["device"], "points.topology.device");
      }
      result = pipeline::SimulateMoeLayerPair(model, *topology, options);
    } catch (const Error& e) {
      // The point cannot be simulated (it needs more memory than this machine has, ...): the
      // other points still run, and every output says this one failed.
      std::cerr << c.name << ": " << pt.experts << "E failed: " << e.what() << "\n";
      CountPoint(summary, kPointFailed);
      table.AddRow({std::to_string(pt.experts), kTotal, "", "", "", "", kPointFailed});
      points.push_back({{"experts", pt.experts},
                        {"topology", pt.topology},
                        {"status", kPointFailed},
                        {"error", e.what()}});
      progress.Step(std::to_string(pt.experts) + "E");
      continue;
    }
    const std::string status = PointStatus(result);
    CountPoint(summary, status);
    if (c.details) report::WriteResults(result, ctx.out_dir + "/" + std::to_string(pt.experts) + "E");
    std::vector<BreakdownRow> rows = BreakdownRows(pt.experts, result, paper);
    const CsvTable point_table = BreakdownTable(rows, status);
    for (const std::vector<std::string>& row : point_table.rows()) table.AddRow(row);
    per_point.push_back(rows);
    point_statuses.push_back(status);
    point_index.push_back(points.size());
    nlohmann::json cats = nlohmann::json::object();
    for (const BreakdownRow& r : rows) {
      cats[r.category] = {{"roofline_us", r.roofline_us}, {"modelled_us", r.modelled_us}};
    }
    nlohmann::json collectives = nlohmann::json::array();
    for (const sim::CollectiveResult& col : result.collectives) {
      collectives.push_back({{"instruction", col.instruction},
                             {"kind", col.kind},
                             {"category", col.category},
                             {"bytes", col.bytes},
                             {"mean_us", col.mean.micros()},
                             {"roofline_us", col.roofline.micros()}});
    }
    nlohmann::json point = {{"experts", pt.experts},
                            {"topology", pt.topology},
                            {"status", status},
                            {"step_time_us", result.step_time.micros()},
                            {"roofline_time_us", result.roofline_time.micros()},
                            {"roofline_fraction", result.roofline_fraction},
                            {"total_modelled_us", TotalRow(rows).modelled_us},
                            {"total_roofline_us", TotalRow(rows).roofline_us},
                            {"peak_memory_bytes", result.memory.peak_bytes},
                            {"categories", cats},
                            {"collectives", collectives}};
    if (result.memory.oom) point["error"] = result.memory.message;
    points.push_back(point);
    progress.Step(std::to_string(pt.experts) + "E");
  }
  // Growth and AllToAll share against the baseline size (null when the baseline failed).
  const auto base_it = std::find_if(per_point.begin(), per_point.end(), [&](const auto& rows) {
    return rows.front().experts == c.baseline_experts;
  });
  for (size_t k = 0; k < per_point.size(); ++k) {
    const BreakdownRow& t = TotalRow(per_point[k]);
    const double a2a = RowModelled(per_point[k], std::string(models::kScopeDispatchCombine));
    nlohmann::json& point = points[point_index[k]];
    if (base_it != per_point.end()) {
      point["total_growth_vs_baseline"] = t.modelled_us / TotalRow(*base_it).modelled_us;
      point["total_roofline_growth_vs_baseline"] = t.roofline_us / TotalRow(*base_it).roofline_us;
    }
    point["alltoall_us"] = a2a;
    point["alltoall_share"] = a2a / t.modelled_us;
  }
  nlohmann::json out = {{"experiment", "moe_layer_breakdown"},
                        {"name", c.name},
                        {"config", ctx.config},
                        {"summary", summary.ToString()},
                        {"resolved", {{"sim", base.ToJson()}, {"models", resolved_models}}},
                        {"baseline_experts", c.baseline_experts},
                        {"points", points}};
  if (paper) {
    const double paper_a2a = paper->measured.count(std::string(models::kScopeDispatchCombine))
                                 ? paper->measured.at(std::string(models::kScopeDispatchCombine))
                                 : kNaN;
    out["paper"] = {{"experts", paper->experts},
                    {"roofline_us", paper->roofline},
                    {"measured_us", paper->measured},
                    {"alltoall_share_measured",
                     paper->measured.count(kTotal) ? paper_a2a / paper->measured.at(kTotal) : kNaN}};
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  const CsvTable bars = BarsTable(per_point, point_statuses, paper);
  WriteFileAtomic(ctx.out_dir + "/bars.csv", bars.ToString());
  WriteResultsJson(ctx, out);
  if (!per_point.empty()) {
    report::RenderPlot(ctx.out_dir, "plot", PlotScript(c.name, bars.columns()), 1200, 650);
  }
  return summary;
}

}  // namespace podsim::experiments
