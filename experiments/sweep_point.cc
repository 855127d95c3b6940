#include "experiments/sweep_point.h"

#include <map>
#include <memory>

#include "base/error.h"
#include "base/format.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "models/moe_transformer.h"
#include "pipeline/simulate.h"
#include "topologies/load.h"

namespace podsim::experiments::sweep {

namespace {

double Gib(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(1ull << 30); }

}  // namespace

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
    for (const std::string& col : kColumns) rec.row.push_back(cells[col]);
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

std::string RecordText(const PointRecord& rec, const std::string& fingerprint) {
  return nlohmann::json{
      {"fingerprint", fingerprint}, {"index", rec.index}, {"row", rec.row}, {"point", rec.detail}}
      .dump();
}

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

}  // namespace podsim::experiments::sweep
