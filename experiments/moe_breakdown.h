#pragma once
// The "moe_layer_breakdown" experiment (GShard Figure 8): the forward pass of one MoE layer plus
// its adjacent Transformer layer (models::BuildMoeLayerPair), propagated, partitioned for E = D
// cores and simulated in timing mode; time per Figure 8 category, roofline and modelled, beside
// the paper's 128E bars. The pieces the runner is made of are here so that tests can use them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/csv.h"
#include "base/io.h"
#include "models/moe_transformer.h"
#include "report/plot.h"
#include "sim/program/run_result.h"
#include "sim/program/sim_options.h"
#include "topologies/topology.h"

namespace podsim::experiments {

// The header of DIR/results.csv.
inline const std::vector<std::string> kBreakdownColumns = {
    "experts",           "category",          "roofline_us", "modelled_us",
    "paper_roofline_us", "paper_measured_us", "status"};

// The paper's bars for one size, in our category names: category -> microseconds, "total"
// included.
struct PaperBars {
  int64_t experts = 0;
  std::map<std::string, double> roofline;
  std::map<std::string, double> measured;
};

// Reads figure `figure` of the reference file (experiments/reference/gshard-paper.json layout:
// {"roofline": {...}, "measured": {...}}), renaming categories by `category_map` (paper name ->
// ours; unlisted names are kept). Errors name `path`.
PaperBars ReadPaperBars(const std::string& file, const std::string& figure, int64_t experts,
                        const std::map<std::string, std::string>& category_map,
                        const std::string& path);

// One row of results.csv; NaN paper values are written as empty cells.
struct BreakdownRow {
  int64_t experts = 0;
  std::string category;
  double roofline_us = 0;
  double modelled_us = 0;
  double paper_roofline_us = 0;
  double paper_measured_us = 0;
};

// The rows of one size: the seven Figure 8 categories in the figure's legend order (zero when
// the run has none), then any other category of the run (e.g. ops without a scope) by name,
// then "total" = the sum of the rows above it (roofline and modelled; a category's modelled
// time is its compute plus its collectives in flight, so with async overlap the total can
// exceed the step time). Paper columns come from `paper` when its size is `experts`, else NaN.
std::vector<BreakdownRow> BreakdownRows(int64_t experts, const sim::RunResult& result,
                                        const std::optional<PaperBars>& paper);

// Rows as results.csv cells (kBreakdownColumns); `status` is the point's ("ok", "oom").
CsvTable BreakdownTable(const std::vector<BreakdownRow>& rows, const std::string& status = "ok");

}  // namespace podsim::experiments
