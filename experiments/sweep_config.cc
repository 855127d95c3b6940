#include "experiments/sweep_config.h"

#include <algorithm>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "models/moe_transformer.h"
#include "pipeline/simulate.h"
#include "topologies/load.h"

namespace podsim::experiments::sweep {

const std::vector<std::string> kColumns = {"status",     "reason",
                                           "cores",      "chips",
                                           "params",     "remat",
                                           "step_ms",    "steps_per_s",
                                           "mfu",        "peak_gib",
                                           "days",       "core_years",
                                           "chip_hours", "cost_per_1e12_tokens"};

int64_t SweepConfig::NumPoints() const {
  if (zip) return static_cast<int64_t>(axes[0].values.size());
  int64_t n = 1;
  for (const Axis& a : axes) n *= static_cast<int64_t>(a.values.size());
  return n;
}

std::vector<nlohmann::json> SweepConfig::ValuesOf(int64_t k) const {
  std::vector<nlohmann::json> v(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    const int64_t n = static_cast<int64_t>(axes[a].values.size());
    v[a] = axes[a].values[static_cast<size_t>(zip ? k : k % n)];
    if (!zip) k /= n;
  }
  return v;
}

std::string SweepConfig::Label(const std::vector<nlohmann::json>& values) const {
  std::string s;
  for (size_t a = 0; a < axes.size(); ++a) {
    s += (a ? " " : "") + axes[a].path + "=" + Cell(values[a]);
  }
  return s;
}

bool SweepConfig::Skipped(const std::vector<nlohmann::json>& values) const {
  for (const nlohmann::json& rule : skip) {
    bool all = true;
    for (size_t a = 0; a < axes.size() && all; ++a) {
      if (rule.contains(axes[a].path)) all = rule[axes[a].path] == values[a];
    }
    if (all) return true;
  }
  return false;
}

nlohmann::json SweepConfig::PointJson(const std::vector<nlohmann::json>& values) const {
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

std::string SweepConfig::Cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return CsvNumber(v.get<double>());
  return v.dump();
}

SweepConfig SweepConfig::FromJson(const nlohmann::json& j) {
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
        FailAt(r.PathOf("plot"),
               "'" + *col + "' is not a column of results.csv (" + JoinColumns(c.Columns()) + ")");
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

SweepPointSpec SweepConfig::Spec(const nlohmann::json& p, const std::string& path) {
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

std::vector<std::string> SweepConfig::Columns() const {
  std::vector<std::string> cols;
  for (const Axis& a : axes) cols.push_back(a.path);
  cols.insert(cols.end(), kColumns.begin(), kColumns.end());
  return cols;
}

bool SweepConfig::HasColumn(const std::string& name) const {
  const std::vector<std::string> cols = Columns();
  return std::find(cols.begin(), cols.end(), name) != cols.end();
}

std::string SweepConfig::JoinColumns(const std::vector<std::string>& cols) {
  std::string s;
  for (const std::string& c : cols) s += (s.empty() ? "" : ", ") + c;
  return s;
}

}  // namespace podsim::experiments::sweep
