// The "training_step" experiment (GShard Table 3): the whole model's training step, built,
// partitioned and simulated per point, with the throughput figures Table 3 reports.
//
// Config keys:
//   points     [{"model": "2048E,36L" | {GShardModelConfig keys, "name": ...},
//                "topology": "tpu-v3-2048"}, ...]: the model on every core of the topology
//              (one partition per core)
//   topology_overrides  object merged into every point's topology
//   sim        sim::SimOptions JSON; num_partitions is set per point
//   optimizer  models::OptimizerConfig JSON (default Adafactor as the paper)
//   remat      what the layer loops save: "per-layer" (default), "selective", "none"
//   tokens     the training run's tokens, for days and core-years (default 1e12, Table 3's)
//   reference  {"file": path in the source tree, "table": key}: rows with "model",
//              "steps_per_s", "core_years" (the paper's, beside podsim's)
//
// MFU = model FLOPs / (cores x step time x bf16 matrix peak), model FLOPs = 3 x the forward
// pass's matmul FLOPs (recomputation not counted).
// Outputs: results.csv (kTrainingColumns), results.json (the config, per point the resolved
// model, the step's time per category, memory by kind, status), and per point the simulator's
// tables in DIR/<model>/ when "details" is true (default false).
//   days = tokens / (batch_tokens * steps_per_s) / 86400; core_years = cores * days / 365
// (the reference file's table3_note).

#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "base/resources.h"
#include "experiments/runners.h"
#include "ir/autodiff.h"
#include "ir/cost.h"
#include "models/gshard_model.h"
#include "models/training_step.h"
#include "partitioner/spmd_partitioner.h"
#include "report/plot.h"
#include "report/run_report.h"
#include "sim/device/device.h"
#include "sim/program/simulate.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

const std::vector<std::string> kTrainingColumns = {
    "model",  "cores",     "batch_tokens",      "step_ms",          "steps_per_s",
    "core_years", "days",  "paper_steps_per_s", "paper_core_years", "remat",
    "mfu", "peak_gib", "weights_gib", "activations_gib", "status"};

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
  ir::LoopRemat remat = ir::LoopRemat::kIterationInputs;
  double tokens = 1e12;
  bool details = false;
  std::string reference_file, reference_table;

  static TrainingConfig FromJson(const nlohmann::json& j) {
    TrainingConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    const nlohmann::json& ps = r.Value("points");
    if (!ps.is_array() || ps.empty()) FailAt(r.PathOf("points"), "must be a non-empty array");
    if (r.Has("topology_overrides")) {
      c.topology_overrides = r.Value("topology_overrides");
      if (!c.topology_overrides.is_object()) FailAt(r.PathOf("topology_overrides"), "must be an object");
    }
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
      // Errors now, not after the first point ran.
      const int64_t cores = Cores(c, pt, path);
      models::GShardModelConfig m = Model(pt, path + ".model", cores);
      try {
        models::ValidateModelConfig(m);
      } catch (const ConfigError&) {
        throw;
      } catch (const Error& e) {
        FailAt(path + ".model", e.what());  // which point's model cannot run on its slice
      }
      c.points.push_back(std::move(pt));
    }
    if (r.Has("sim")) {
      c.sim = r.Value("sim");
      sim::SimOptions::FromJson(c.sim, r.PathOf("sim"));
    }
    if (r.Has("optimizer")) {
      c.optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), r.PathOf("optimizer"),
                                                      c.optimizer);
    }
    if (r.Has("remat")) {
      const std::string remat = r.Choice("remat", {"per-layer", "selective", "none"});
      c.remat = ir::ParseLoopRemat(remat);
    }
    c.tokens = r.Double("tokens", c.tokens, Limit::Positive());
    c.details = r.Bool("details", c.details);
    if (r.Has("reference")) {
      JsonReader ref = r.Object("reference");
      c.reference_file = ref.String("file");
      c.reference_table = ref.String("table");
      ref.Finish();
    }
    r.Finish();
    return c;
  }

  // The point's topology config (overrides merged).
  static nlohmann::json TopologyJson(const TrainingConfig& c, const TrainingPoint& p,
                                     const std::string& path) {
    nlohmann::json t = topo::ExpandTopologyConfig(p.topology, path + ".topology");
    t.merge_patch(c.topology_overrides);
    return t;
  }
  static int64_t Cores(const TrainingConfig& c, const TrainingPoint& p, const std::string& path) {
    return topo::TopologyConfig::FromJson(TopologyJson(c, p, path), path + ".topology").NumCores();
  }
  static models::GShardModelConfig Model(const TrainingPoint& p, const std::string& path,
                                         int64_t cores) {
    models::GShardModelConfig m = models::GShardModelConfig::FromJson(p.model, path, {});
    m.layer.num_devices = cores;
    return m;
  }
};

// The paper's row for `model` in the reference table (an array of objects with "model").
nlohmann::json PaperRow(const nlohmann::json& table, const std::string& model) {
  if (table.is_array()) {
    for (const nlohmann::json& row : table) {
      if (row.is_object() && row.value("model", "") == model) return row;
    }
  }
  return nullptr;
}

double Gib(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(1ull << 30); }

int64_t KindBytes(const sim::MemoryResult& m, std::initializer_list<const char*> kinds) {
  int64_t n = 0;
  for (const char* k : kinds) {
    auto it = m.at_peak.by_kind.find(k);
    if (it != m.at_peak.by_kind.end()) n += it->second;
  }
  return n;
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
  const sim::SimOptions base = sim::SimOptions::FromJson(c.sim, "sim");
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(kTrainingColumns);
  nlohmann::json points = nlohmann::json::array();
  report::Progress progress(c.name, static_cast<int64_t>(c.points.size()));
  for (size_t k = 0; k < c.points.size(); ++k) {
    const TrainingPoint& pt = c.points[k];
    const std::string path = IndexPath("points", k);
    const nlohmann::json paper_row = PaperRow(paper, pt.name);
    auto paper_cell = [&](const char* key) {
      return paper_row.is_object() && paper_row.contains(key) ? CsvNumber(paper_row[key].get<double>())
                                                              : std::string();
    };
    const std::string remat = ir::LoopRematName(c.remat);
    nlohmann::json point = {{"model", pt.name}, {"topology", pt.topology}, {"remat", remat}};
    try {
      const nlohmann::json topology_json = TrainingConfig::TopologyJson(c, pt, path);
      const std::unique_ptr<topo::Topology> topology = topo::LoadTopology(topology_json, path + ".topology");
      const int64_t cores = topology->num_cores();
      const models::GShardModelConfig model = TrainingConfig::Model(pt, path + ".model", cores);
      std::set<std::string> stacked;
      const std::unique_ptr<ir::Module> loss = models::BuildGShardModelLoss(model, &stacked);
      models::TrainingStepOptions step_options = models::StepOptions(cores, stacked);
      step_options.return_gradients = false;
      step_options.remat = c.remat;
      models::TrainingStep step =
          models::BuildTrainingStep(*loss, models::FloatParameters(*loss), c.optimizer, step_options);
      const partitioner::PartitionResult spmd =
          partitioner::PropagateAndPartition(*step.module, cores);
      sim::SimOptions options = base;
      options.num_partitions = cores;
      if (!c.sim.contains("device") && topology_json.contains("device")) {
        options.device = sim::DeviceSpecFromConfig(topology_json["device"], path + ".topology.device");
      }
      options.Validate("sim");
      const sim::RunResult result = sim::Simulate(*spmd.module, *topology, options);
      const std::string status = PointStatus(result);
      CountPoint(summary, status);
      if (c.details) report::WriteResults(result, ctx.out_dir + "/" + pt.name);
      const int64_t batch = model.layer.num_groups * model.layer.tokens_per_group;
      const double step_s = result.step_time.micros() * 1e-6;
      const double steps_per_s = 1 / step_s;
      const double days = c.tokens / (static_cast<double>(batch) * steps_per_s) / 86400;
      const double core_years = static_cast<double>(cores) * days / 365;
      // Model FLOPs: 3 x the forward pass's matmul FLOPs (the backward pass's matmuls are twice
      // the forward's), without recomputation; MFU against every core's bf16 matrix peak.
      const double model_flops =
          3 * ir::AnalyzeCost(*loss).per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;
      const double mfu = model_flops / (static_cast<double>(cores) * step_s *
                                        options.device.matrix_bf16.value);
      const int64_t weights = KindBytes(result.memory, {"weights", "optimizer_state"});
      const int64_t activations = result.memory.peak_bytes - weights;
      // Fixed precision: 0.1 ms, 3 decimals for rates and memory, 2 for days and core-years.
      table.AddRow({pt.name, std::to_string(cores), std::to_string(batch),
                    FormatFixed(step_s * 1e3, 1), FormatFixed(steps_per_s, 3),
                    FormatFixed(core_years, 2), FormatFixed(days, 2), paper_cell("steps_per_s"),
                    paper_cell("core_years"), remat, FormatFixed(mfu, 3),
                    FormatFixed(Gib(result.memory.peak_bytes), 3),
                    FormatFixed(Gib(weights), 3), FormatFixed(Gib(activations), 3), status});
      nlohmann::json categories = nlohmann::json::object();
      for (const auto& cat : result.categories) {
        categories[cat.category] = {{"modelled_us", cat.modelled().micros()},
                                    {"roofline_us", cat.roofline.micros()}};
      }
      point.update({{"status", status},
                    {"cores", cores},
                    {"resolved_model", model.ToJson()},
                    {"batch_tokens", batch},
                    {"step_time_us", result.step_time.micros()},
                    {"steps_per_s", steps_per_s},
                    {"days", days},
                    {"core_years", core_years},
                    {"model_flops", model_flops},
                    {"mfu", mfu},
                    {"peak_memory_bytes", result.memory.peak_bytes},
                    {"memory_by_kind", result.memory.at_peak.by_kind},
                    {"categories", categories},
                    {"paper", paper_row}});
      if (result.memory.oom) point["error"] = result.memory.message;
    } catch (const Error& e) {
      std::cerr << c.name << ": " << pt.name << " failed: " << e.what() << "\n";
      CountPoint(summary, kPointFailed);
      table.AddRow({pt.name, "", "", "", "", "", "", paper_cell("steps_per_s"),
                    paper_cell("core_years"), remat, "", "", "", "", kPointFailed});
      point.update({{"status", kPointFailed}, {"error", e.what()}});
    }
    points.push_back(point);
    progress.Step(pt.name);
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "training_step"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"resolved", {{"sim", base.ToJson()}, {"optimizer", c.optimizer.ToJson()}}},
                         {"points", points}});
  return summary;
}

}  // namespace podsim::experiments
