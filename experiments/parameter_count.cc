// The "parameter_count" experiment (GShard Table 1): the exact parameter count of each model,
// by kind and dtype, beside the paper's.
//
// Config keys:
//   models     ["128E,12L", ...] preset names (models/gshard_model.h), or objects
//              {"name": "...", ...GShardModelConfig keys (a "preset" among them)}
//   reference  {"file": path in the source tree, "table": key} (optional): the paper's counts
//              in billions, by model name
//
// Outputs: results.csv (kParameterColumns), results.json (the config, per model its resolved
// config and counts). The paper's counts equal the expert parameters E x L/2 x 2 x M x H divided
// by 1.0308 (the reference file's note); `expert_formula` is that product and
// `paper_vs_expert` the ratio of the paper's count to podsim's exact expert count.

#include <nlohmann/json.hpp>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/io.h"
#include "base/resources.h"
#include "experiments/runners.h"
#include "models/gshard_model.h"
#include "report/plot.h"
#include "report/progress.h"

namespace podsim::experiments {

namespace {

const std::vector<std::string> kParameterColumns = {
    "model",        "experts",        "layers",          "params",        "expert_params",
    "replicated_params", "f32_params", "bf16_params",   "per_core_weight_gib", "expert_formula",
    "paper_billion", "paper_vs_expert", "status"};

struct ModelPoint {
  std::string name;
  models::GShardModelConfig config;
};

struct ParameterCountConfig {
  std::string name;
  std::vector<ModelPoint> models;
  std::string reference_file;
  std::string reference_table;

  static ParameterCountConfig FromJson(const nlohmann::json& json) {
    JsonReader r(json, "");
    ParameterCountConfig c;
    (void)r.String("experiment");
    c.name = r.String("name", "parameter_count");
    const nlohmann::json& list = r.Value("models");
    if (!list.is_array() || list.empty()) r.Fail("models", "must be a non-empty array");
    for (size_t k = 0; k < list.size(); ++k) {
      const std::string path = "models[" + std::to_string(k) + "]";
      ModelPoint p;
      if (list[k].is_string()) {
        p.name = list[k].get<std::string>();
        p.config = models::GShardModelConfig::FromJson(nlohmann::json{{"preset", p.name}}, path,
                                                       models::GShardModelConfig{});
      } else {
        nlohmann::json model = list[k];
        if (!model.is_object() || !model.contains("name") || !model["name"].is_string()) {
          FailAt(path, "must be a preset name or an object with a \"name\"");
        }
        p.name = model["name"].get<std::string>();
        model.erase("name");
        p.config = models::GShardModelConfig::FromJson(model, path, models::GShardModelConfig{});
      }
      // One core per expert, as in the paper.
      p.config.layer.num_devices = p.config.layer.num_experts;
      try {
        models::ValidateModelConfig(p.config);
      } catch (const ConfigError&) {
        throw;
      } catch (const Error& e) {
        FailAt(path, e.what());
      }
      c.models.push_back(std::move(p));
    }
    if (r.Has("reference")) {
      JsonReader ref(r.Value("reference"), "reference");
      c.reference_file = ref.String("file");
      c.reference_table = ref.String("table");
      ref.Finish();
    }
    r.Finish();
    return c;
  }
};

}  // namespace

void CheckParameterCount(const nlohmann::json& config) { ParameterCountConfig::FromJson(config); }

RunSummary RunParameterCount(const ExperimentContext& ctx) {
  const ParameterCountConfig c = ParameterCountConfig::FromJson(ctx.config);
  nlohmann::json paper = nlohmann::json::object();
  if (!c.reference_file.empty()) {
    const nlohmann::json ref = ReadJsonFile(FindDataFile(c.reference_file));
    if (!ref.contains(c.reference_table) || !ref[c.reference_table].is_object()) {
      FailAt("reference.table", "'" + c.reference_table + "' is not a table of " + c.reference_file);
    }
    paper = ref[c.reference_table];
  }
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(kParameterColumns);
  nlohmann::json points = nlohmann::json::array();
  report::Progress progress(c.name, static_cast<int64_t>(c.models.size()));
  for (const ModelPoint& p : c.models) {
    const models::GShardModelConfig& m = p.config;
    const std::unique_ptr<ir::Module> loss = models::BuildGShardModelLoss(m);
    const models::ParameterCount n = models::CountParameters(*loss);
    // E x (L / moe_every) MoE layers x 2 matrices of M x H.
    const double formula = static_cast<double>(m.layer.num_experts) *
                           static_cast<double>(m.num_layers / m.moe_every) * 2 *
                           static_cast<double>(m.layer.d_model) * static_cast<double>(m.layer.d_ff);
    const bool has_paper = paper.contains(p.name) && paper[p.name].is_number();
    const double paper_params = has_paper ? paper[p.name].get<double>() * 1e9 : 0;
    const double per_core_gib = static_cast<double>(n.per_device_bytes) / (1ull << 30);
    table.AddRow({p.name, std::to_string(m.layer.num_experts), std::to_string(m.num_layers),
                  std::to_string(n.total), std::to_string(n.split), std::to_string(n.replicated),
                  std::to_string(n.f32), std::to_string(n.bf16), CsvNumber(per_core_gib),
                  CsvNumber(formula), has_paper ? CsvNumber(paper_params / 1e9) : "",
                  has_paper ? CsvNumber(paper_params / static_cast<double>(n.split)) : "",
                  kPointOk});
    nlohmann::json point = {{"model", p.name},
                            {"status", kPointOk},
                            {"resolved", m.ToJson()},
                            {"params", n.total},
                            {"expert_params", n.split},
                            {"replicated_params", n.replicated},
                            {"f32_params", n.f32},
                            {"bf16_params", n.bf16},
                            {"per_core_weight_bytes", n.per_device_bytes},
                            {"expert_formula", formula}};
    if (has_paper) point["paper_params"] = paper_params;
    points.push_back(point);
    CountPoint(summary, kPointOk);
    progress.Step(p.name);
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "parameter_count"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"points", points}});
  return summary;
}

}  // namespace podsim::experiments
