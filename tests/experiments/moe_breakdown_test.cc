// The "moe_layer_breakdown" experiment (GShard Figure 8, experiments/moe_breakdown.h): the
// results.csv columns and rows, the paper columns and their category mapping, total = sum of
// the categories, and a category's roofline derived by hand at a small size.

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/io.h"
#include "experiments/experiment.h"
#include "experiments/moe_breakdown.h"
#include "models/scopes.h"
#include "pipeline/simulate.h"
#include "sim/device/device.h"
#include "topologies/load.h"

namespace podsim::experiments {
namespace {

std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

// 4 and 8 experts on the 8 cores of a v3-8, the paper's layer widths with 1024 tokens per core
// and d_ff 2048 (fast to simulate); the paper's bars are attached to the 4-expert size.
nlohmann::json SmallConfig() {
  return {{"experiment", "moe_layer_breakdown"},
          {"name", "fig8_small"},
          {"points",
           {{{"experts", 4}, {"topology", "tpu-v3-8"}}, {{"experts", 8}, {"topology", "tpu-v3-8"}}}},
          {"model", {{"tokens_per_group", 1024}, {"d_ff", 2048}}},
          {"details", false},
          {"reference",
           {{"file", "experiments/reference/gshard-paper.json"},
            {"figure", "figure8_moe_layer_us"},
            {"experts", 4},
            {"category_map", {{"dispatch_combine_alltoall", "dispatch_combine"}}}}}};
}

TEST_CASE("moe_layer_breakdown writes the promised results.csv and results.json") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "podsim_moe_breakdown_test").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/config.json";
  std::ofstream(config) << SmallConfig().dump(2);
  RunOptions options;
  options.out_dir = dir + "/out";
  RunExperimentFile(config, options);

  const auto rows = ReadCsv(options.out_dir + "/results.csv");
  REQUIRE(rows.size() == 1 + 2 * 8);  // header, then 7 categories + total per size
  CHECK(rows[0] == std::vector<std::string>{"experts", "category", "roofline_us", "modelled_us",
                                            "paper_roofline_us", "paper_measured_us", "status"});
  for (int size = 0; size < 2; ++size) {
    const std::string experts = size == 0 ? "4" : "8";
    double roofline_sum = 0, modelled_sum = 0;
    for (size_t k = 0; k < 7; ++k) {
      const auto& r = rows[1 + 8 * size + k];
      REQUIRE(r.size() == 7);
      CHECK(r[0] == experts);
      CHECK(r[6] == "ok");
      CHECK(r[1] == std::string(models::kFigure8Scopes[k]));  // legend order
      roofline_sum += std::stod(r[2]);
      modelled_sum += std::stod(r[3]);
    }
    const auto& total = rows[1 + 8 * size + 7];
    CHECK(total[1] == "total");
    // Each of the 8 cells is rounded to the nanosecond (0.0005 us at most).
    CHECK(std::abs(std::stod(total[2]) - roofline_sum) <= 8 * 0.0005);
    CHECK(std::abs(std::stod(total[3]) - modelled_sum) <= 8 * 0.0005);
    // podsim's times at fixed precision: three decimals, never binary noise.
    for (size_t k = 0; k < 8; ++k) {
      for (size_t col : {2, 3}) {
        const std::string& cell = rows[1 + 8 * size + k][col];
        CHECK_MESSAGE(cell.find('.') == cell.size() - 4, cell);
      }
    }
  }
  // bars.csv: no always-zero "other" column (every category is one of Figure 8's seven); the
  // plot stacks columns 2..8 and labels its x axis.
  const std::string bars = ReadFile(options.out_dir + "/bars.csv");
  CHECK(bars.substr(0, bars.find('\n')) ==
        "bar,moe_ffn,dispatch_combine,gate_cumsum,gate_einsums,transformer_ffn,attention,"
        "projections");
  const std::string gp = ReadFile(options.out_dir + "/plot.gp");
  CHECK(gp.find("plot for [i=2:8] 'bars.csv'") != std::string::npos);
  CHECK(gp.find("set xlabel 'experts") != std::string::npos);
  // Paper columns: only the reference size; dispatch_combine_alltoall read as dispatch_combine;
  // values as in experiments/reference/gshard-paper.json.
  CHECK(rows[1][1] == "moe_ffn");
  CHECK(rows[1][4] == "2269");
  CHECK(rows[1][5] == "2478");
  CHECK(rows[2][1] == "dispatch_combine");
  CHECK(rows[2][4] == "582");
  CHECK(rows[2][5] == "1269");
  CHECK(rows[3][4] == "0");  // gate_cumsum's roofline is a real 0, not an absent value
  CHECK(rows[8][4] == "5971");
  CHECK(rows[8][5] == "7882");
  for (size_t k = 9; k < rows.size(); ++k) {
    CHECK(rows[k][4].empty());
    CHECK(rows[k][5].empty());
  }

  std::ifstream in(options.out_dir + "/results.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  CHECK(j["config"] == SmallConfig());
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["total_growth_vs_baseline"].get<double>() == 1.0);
  for (const auto& p : j["points"]) {
    // The share is the dispatch_combine row over the total row.
    const double share = p["categories"]["dispatch_combine"]["modelled_us"].get<double>() /
                         p["categories"]["total"]["modelled_us"].get<double>();
    CHECK(p["alltoall_share"].get<double>() == doctest::Approx(share));
  }
  CHECK(j["resolved"]["models"][1]["num_experts"] == 8);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe_ffn roofline at a small size, by hand") {
  // PaperMoeConfig(4) with S = 1024 and H = 2048: G = E = 4, C = 2S/E = 512; each core holds
  // one expert and G*C = 2048 dispatched slots of M = 1024. The expert FFN is two einsums of
  // 2 * 2048 * 1024 * 2048 = 8,589,934,592 flops. Each moves at most 2048*1024 + 1024*2048 +
  // 2048*2048 f32 values = 33,554,432 bytes (74.6 us at 450 GB/s) against 139.67 us of matrix
  // time at 61.5 TFLOP/s: matrix-bound. Roofline = 2 * 8,589,934,592 / 61.5e12 s = 279.35 us.
  // Modelled: every dim fills the 128 tile, so each einsum takes its peak time over
  // matrix_sustained_fraction, plus one op overhead each (relu fuses into the first).
  models::MoeLayerConfig model = models::PaperMoeConfig(4);
  model.tokens_per_group = 1024;
  model.d_ff = 2048;
  const auto topology = topo::LoadTopology("tpu-v3-8");
  sim::SimOptions options;
  options.device = sim::LoadDeviceSpec("tpu-v3-core");
  options.num_partitions = 4;
  const sim::RunResult result = pipeline::SimulateMoeLayerPair(model, *topology, options);
  const auto rows = BreakdownRows(4, result, std::nullopt);
  const double einsum_s = 8589934592.0 / 61.5e12;
  const double roofline_us = 2 * einsum_s * 1e6;
  const double modelled_us =
      2 * (einsum_s / options.device.matrix_sustained_fraction * 1e6 + options.device.op_overhead_us);
  REQUIRE(rows[0].category == "moe_ffn");
  CHECK(rows[0].roofline_us == doctest::Approx(roofline_us).epsilon(1e-6));
  CHECK(rows[0].modelled_us == doctest::Approx(modelled_us).epsilon(1e-6));
  CHECK(std::isnan(rows[0].paper_roofline_us));

  // dispatch_combine is the two AllToAlls and nothing else: with one group per core the G <-> E
  // transposes only move a unit dim, so they are bitcasts.
  double a2a_roofline_us = 0;
  for (const sim::CollectiveResult& c : result.collectives) {
    CHECK(c.kind == "all-to-all");
    CHECK(c.category == "dispatch_combine");
    a2a_roofline_us += c.roofline.micros() * static_cast<double>(c.executions);
  }
  CHECK(result.collectives.size() == 2);
  REQUIRE(rows[1].category == "dispatch_combine");
  CHECK(rows[1].roofline_us == doctest::Approx(a2a_roofline_us).epsilon(1e-9));
}

TEST_CASE("moe_layer_breakdown config errors name the JSON path") {
  nlohmann::json c = SmallConfig();
  c["points"][1]["experts"] = 2;
  const std::string dir =
      (std::filesystem::temp_directory_path() / "podsim_moe_breakdown_bad").string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.json") << c.dump();
  RunOptions options;
  options.out_dir = dir + "/out";
  CHECK_THROWS_WITH(RunExperimentFile(dir + "/bad.json", options),
                    doctest::Contains("points[1].experts: must be ascending"));
  c = SmallConfig();
  c["model"]["d_modle"] = 4;
  std::ofstream(dir + "/bad.json") << c.dump();
  CHECK_THROWS_WITH(RunExperimentFile(dir + "/bad.json", options), doctest::Contains("d_modle"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podsim::experiments
