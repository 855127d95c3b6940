// The "sweep" experiment (capacity planning): one training-step point (experiments/
// training_point.h: the whole model on every core of a topology) varied over axes of config
// paths, one row per point.
//
// Config keys:
//   base       the point every other is varied from: {"model": a preset name ("2048E,36L") or
//              a models::GShardModelConfig object, "topology": a preset name or file,
//              "topology_overrides", "sim", "optimizer", "remat" ("auto" default), "tokens"
//              (1e12 default)}; or, for GShard Figure 8's forward layer pair instead of the
//              training step, {"layer": models::MoeLayerConfig keys and "experts" (default: one
//              per core), "topology", "topology_overrides", "sim"} (G = D = the cores)
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
#include "experiments/distributed.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "models/moe_transformer.h"
#include "pipeline/simulate.h"
#include "report/plot.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

// A point's config, parsed: a training step (the whole model) or the Figure 8 layer pair.
struct SweepPointSpec {
  TrainingPointSpec training;  // topology, overrides and sim always; the model for a training step
  bool layer = false;
  nlohmann::json layer_model = nlohmann::json::object();  // MoeLayerConfig keys
  int64_t experts = 0;                                    // 0: one per core
};

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
  static SweepPointSpec Spec(const nlohmann::json& p, const std::string& path) {
    JsonReader r(p, path);
    SweepPointSpec point;
    TrainingPointSpec& s = point.training;
    if (r.Has("layer")) {
      point.layer = true;
      point.layer_model = r.Value("layer");
      if (!point.layer_model.is_object()) FailAt(r.PathOf("layer"), "must be an object");
      if (point.layer_model.contains("experts")) {
        JsonReader e(point.layer_model, r.PathOf("layer"));
        point.experts = e.Int("experts", Limit::AtLeast(2));
        point.layer_model.erase("experts");
      }
      models::MoeLayerConfig::FromJson(point.layer_model, r.PathOf("layer"),
                                       models::PaperMoeConfig(2));
    } else {
      s.model = r.Value("model");
      if (s.model.is_string()) s.model = nlohmann::json{{"preset", s.model}};
      if (!s.model.is_object()) FailAt(r.PathOf("model"), "must be a preset name or an object");
      models::GShardModelConfig::FromJson(s.model, r.PathOf("model"), {});
    }
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
    if (!point.layer) {  // a layer pair has no optimizer, remat or tokens: unknown keys
      if (r.Has("optimizer")) {
        s.optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), r.PathOf("optimizer"),
                                                        s.optimizer);
      }
      s.remat = pipeline::ParseRematChoice(r.Choice("remat", pipeline::RematChoices(), "auto"));
      s.tokens = r.Double("tokens", s.tokens, Limit::Positive());
    }
    r.Finish();
    return point;
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
  const SweepPointSpec point = SweepConfig::Spec(c.PointJson(values), path);
  if (point.layer) {
    // GShard Figure 8's layer pair, forward, on every core (G = D = cores).
    std::unique_ptr<topo::Topology> topology;
    models::MoeLayerConfig m;
    sim::SimOptions options;
    try {
      const TrainingPointSpec& s = point.training;
      const nlohmann::json tj = PointTopologyJson(s.topology, s.topology_overrides, path);
      topology = topo::LoadTopology(tj, path + ".topology");
      const int64_t cores = topology->num_cores();
      m = models::MoeLayerConfig::FromJson(point.layer_model, path + ".layer",
                                           models::PaperMoeConfig(cores));
      if (point.experts > 0) m.num_experts = point.experts;
      models::ValidateMoeConfig(m);
      options = PointSimOptions(s.sim, tj, path, cores);
    } catch (const Error& e) {
      return finish(kPointInvalid, e.what());
    }
    try {
      const sim::RunResult result = pipeline::SimulateMoeLayerPair(m, *topology, options);
      const bool ok = std::string(PointStatus(result)) == kPointOk;
      const double step_s = result.step_time.micros() * 1e-6;
      cells["cores"] = std::to_string(topology->num_cores());
      cells["chips"] = std::to_string(topology->num_chips());
      cells["peak_gib"] = FormatFixed(Gib(result.memory.peak_bytes), 3);
      rec.detail.update({{"cores", topology->num_cores()},
                         {"chips", topology->num_chips()},
                         {"resolved_model", m.ToJson()},
                         {"peak_memory_bytes", result.memory.peak_bytes}});
      if (ok) {
        cells["step_ms"] = FormatFixed(step_s * 1e3, 3);
        cells["steps_per_s"] = FormatFixed(1 / step_s, 3);
        rec.detail.update(
            {{"step_time_us", result.step_time.micros()}, {"steps_per_s", 1 / step_s}});
      }
      return finish(PointStatus(result), ok ? "" : result.memory.message);
    } catch (const Error& e) {
      return finish(kPointFailed, e.what());
    }
  }
  const TrainingPointSpec& spec = point.training;
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

// A record as one JSON text (the points log's line without its newline, and what an MPI rank
// sends back): the fingerprint of the config it belongs to, the index, the row and the entry.
std::string RecordText(const PointRecord& rec, const std::string& fingerprint) {
  return nlohmann::json{
      {"fingerprint", fingerprint}, {"index", rec.index}, {"row", rec.row}, {"point", rec.detail}}
      .dump();
}

// Reads a record back; throws podsim::Error naming `where` if it is not one of this sweep's.
PointRecord ParseRecord(const std::string& text, const std::string& fingerprint, int64_t num_points,
                        size_t row_width, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("fingerprint") || !j["index"].is_number_integer() ||
      !j["row"].is_array() || !j.contains("point")) {
    throw Error(where + ": not a sweep point record: " + text.substr(0, 80));
  }
  if (j["fingerprint"] != fingerprint) {
    throw Error(where + " holds points of another sweep config (fingerprint " +
                j["fingerprint"].dump() + ", this config's \"" + fingerprint +
                "\"); run with --force to start over");
  }
  PointRecord rec;
  rec.index = j["index"].get<int64_t>();
  rec.row = j["row"].get<std::vector<std::string>>();
  rec.detail = j["point"];
  if (rec.index < 0 || rec.index >= num_points || rec.row.size() != row_width) {
    throw Error(where + ": point " + std::to_string(rec.index) + " does not fit this sweep");
  }
  return rec;
}

// The whole lines of a points log (a torn last line, without its newline, is left out).
std::vector<std::string> LogLines(const std::string& path) {
  std::vector<std::string> lines;
  const std::string text = ReadFile(path);
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

// The points log of the output directory: one line per finished point.
class PointsLog {
 public:
  PointsLog(std::string path, std::string fingerprint, int64_t num_points, size_t row_width)
      : path_(std::move(path)),
        fingerprint_(std::move(fingerprint)),
        num_points_(num_points),
        row_width_(row_width) {}
  ~PointsLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  PointsLog(const PointsLog&) = delete;
  PointsLog& operator=(const PointsLog&) = delete;

  // Opens the log for appending, first (resume) reading the points an earlier run finished
  // into `done` and rewriting the log without a torn last line; otherwise starting it empty.
  void Open(bool resume, std::map<int64_t, PointRecord>& done) {
    std::string kept;
    if (resume && ::access(path_.c_str(), F_OK) == 0) {
      for (const std::string& line : LogLines(path_)) {
        PointRecord rec = ParseRecord(line, fingerprint_, num_points_, row_width_, path_);
        if (done.emplace(rec.index, std::move(rec)).second) kept += line + "\n";
      }
    }
    WriteFileAtomic(path_, kept);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) throw Error("cannot open '" + path_ + "': " + std::strerror(errno));
  }

  // Adds the points another run of this config finished (its directory's log: a shard's, say)
  // that `done` lacks, appending each to this log.
  void Merge(const std::string& dir, std::map<int64_t, PointRecord>& done) {
    const std::string path = dir + "/" + kLogFile;
    if (::access(path.c_str(), F_OK) != 0) throw Error("--merge: no " + path);
    for (const std::string& line : LogLines(path)) {
      PointRecord rec = ParseRecord(line, fingerprint_, num_points_, row_width_, path);
      if (done.count(rec.index)) continue;
      Append(line);
      done.emplace(rec.index, std::move(rec));
    }
  }

  // Appends a record: one write, then fsync, so that a point is either whole in the log or
  // (killed mid-write) a torn last line that Open drops.
  void Append(const std::string& record_text) {
    const std::string line = record_text + "\n";
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
  int64_t num_points_;
  size_t row_width_;
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
  // Within a series, one line per combination of the other axes (a blank line between them:
  // gnuplot starts a new line there, in the series' colour), in point order.
  auto rest_of = [&](const PointRecord& r) {
    std::string key;
    for (size_t a = 0; a < c.axes.size(); ++a) {
      if (a != xc && a != sc) key += r.row[a] + '\x1f';
    }
    return key;
  };
  std::ostringstream data, gp;
  data << "# series x y status\n";
  for (size_t s = 0; s < series.size(); ++s) {
    if (s > 0) data << "\n\n";  // gnuplot data blocks: one per series (index s)
    std::vector<std::string> lines;
    for (const PointRecord& r : records) {
      const std::string key = rest_of(r);
      if ((sc < cols.size() ? r.row[sc] : c.plot_y) == series[s] &&
          std::find(lines.begin(), lines.end(), key) == lines.end()) {
        lines.push_back(key);
      }
    }
    for (size_t l = 0; l < lines.size(); ++l) {
      if (l > 0) data << '\n';
      for (const PointRecord& r : records) {
        if ((sc < cols.size() ? r.row[sc] : c.plot_y) != series[s] || rest_of(r) != lines[l]) {
          continue;
        }
        const std::string x =
            numeric_x ? r.row[xc]
                      : std::to_string(std::find(xs.begin(), xs.end(), r.row[xc]) - xs.begin());
        const std::string y = r.row[yc].empty() ? "?" : r.row[yc];
        data << '"' << series[s] << "\" " << x << ' ' << y << ' ' << r.row[status_c] << '\n';
      }
    }
  }
  gp << report::PaletteLinetypes();  // then gnuplot's own colours past the seventh series
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
       << " center tc rgb '#444444' noenhanced\n";
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

namespace {

// Runs point k as a record text; an unexpected exception becomes a failed point, not a lost
// rank.
std::string RunPointText(const SweepConfig& c, int64_t k, const std::string& fingerprint) {
  try {
    return RecordText(RunPoint(c, k), fingerprint);
  } catch (const std::exception& e) {
    PointRecord rec;
    rec.index = k;
    const std::vector<nlohmann::json> values = c.ValuesOf(k);
    for (const nlohmann::json& v : values) rec.row.push_back(SweepConfig::Cell(v));
    rec.row.push_back(kPointFailed);
    rec.row.push_back(e.what());
    rec.row.resize(c.Columns().size());
    rec.detail = {{"index", k}, {"status", kPointFailed}, {"reason", e.what()}};
    return RecordText(rec, fingerprint);
  }
}

}  // namespace

void RunSweepWorker(const ExperimentContext& ctx) {
  const SweepConfig c = SweepConfig::FromJson(ctx.config);
  const std::string fingerprint = Fingerprint(ctx.config);
  dist::Work([&](int64_t k) { return RunPointText(c, k, fingerprint); });
}

RunSummary RunSweep(const ExperimentContext& ctx) {
  const SweepConfig c = SweepConfig::FromJson(ctx.config);
  const int64_t n = c.NumPoints();
  const std::vector<std::string> columns = c.Columns();
  const std::string fingerprint = Fingerprint(ctx.config);
  const auto mine = [&](int64_t k) { return k % ctx.shard_count == ctx.shard_index; };
  PointsLog log(ctx.out_dir + "/" + kLogFile, fingerprint, n, columns.size());
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
        return RunPointText(c, k, fingerprint);
      },
      [&](int64_t k, const std::string& text) {
        PointRecord rec = ParseRecord(text, fingerprint, n, columns.size(), "rank result");
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
  if (!c.plot_x.empty()) WritePlot(ctx, c, records);
  return summary;
}

}  // namespace podsim::experiments
