#pragma once
// A "sweep" experiment's config (experiments/sweep.cc runs it): one training-step point
// (experiments/training_point.h) or Figure 8's layer pair, varied over axes of config paths.
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

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/training_point.h"

namespace podsim::experiments::sweep {

// A point's config, parsed: a training step (the whole model) or the Figure 8 layer pair.
struct SweepPointSpec {
  TrainingPointSpec training;  // topology, overrides and sim always; the model for a training step
  bool layer = false;
  nlohmann::json layer_model = nlohmann::json::object();  // MoeLayerConfig keys
  int64_t experts = 0;                                    // 0: one per core
};

// The columns of results.csv after the axes'.
extern const std::vector<std::string> kColumns;

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

  // Reads and checks the whole config, every point's included: throws ConfigError naming the
  // JSON path (and the point) of the first problem.
  static SweepConfig FromJson(const nlohmann::json& j);

  // The number of points (cartesian: the product of the axes' lengths; zip: one axis's).
  int64_t NumPoints() const;
  // The axis values of point k (cartesian: the last axis varies fastest).
  std::vector<nlohmann::json> ValuesOf(int64_t k) const;
  // "path=value path=value ...": the point in messages and progress lines.
  std::string Label(const std::vector<nlohmann::json>& values) const;
  // Whether a skip rule matches the point.
  bool Skipped(const std::vector<nlohmann::json>& values) const;
  // The point's config: `base` with each axis value set at its path.
  nlohmann::json PointJson(const std::vector<nlohmann::json>& values) const;
  // An axis value as a CSV cell: strings as they are, numbers shortest (1e+11, not
  // 100000000000.0), anything else as JSON.
  static std::string Cell(const nlohmann::json& v);
  // The training point a point's config describes (structural errors only: ConfigError).
  static SweepPointSpec Spec(const nlohmann::json& p, const std::string& path);
  // results.csv's columns: the axes' paths, then kColumns.
  std::vector<std::string> Columns() const;
  bool HasColumn(const std::string& name) const;
  static std::string JoinColumns(const std::vector<std::string>& cols);
};

}  // namespace podsim::experiments::sweep
