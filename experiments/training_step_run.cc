// The "training_step" experiment (GShard Table 3 and Figure 7): the whole model's training step,
// built, partitioned and simulated per point, with rematerialisation chosen by fit
// (pipeline/training.h), the throughput figures Table 3 reports and the memory Figure 7 draws.
//
// Config keys:
//   points     [{"model": "2048E,36L" | {GShardModelConfig keys, "name": ...},
//                "topology": "tpu-v3-2048"}, ...]: the model on every core of the topology
//              (one partition per core)
//   topology_overrides  object merged into every point's topology
//   sim        sim::SimOptions JSON; num_partitions is set per point
//   optimizer  models::OptimizerConfig JSON (default Adafactor as the paper)
//   remat      "auto" (default: the least recomputation that fits HBM), or a forced layer-loop
//              policy: "none", "selective", "per-layer"
//   tokens     the training run's tokens, for days and core-years (default 1e12, Table 3's)
//   reference  {"file": path in the source tree, "table": key}: the paper's values per model,
//              an array of rows with "model" or an object keyed by model; "steps_per_s" and
//              "core_years" (Table 3), "weights" and "activations" (Figure 7, GB) fill the
//              paper_* columns
//   plot       "core_years" (core-years against parameters, podsim beside the paper, log-log),
//              "memory" (weights and activations per point, stacked bars) or "none" (default)
//   details    write each point's simulator tables to DIR/<model>/ (default false)
//
// MFU, days and core-years as experiments/training_point.h defines them (the reference file's
// table3_note). recompute_pct: the backward loops' recomputation time
// over the step time. weights_gib: weights and optimizer state at the peak; activations_gib:
// the rest of the peak. no_remat_peak_gib: the peak had nothing been recomputed.
// Outputs: results.csv (kTrainingColumns), results.json (the config, per point the resolved
// model, the remat candidates and their peaks, the step's time per category, memory by kind,
// status) and plot.{png,svg} when asked for.

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "base/resources.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "report/plot.h"
#include "report/progress.h"
#include "report/run_report.h"

namespace podsim::experiments {

namespace {

const std::vector<std::string> kTrainingColumns = {
    "model",           "cores",          "batch_tokens",     "params",
    "step_ms",         "steps_per_s",    "core_years",       "days",
    "paper_steps_per_s", "paper_core_years", "remat",        "recompute_pct",
    "mfu",             "peak_gib",       "weights_gib",      "activations_gib",
    "no_remat_peak_gib", "paper_weights_gb", "paper_activations_gb", "status"};

struct TrainingPoint {
  std::string name;
  nlohmann::json model;  // as given
  std::string topology;
};

struct TrainingConfig {
  std::string name = "training_step";
  std::vector<TrainingPoint> points;
  nlohmann::json topology_overrides = nlohmann::json::object();
  nlohmann::json sim = nlohmann::json::object();
  models::OptimizerConfig optimizer;
  std::optional<ir::LoopRemat> remat;  // nullopt: automatic
  double tokens = 1e12;
  bool details = false;
  std::string plot = "none";
  std::string reference_file, reference_table;

  static TrainingConfig FromJson(const nlohmann::json& j) {
    TrainingConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    const nlohmann::json& ps = r.Value("points");
    if (!ps.is_array() || ps.empty()) FailAt(r.PathOf("points"), "must be a non-empty array");
    c.topology_overrides = r.ObjectValue("topology_overrides");
    for (size_t k = 0; k < ps.size(); ++k) {
      const std::string path = IndexPath(r.PathOf("points"), k);
      JsonReader p(ps[k], path);
      TrainingPoint pt;
      pt.model = p.Value("model");
      pt.topology = p.String("topology");
      p.Finish();
      if (pt.model.is_string()) {
        pt.name = pt.model.get<std::string>();
        pt.model = nlohmann::json{{"preset", pt.name}};
      } else if (pt.model.is_object() && pt.model.contains("name") && pt.model["name"].is_string()) {
        pt.name = pt.model["name"].get<std::string>();
        pt.model.erase("name");
      } else {
        FailAt(path + ".model", "must be a preset name or an object with a \"name\"");
      }
      c.points.push_back(std::move(pt));
    }
    c.sim = r.ObjectValue("sim");
    if (r.Has("optimizer")) {
      c.optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), r.PathOf("optimizer"),
                                                      c.optimizer);
    }
    c.remat = pipeline::ParseRematChoice(r.Choice("remat", pipeline::RematChoices(), "auto"));
    c.tokens = r.Double("tokens", c.tokens, Limit::Positive());
    c.details = r.Bool("details", c.details);
    c.plot = r.Choice("plot", {"none", "core_years", "memory"}, c.plot);
    if (r.Has("reference")) {
      JsonReader ref = r.Object("reference");
      c.reference_file = ref.String("file");
      c.reference_table = ref.String("table");
      ref.Finish();
    }
    r.Finish();
    // Errors now, not after the first point ran: which point cannot run on its slice.
    for (size_t k = 0; k < c.points.size(); ++k) {
      CheckTrainingPoint(c.Spec(c.points[k]), IndexPath("points", k));
    }
    return c;
  }

  TrainingPointSpec Spec(const TrainingPoint& p) const {
    return {p.model, p.topology, topology_overrides, sim, optimizer, remat, tokens};
  }
};

// The paper's values for `model` in the reference table: an array of objects with "model", or
// an object keyed by model.
nlohmann::json PaperRow(const nlohmann::json& table, const std::string& model) {
  if (table.is_array()) {
    for (const nlohmann::json& row : table) {
      if (row.is_object() && row.value("model", "") == model) return row;
    }
  } else if (table.is_object() && table.contains(model) && table[model].is_object()) {
    return table[model];
  }
  return nullptr;
}

double Gib(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(1ull << 30); }

// Columns of the CSV by name, so that a row is filled by what a point has.
class Row {
 public:
  Row() : cells_(kTrainingColumns.size()) {}
  void Set(const std::string& column, std::string value) {
    for (size_t k = 0; k < kTrainingColumns.size(); ++k) {
      if (kTrainingColumns[k] == column) {
        cells_[k] = std::move(value);
        return;
      }
    }
    throw Error("training_step: no column '" + column + "'");
  }
  const std::vector<std::string>& cells() const { return cells_; }

 private:
  std::vector<std::string> cells_;
};

// One plotted point (plot.csv): label, parameters (billions), podsim's and the paper's values.
struct PlotPoint {
  std::string label;
  double params_b = 0;
  std::string status;
  double core_years = 0, paper_core_years = -1;
  double weights = 0, activations = 0, paper_weights = -1, paper_activations = -1;  // GiB / GB
  std::string remat;
};

// gnuplot reads "?" as a missing value.
std::string PlotValue(double v) { return v < 0 ? "?" : FormatFixed(v, 4); }

void WritePlot(const ExperimentContext& ctx, const TrainingConfig& c,
               const std::vector<PlotPoint>& points) {
  std::ostringstream data, gp;
  if (c.plot == "core_years") {
    data << "label params_b podsim paper\n";
    for (const PlotPoint& p : points) {
      if (p.status != kPointOk) continue;  // a failed or OOM point has no step time
      data << '"' << p.label << "\" " << PlotValue(p.params_b) << ' ' << PlotValue(p.core_years)
           << ' ' << PlotValue(p.paper_core_years) << '\n';
    }
    gp << "set title '" << c.name << ": core-years to " << FormatFixed(c.tokens / 1e12, 2)
       << "e12 tokens against parameters (both series at the exact count of podsim)' noenhanced\n"
       << "set logscale xy\nset xlabel 'parameters (billions)'\nset ylabel 'core-years'\n"
       << "set key top left\nset grid\n"
       << "plot 'plot.csv' using 2:3 title 'podsim' with points pt 7 ps 1.5, \\\n"
       << "     'plot.csv' using 2:4 title 'paper (Table 3)' with points pt 5 ps 1.5, \\\n"
       << "     'plot.csv' using 2:3:1 with labels offset 1,1 noenhanced notitle\n";
  } else {
    data << "label weights activations\n";
    for (const PlotPoint& p : points) {
      std::string label = p.label;
      if (p.status == kPointOk && p.remat != "none") label += " (remat " + p.remat + ")";
      if (p.status != kPointOk) label += " (" + p.status + ")";
      data << '"' << label << "\" " << PlotValue(p.weights) << ' ' << PlotValue(p.activations) << '\n';
      if (p.paper_weights >= 0) {
        data << '"' << p.label << " paper (GB)\" " << PlotValue(p.paper_weights) << ' '
             << PlotValue(p.paper_activations) << '\n';
      }
    }
    gp << "set title '" << c.name << ": per-core memory at the peak (GiB; the bars of the paper in GB)' noenhanced\n"
       << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8\n"
       << "set boxwidth 0.7\nset xtics rotate by -30\nset ylabel 'memory per core'\nset key top left\n"
       << "set grid ytics\nset yrange [0:*]\nset key autotitle columnhead\n"
       << "plot 'plot.csv' using 2:xtic(1) title 'weights and optimizer state', '' using 3 title "
          "'activations and temporaries'\n";
  }
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1100, 650);
}

}  // namespace

void CheckTrainingStep(const nlohmann::json& config) { TrainingConfig::FromJson(config); }

RunSummary RunTrainingStep(const ExperimentContext& ctx) {
  const TrainingConfig c = TrainingConfig::FromJson(ctx.config);
  nlohmann::json paper = nullptr;
  if (!c.reference_file.empty()) {
    const nlohmann::json ref = ReadJsonFile(FindDataFile(c.reference_file));
    if (!ref.contains(c.reference_table)) {
      FailAt("reference.table", "'" + c.reference_table + "' is not in " + c.reference_file);
    }
    paper = ref[c.reference_table];
  }
  const std::string remat_choice = c.remat ? ir::LoopRematName(*c.remat) : "auto";
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(kTrainingColumns);
  nlohmann::json points = nlohmann::json::array();
  std::vector<PlotPoint> plotted;
  report::Progress progress(c.name, static_cast<int64_t>(c.points.size()));
  for (size_t k = 0; k < c.points.size(); ++k) {
    const TrainingPoint& pt = c.points[k];
    const std::string path = IndexPath("points", k);
    const nlohmann::json paper_row = PaperRow(paper, pt.name);
    auto paper_value = [&](const char* key) {
      return paper_row.is_object() && paper_row.contains(key) && paper_row[key].is_number()
                 ? paper_row[key].get<double>()
                 : -1.0;
    };
    auto paper_cell = [&](const char* key) {
      const double v = paper_value(key);
      return v < 0 ? std::string() : CsvNumber(v);
    };
    Row row;
    row.Set("model", pt.name);
    row.Set("paper_steps_per_s", paper_cell("steps_per_s"));
    row.Set("paper_core_years", paper_cell("core_years"));
    row.Set("paper_weights_gb", paper_cell("weights"));
    row.Set("paper_activations_gb", paper_cell("activations"));
    PlotPoint plot_point;
    plot_point.label = pt.name;
    plot_point.paper_core_years = paper_value("core_years");
    plot_point.paper_weights = paper_value("weights");
    plot_point.paper_activations = paper_value("activations");
    nlohmann::json point = {{"model", pt.name}, {"topology", pt.topology}, {"remat_choice", remat_choice}};
    try {
      const TrainingPointResult p = RunTrainingPoint(c.Spec(pt), path);
      const pipeline::TrainingRun& run = p.run;
      const sim::RunResult& result = run.result;
      const std::string status = p.status;
      CountPoint(summary, status);
      if (c.details) report::WriteResults(result, ctx.out_dir + "/" + pt.name);
      const std::string remat = ir::LoopRematName(run.remat);
      // Fixed precision: 0.1 ms, 3 decimals for rates and memory, 2 for days and core-years.
      row.Set("cores", std::to_string(p.cores));
      row.Set("batch_tokens", std::to_string(run.batch_tokens));
      row.Set("params", std::to_string(run.parameters));
      row.Set("remat", remat);
      row.Set("peak_gib", FormatFixed(Gib(run.memory.peak_bytes), 3));
      row.Set("weights_gib", FormatFixed(Gib(p.weights_bytes), 3));
      row.Set("activations_gib", FormatFixed(Gib(p.activations_bytes), 3));
      row.Set("no_remat_peak_gib", FormatFixed(Gib(run.no_remat_peak_bytes), 3));
      row.Set("status", status);
      // An OOM step's time is not a result.
      if (status == kPointOk) {
        row.Set("step_ms", FormatFixed(p.step_s * 1e3, 1));
        row.Set("steps_per_s", FormatFixed(p.steps_per_s, 3));
        row.Set("core_years", FormatFixed(p.core_years, 2));
        row.Set("days", FormatFixed(p.days, 2));
        row.Set("recompute_pct", FormatFixed(100 * run.recompute_fraction, 1));
        row.Set("mfu", FormatFixed(p.mfu, 3));
      }
      plot_point.params_b = static_cast<double>(run.parameters) * 1e-9;
      plot_point.status = status;
      plot_point.core_years = p.core_years;
      plot_point.weights = Gib(p.weights_bytes);
      plot_point.activations = Gib(p.activations_bytes);
      plot_point.remat = remat;
      nlohmann::json candidates = nlohmann::json::array();
      for (const pipeline::RematCandidate& cand : run.candidates) {
        candidates.push_back({{"remat", ir::LoopRematName(cand.policy)},
                              {"peak_memory_bytes", cand.peak_bytes},
                              {"fits", cand.fits}});
      }
      nlohmann::json categories = nlohmann::json::object();
      for (const auto& cat : result.categories) {
        categories[cat.category] = {{"modelled_us", cat.modelled().micros()},
                                    {"roofline_us", cat.roofline.micros()}};
      }
      point.update({{"status", status},
                    {"cores", p.cores},
                    {"resolved_model", p.model.ToJson()},
                    {"batch_tokens", run.batch_tokens},
                    {"parameters", run.parameters},
                    {"remat", remat},
                    {"remat_candidates", candidates},
                    {"no_remat_peak_bytes", run.no_remat_peak_bytes},
                    {"memory_saved_bytes", run.memory_saved_bytes},
                    {"recompute_fraction", run.recompute_fraction},
                    {"step_time_us", result.step_time.micros()},
                    {"steps_per_s", p.steps_per_s},
                    {"days", p.days},
                    {"core_years", p.core_years},
                    {"model_flops", run.model_flops},
                    {"mfu", p.mfu},
                    {"peak_memory_bytes", run.memory.peak_bytes},
                    {"peak_instruction", run.memory.peak_instruction},
                    {"memory_by_kind", run.memory.at_peak.by_kind},
                    {"categories", categories},
                    {"paper", paper_row}});
      if (run.memory.oom) point["error"] = run.memory.message + " (with every remat policy tried)";
      if (status != kPointOk) {
        std::cerr << c.name << ": " << pt.name << ": " << run.memory.message << "\n";
      }
    } catch (const Error& e) {
      std::cerr << c.name << ": " << pt.name << " failed: " << e.what() << "\n";
      CountPoint(summary, kPointFailed);
      row.Set("remat", remat_choice);
      row.Set("status", kPointFailed);
      plot_point.status = kPointFailed;
      point.update({{"status", kPointFailed}, {"error", e.what()}});
    }
    table.AddRow(row.cells());
    plotted.push_back(plot_point);
    points.push_back(point);
    progress.Step(pt.name);
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "training_step"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"resolved", ResolvedTrainingSetup(c.sim, c.optimizer)},
                         {"points", points}});
  if (c.plot != "none") WritePlot(ctx, c, plotted);
  return summary;
}

}  // namespace podsim::experiments
