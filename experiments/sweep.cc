// The "sweep" experiment (capacity planning): one training-step point (experiments/
// training_point.h: the whole model on every core of a topology) varied over axes of config
// paths, one row per point.
//
// Config keys:
//   base       the point every other is varied from: {"model": a preset name ("2048E,36L") or
//              a models::GShardModelConfig object, "topology": a preset name or file,
//              "topology_overrides", "sim", "optimizer", "remat" ("auto" default), "tokens"
//              (1e12 default)}
//   axes       [{"path": "model.experts", "values": [128, 512, 2048]}, ...], in the order of the
//              results' columns. A path is set in `base` as --set sets a config: "topology"
//              replaces the preset, "topology.X" sets topology_overrides.X, "model.X" a model
//              key (on a preset name: {"preset": name, "X": value}), "sim.X", "remat", ...
//   combine    "cartesian" (default: every combination, the last axis varying fastest) or
//              "zip" (the k-th value of every axis; all axes as long)
//   skip       [{"topology": "tpu-v3-2048", "model.experts": 128}, ...]: a point whose axis
//              values match every entry of one object is not run (status "skipped")
//   price_per_chip_hour  the cost column's price (default 0: no cost column values)
//   plot       {"x": column, "y": column, "series": column (optional)}: y against x from
//              results.csv, one line per series value, points that did not run marked
//
// Status of a point: ok; oom (the step does not fit HBM under any remat policy: memory is
// reported, no step time); invalid (the configuration cannot run, e.g. experts that do not
// divide over the slice's cores: the reason); failed (the simulation raised an error: the
// message); skipped (a skip rule). Each is in results.csv, results.json and the summary line.
//
// Resumable and safe: each finished point is appended to DIR/points.jsonl (one line, written
// with one append and synced) as it completes. `podsim run --resume` on a directory a run left
// (killed, failed or done) keeps the points it finished (a torn last line is dropped), runs the
// rest, and writes exactly the results a clean run writes: rows in point order, every cell as
// the point wrote it. A log of another config (its fingerprint differs) is refused.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "report/plot.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

// The columns after the axes'.
const std::vector<std::string> kSweepColumns = {"status",     "reason",
                                                "cores",      "chips",
                                                "params",     "remat",
                                                "step_ms",    "steps_per_s",
                                                "mfu",        "peak_gib",
                                                "days",       "core_years",
                                                "chip_hours", "cost_per_1e12_tokens"};

constexpr const char* kLogFile = "points.jsonl";

struct Axis {
  std::string path;
  std::vector<nlohmann::json> values;
};

struct SweepConfig {
  std::string name = "sweep";
  nlohmann::json base;
  std::vector<Axis> axes;
  bool zip = false;
  std::vector<nlohmann::json> skip;  // objects: axis path -> value
  double price_per_chip_hour = 0;
  std::string plot_x, plot_y, plot_series;

  int64_t NumPoints() const {
    if (zip) return static_cast<int64_t>(axes[0].values.size());
    int64_t n = 1;
    for (const Axis& a : axes) n *= static_cast<int64_t>(a.values.size());
    return n;
  }
  // The axis values of point k (cartesian: the last axis varies fastest).
  std::vector<nlohmann::json> ValuesOf(int64_t k) const {
    std::vector<nlohmann::json> v(axes.size());
    for (size_t a = axes.size(); a-- > 0;) {
      const int64_t n = static_cast<int64_t>(axes[a].values.size());
      v[a] = axes[a].values[static_cast<size_t>(zip ? k : k % n)];
      if (!zip) k /= n;
    }
    return v;
  }
  std::string Label(const std::vector<nlohmann::json>& values) const {
    std::string s;
    for (size_t a = 0; a < axes.size(); ++a) {
      s += (a ? " " : "") + axes[a].path + "=" + Cell(values[a]);
    }
    return s;
  }
  bool Skipped(const std::vector<nlohmann::json>& values) const {
    for (const nlohmann::json& rule : skip) {
      bool all = true;
      for (size_t a = 0; a < axes.size() && all; ++a) {
        if (rule.contains(axes[a].path)) all = rule[axes[a].path] == values[a];
      }
      if (all) return true;
    }
    return false;
  }
  // The point's config: `base` with each axis value set at its path.
  nlohmann::json PointJson(const std::vector<nlohmann::json>& values) const {
    nlohmann::json p = base;
    for (size_t a = 0; a < axes.size(); ++a) {
      std::string path = axes[a].path;
      if (path.rfind("topology.", 0) == 0) path = "topology_overrides." + path.substr(9);
      if (path.rfind("model.", 0) == 0 && p["model"].is_string()) {
        p["model"] = nlohmann::json{{"preset", p["model"]}};
      }
      SetAtPath(p, path, values[a]);
    }
    return p;
  }

  // An axis value as a CSV cell: strings as they are, numbers shortest (1e+11, not
  // 100000000000.0), anything else as JSON.
  static std::string Cell(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) return CsvNumber(v.get<double>());
    return v.dump();
  }

  static SweepConfig FromJson(const nlohmann::json& j) {
    SweepConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    c.base = r.Value("base");
    if (!c.base.is_object()) FailAt(r.PathOf("base"), "must be an object: one training-step point");
    const nlohmann::json& axes = r.Value("axes");
    if (!axes.is_array() || axes.empty()) {
      FailAt(r.PathOf("axes"), "must be a non-empty array of {\"path\": ..., \"values\": [...]}");
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      JsonReader a(axes[k], IndexPath(r.PathOf("axes"), k));
      Axis axis;
      axis.path = a.String("path");
      const nlohmann::json& values = a.Value("values");
      if (!values.is_array() || values.empty()) {
        FailAt(a.PathOf("values"), "must be a non-empty array");
      }
      axis.values.assign(values.begin(), values.end());
      a.Finish();
      for (const Axis& other : c.axes) {
        if (other.path == axis.path) FailAt(a.PathOf("path"), "'" + axis.path + "' is swept twice");
      }
      c.axes.push_back(std::move(axis));
    }
    c.zip = r.Choice("combine", {"cartesian", "zip"}, "cartesian") == "zip";
    if (c.zip) {
      for (size_t k = 1; k < c.axes.size(); ++k) {
        if (c.axes[k].values.size() != c.axes[0].values.size()) {
          FailAt(IndexPath(r.PathOf("axes"), k) + ".values",
                 "zip needs axes of one length: " + std::to_string(c.axes[k].values.size()) +
                     " values against " + std::to_string(c.axes[0].values.size()));
        }
      }
    }
    if (r.Has("skip")) {
      const nlohmann::json& skip = r.Value("skip");
      if (!skip.is_array()) FailAt(r.PathOf("skip"), "must be an array of objects");
      for (size_t k = 0; k < skip.size(); ++k) {
        const std::string path = IndexPath(r.PathOf("skip"), k);
        if (!skip[k].is_object() || skip[k].empty()) {
          FailAt(path, "must be a non-empty object of axis path -> value");
        }
        for (const auto& [key, value] : skip[k].items()) {
          bool known = false;
          for (const Axis& a : c.axes) known = known || a.path == key;
          if (!known) FailAt(JoinPath(path, key), "is not one of the axes' paths");
        }
        c.skip.push_back(skip[k]);
      }
    }
    c.price_per_chip_hour = r.Double("price_per_chip_hour", 0, Limit::NonNegative());
    if (r.Has("plot")) {
      JsonReader p = r.Object("plot");
      c.plot_x = p.String("x");
      c.plot_y = p.String("y");
      c.plot_series = p.String("series", "");
      p.Finish();
      for (const std::string* col : {&c.plot_x, &c.plot_y, &c.plot_series}) {
        if (!col->empty() && !c.HasColumn(*col)) {
          FailAt(r.PathOf("plot"), "'" + *col + "' is not a column of results.csv (" +
                                       JoinColumns(c.Columns()) + ")");
        }
      }
    }
    r.Finish();
    // Every point's config must parse (a misspelt path is an error now, not a column of
    // invalid points); whether its model can run on its slice is the point's status.
    for (int64_t k = 0; k < c.NumPoints(); ++k) {
      const std::vector<nlohmann::json> values = c.ValuesOf(k);
      try {
        Spec(c.PointJson(values), "base");
      } catch (const ConfigError& e) {
        throw ConfigError("point " + std::to_string(k) + " (" + c.Label(values) + "): " + e.what());
      }
    }
    return c;
  }

  // The training point a point's config describes (structural errors only: ConfigError).
  static TrainingPointSpec Spec(const nlohmann::json& p, const std::string& path) {
    JsonReader r(p, path);
    TrainingPointSpec s;
    s.model = r.Value("model");
    if (s.model.is_string()) s.model = nlohmann::json{{"preset", s.model}};
    if (!s.model.is_object()) FailAt(r.PathOf("model"), "must be a preset name or an object");
    models::GShardModelConfig::FromJson(s.model, r.PathOf("model"), {});
    s.topology = r.String("topology");
    topo::ExpandTopologyConfig(s.topology, r.PathOf("topology"));  // an unknown preset: now
    if (r.Has("topology_overrides")) {
      s.topology_overrides = r.Value("topology_overrides");
      if (!s.topology_overrides.is_object())
        FailAt(r.PathOf("topology_overrides"), "must be an object");
    }
    if (r.Has("sim")) {
      s.sim = r.Value("sim");
      sim::SimOptions::FromJson(s.sim, r.PathOf("sim"));
    }
    if (r.Has("optimizer")) {
      s.optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), r.PathOf("optimizer"),
                                                      s.optimizer);
    }
    s.remat = pipeline::ParseRematChoice(r.Choice("remat", pipeline::RematChoices(), "auto"));
    s.tokens = r.Double("tokens", s.tokens, Limit::Positive());
    r.Finish();
    return s;
  }

  std::vector<std::string> Columns() const {
    std::vector<std::string> cols;
    for (const Axis& a : axes) cols.push_back(a.path);
    cols.insert(cols.end(), kSweepColumns.begin(), kSweepColumns.end());
    return cols;
  }
  bool HasColumn(const std::string& name) const {
    const std::vector<std::string> cols = Columns();
    return std::find(cols.begin(), cols.end(), name) != cols.end();
  }
  static std::string JoinColumns(const std::vector<std::string>& cols) {
    std::string s;
    for (const std::string& c : cols) s += (s.empty() ? "" : ", ") + c;
    return s;
  }
};

// FNV-1a, 64 bits: the config's fingerprint in the points log (stable across runs and builds).
std::string Fingerprint(const nlohmann::json& config) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char ch : config.dump()) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

double Gib(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(1ull << 30); }

// One finished point: its row of results.csv (the axis cells first) and its results.json entry.
struct PointRecord {
  int64_t index = 0;
  std::vector<std::string> row;
  nlohmann::json detail;
};

PointRecord RunPoint(const SweepConfig& c, int64_t k) {
  const std::vector<nlohmann::json> values = c.ValuesOf(k);
  PointRecord rec;
  rec.index = k;
  std::map<std::string, std::string> cells;
  nlohmann::json axes = nlohmann::json::object();
  for (size_t a = 0; a < c.axes.size(); ++a) axes[c.axes[a].path] = values[a];
  rec.detail = {{"index", k}, {"axes", axes}};
  auto finish = [&](const std::string& status, const std::string& reason) {
    cells["status"] = status;
    cells["reason"] = reason;
    rec.detail["status"] = status;
    if (!reason.empty()) rec.detail["reason"] = reason;
    for (size_t a = 0; a < c.axes.size(); ++a) rec.row.push_back(SweepConfig::Cell(values[a]));
    for (const std::string& col : kSweepColumns) rec.row.push_back(cells[col]);
    return rec;
  };
  if (c.Skipped(values)) return finish(kPointSkipped, "a skip rule");
  const std::string path = "point " + std::to_string(k);
  const TrainingPointSpec spec = SweepConfig::Spec(c.PointJson(values), path);
  try {
    CheckTrainingPoint(spec, path);
  } catch (const ConfigError& e) {
    return finish(kPointInvalid, e.what());
  }
  try {
    const TrainingPointResult p = RunTrainingPoint(spec, path);
    const pipeline::TrainingRun& run = p.run;
    const bool ok = std::string(p.status) == kPointOk;
    cells["cores"] = std::to_string(p.cores);
    cells["chips"] = std::to_string(p.chips);
    cells["params"] = std::to_string(run.parameters);
    cells["remat"] = ir::LoopRematName(run.remat);
    cells["peak_gib"] = FormatFixed(Gib(run.memory.peak_bytes), 3);
    // Fixed precision: 0.1 ms, 3 decimals for rates, MFU and memory, 2 for days and years.
    const double cost = p.chip_hours * (1e12 / spec.tokens) * c.price_per_chip_hour;
    if (ok) {
      cells["step_ms"] = FormatFixed(p.step_s * 1e3, 1);
      cells["steps_per_s"] = FormatFixed(p.steps_per_s, 3);
      cells["mfu"] = FormatFixed(p.mfu, 3);
      cells["days"] = FormatFixed(p.days, 2);
      cells["core_years"] = FormatFixed(p.core_years, 2);
      cells["chip_hours"] = FormatFixed(p.chip_hours, 0);
      if (c.price_per_chip_hour > 0) cells["cost_per_1e12_tokens"] = FormatFixed(cost, 0);
    }
    rec.detail.update({{"cores", p.cores},
                       {"chips", p.chips},
                       {"resolved_model", p.model.ToJson()},
                       {"parameters", run.parameters},
                       {"batch_tokens", run.batch_tokens},
                       {"remat", ir::LoopRematName(run.remat)},
                       {"peak_memory_bytes", run.memory.peak_bytes},
                       {"weights_bytes", p.weights_bytes},
                       {"activations_bytes", p.activations_bytes}});
    if (ok) {
      rec.detail.update({{"step_time_us", run.result.step_time.micros()},
                         {"steps_per_s", p.steps_per_s},
                         {"mfu", p.mfu},
                         {"days", p.days},
                         {"core_years", p.core_years},
                         {"chip_hours", p.chip_hours}});
      if (c.price_per_chip_hour > 0) rec.detail["cost_per_1e12_tokens"] = cost;
    }
    return finish(p.status, ok ? "" : run.memory.message + " (with every remat policy tried)");
  } catch (const Error& e) {
    return finish(kPointFailed, e.what());
  }
}

// The points log: one JSON line per finished point.
class PointsLog {
 public:
  PointsLog(std::string path, std::string fingerprint)
      : path_(std::move(path)), fingerprint_(std::move(fingerprint)) {}
  ~PointsLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  PointsLog(const PointsLog&) = delete;
  PointsLog& operator=(const PointsLog&) = delete;

  // The points an earlier run of this config finished (by index; resume only). Rewrites the log
  // without a torn last line, then opens it for appending.
  std::map<int64_t, PointRecord> Open(bool resume, int64_t num_points, size_t row_width) {
    std::map<int64_t, PointRecord> done;
    std::string kept;
    if (resume && ::access(path_.c_str(), F_OK) == 0) {
      const std::string text = ReadFile(path_);
      size_t start = 0;
      while (start < text.size()) {
        const size_t end = text.find('\n', start);
        if (end == std::string::npos) break;  // torn: the run died while appending it
        const std::string line = text.substr(start, end - start + 1);
        start = end + 1;
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object() || !j.contains("fingerprint") || !j.contains("index") ||
            !j.contains("row") || !j.contains("point")) {
          throw Error(path_ + ": not a points log line: " + line.substr(0, 80));
        }
        if (j["fingerprint"] != fingerprint_) {
          throw Error(path_ + " holds points of another sweep config (fingerprint " +
                      j["fingerprint"].dump() + ", this config's \"" + fingerprint_ +
                      "\"); run with --force to start over");
        }
        PointRecord rec;
        rec.index = j["index"].get<int64_t>();
        rec.row = j["row"].get<std::vector<std::string>>();
        rec.detail = j["point"];
        if (rec.index < 0 || rec.index >= num_points || rec.row.size() != row_width) {
          throw Error(path_ + ": point " + std::to_string(rec.index) + " does not fit this sweep");
        }
        if (done.emplace(rec.index, std::move(rec)).second) kept += line;
      }
    }
    WriteFileAtomic(path_, kept);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) throw Error("cannot open '" + path_ + "': " + std::strerror(errno));
    return done;
  }

  // Appends a finished point: one write, then fsync, so that a point is either whole in the
  // log or (killed mid-write) a torn last line that Open drops.
  void Append(const PointRecord& rec) {
    const std::string line = nlohmann::json{{"fingerprint", fingerprint_},
                                            {"index", rec.index},
                                            {"row", rec.row},
                                            {"point", rec.detail}}
                                 .dump() +
                             "\n";
    size_t written = 0;
    while (written < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error("cannot append to '" + path_ + "': " + std::strerror(errno));
      written += static_cast<size_t>(n);
    }
    if (::fsync(fd_) != 0) throw Error("cannot sync '" + path_ + "': " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::string fingerprint_;
  int fd_ = -1;
};

// gnuplot: y against x, one line per series value; points without a y value (oom, invalid,
// failed, skipped) labelled with their status at the bottom of the graph.
void WritePlot(const ExperimentContext& ctx, const SweepConfig& c,
               const std::vector<PointRecord>& records) {
  const std::vector<std::string> cols = c.Columns();
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  const size_t xc = column(c.plot_x), yc = column(c.plot_y);
  const size_t sc = c.plot_series.empty() ? cols.size() : column(c.plot_series);
  const size_t status_c = column("status");
  bool numeric_x = true;
  for (const PointRecord& r : records) {
    const nlohmann::json v = nlohmann::json::parse(r.row[xc], nullptr, false);
    numeric_x = numeric_x && v.is_number();
  }
  std::vector<std::string> series, xs;
  for (const PointRecord& r : records) {
    const std::string s = sc < cols.size() ? r.row[sc] : c.plot_y;
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    if (std::find(xs.begin(), xs.end(), r.row[xc]) == xs.end()) xs.push_back(r.row[xc]);
  }
  std::ostringstream data, gp;
  data << "# series x y status\n";
  for (size_t s = 0; s < series.size(); ++s) {
    if (s > 0) data << "\n\n";  // gnuplot data blocks: one per series (index s)
    for (const PointRecord& r : records) {
      if ((sc < cols.size() ? r.row[sc] : c.plot_y) != series[s]) continue;
      const std::string x =
          numeric_x ? r.row[xc]
                    : std::to_string(std::find(xs.begin(), xs.end(), r.row[xc]) - xs.begin());
      const std::string y = r.row[yc].empty() ? "?" : r.row[yc];
      data << '"' << series[s] << "\" " << x << ' ' << y << ' ' << r.row[status_c] << '\n';
    }
  }
  gp << "set title '" << c.name << ": " << c.plot_y << " against " << c.plot_x
     << " (a point that did not run is labelled with its status)' noenhanced\n"
     << "set xlabel '" << c.plot_x << "' noenhanced\nset ylabel '" << c.plot_y
     << "' noenhanced\nset grid\nset key outside right noenhanced\nset offsets graph 0.05, graph "
        "0.05, graph 0.05, graph 0.05\n";
  if (!numeric_x) {
    gp << "set xtics (";
    for (size_t i = 0; i < xs.size(); ++i) gp << (i ? ", " : "") << '"' << xs[i] << "\" " << i;
    gp << ") noenhanced\n";
  }
  int label = 0;
  for (const PointRecord& r : records) {
    if (!r.row[yc].empty()) continue;
    const std::string x =
        numeric_x ? r.row[xc]
                  : std::to_string(std::find(xs.begin(), xs.end(), r.row[xc]) - xs.begin());
    ++label;
    const std::string what =
        sc < cols.size() ? r.row[sc] + ": " + r.row[status_c] : r.row[status_c];
    gp << "set label " << label << " '" << what << "' at first " << x << ", graph "
       << FormatFixed(0.04 + 0.05 * static_cast<double>(label % 4), 2)
       << " center tc rgb '#D55E00' noenhanced\n";
  }
  gp << "plot ";
  for (size_t s = 0; s < series.size(); ++s) {
    gp << (s ? ", \\\n     " : "") << "'plot.csv' index " << s
       << " using 2:3 with linespoints pt 7 title '" << series[s] << "'";
  }
  gp << "\n";
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1100, 650);
}

}  // namespace

void CheckSweep(const nlohmann::json& config) { SweepConfig::FromJson(config); }

RunSummary RunSweep(const ExperimentContext& ctx) {
  const SweepConfig c = SweepConfig::FromJson(ctx.config);
  const int64_t n = c.NumPoints();
  const std::vector<std::string> columns = c.Columns();
  PointsLog log(ctx.out_dir + "/" + kLogFile, Fingerprint(ctx.config));
  std::map<int64_t, PointRecord> done = log.Open(ctx.resume, n, columns.size());
  report::Progress progress(c.name, n, static_cast<int64_t>(done.size()));
  for (int64_t k = 0; k < n; ++k) {
    if (done.count(k)) continue;
    const std::string label = c.Label(c.ValuesOf(k));
    progress.Start(label);
    PointRecord rec = RunPoint(c, k);
    const std::string& status = rec.detail["status"].get_ref<const std::string&>();
    if (status != kPointOk && status != kPointSkipped) {
      std::cerr << c.name << ": " << label << ": " << status << ": "
                << rec.detail.value("reason", std::string()) << "\n";
    }
    log.Append(rec);
    progress.Step(label);
    done.emplace(k, std::move(rec));
  }
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(columns);
  nlohmann::json points = nlohmann::json::array();
  std::vector<PointRecord> records;
  for (auto& [k, rec] : done) {
    CountPoint(summary, rec.detail["status"].get<std::string>());
    table.AddRow(rec.row);
    points.push_back(rec.detail);
    records.push_back(rec);
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "sweep"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"fingerprint", Fingerprint(ctx.config)},
                         {"summary", summary.ToString()},
                         {"columns", columns},
                         {"points", points}});
  if (!c.plot_x.empty()) WritePlot(ctx, c, records);
  return summary;
}

}  // namespace podsim::experiments
