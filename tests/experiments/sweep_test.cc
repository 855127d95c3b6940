// The "sweep" experiment: the points are the axes' Cartesian product (last axis fastest) or
// their zip, each axis path is set where the users write it (topology.X in the
// topology's overrides, model.X on a preset), skip rules and invalid points are rows with their
// status, the derived columns follow their formulas, and bad configs and foreign logs are
// errors naming what is wrong.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "experiments/experiment.h"

namespace podsim::experiments {
namespace {

nlohmann::json ToyModel() {
  return {{"experts", 8},          {"groups", 8},  {"num_layers", 2},    {"moe_every", 1},
          {"d_model", 16},         {"d_ff", 32},   {"num_heads", 2},     {"head_dim", 8},
          {"tokens_per_group", 8}, {"seq_len", 4}, {"source_vocab", 16}, {"target_vocab", 12}};
}

nlohmann::json Sweep(nlohmann::json axes) {
  return {{"experiment", "sweep"},
          {"name", "toy_sweep"},
          {"base", {{"model", ToyModel()}, {"topology", "tpu-v3-8"}, {"tokens", 1e9}}},
          {"axes", std::move(axes)},
          {"price_per_chip_hour", 2.5}};
}

std::string Dir(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(dir);
  return dir;
}

RunSummary Run(const nlohmann::json& config, const std::string& out, bool resume = false) {
  RunOptions options;
  options.out_dir = out;
  options.resume = resume;
  return RunExperiment(config, "<test>", options);
}

std::vector<std::vector<std::string>> Csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("sweep: cartesian points in order, axis paths, skip rules, invalid points") {
  nlohmann::json config = Sweep({{{"path", "model.experts"}, {"values", {4, 8}}},
                                 {{"path", "topology.link_bandwidth"}, {"values", {1e11, 5e10}}}});
  config["skip"] = {{{"model.experts", 8}, {"topology.link_bandwidth", 5e10}}};
  const std::string out = Dir("podsim_sweep_test");
  const RunSummary s = Run(config, out);
  // 4 experts cannot split over the slice's 8 cores (both bandwidths: invalid); 8 experts at
  // 1e11 runs; 8 at 5e10 matches the skip rule.
  CHECK(s.ok == 1);
  CHECK(s.invalid == 2);
  CHECK(s.skipped == 1);
  const auto rows = Csv(out + "/results.csv");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0][0] == "model.experts");
  CHECK(rows[0][1] == "topology.link_bandwidth");
  CHECK(rows[0][2] == "status");
  // Last axis fastest; numbers shortest.
  CHECK(rows[1][0] == "4");
  CHECK(rows[1][1] == "1e+11");
  CHECK(rows[2][1] == "5e+10");
  CHECK(rows[3][0] == "8");
  CHECK(rows[1][2] == "invalid");
  CHECK(rows[1][3].find("cannot split num_experts = 4") != std::string::npos);
  CHECK(rows[3][2] == "ok");
  CHECK(rows[4][2] == "skipped");

  const nlohmann::json results = nlohmann::json::parse(Slurp(out + "/results.json"));
  const nlohmann::json& p = results["points"][2];
  REQUIRE(p["status"] == "ok");
  CHECK(p["axes"]["model.experts"] == 8);
  CHECK(p["cores"] == 8);
  CHECK(p["chips"] == 4);  // tpu-v3-8: a 2x2 grid of chips, 2 cores each
  CHECK(p["batch_tokens"] == 64);
  // days = tokens / (batch x steps/s) / 86400; chip-hours = chips x days x 24; the cost per
  // 1e12 tokens scales the 1e9-token run's chip-hours by 1000, at 2.5 a chip-hour.
  const double days = 1e9 / (64 * p["steps_per_s"].get<double>()) / 86400;
  CHECK(p["days"].get<double>() == doctest::Approx(days));
  CHECK(p["chip_hours"].get<double>() == doctest::Approx(4 * days * 24));
  CHECK(p["cost_per_1e12_tokens"].get<double>() == doctest::Approx(4 * days * 24 * 1000 * 2.5));
  CHECK(std::filesystem::exists(out + "/points.jsonl"));
}

TEST_CASE("sweep: a model key on a preset, zip, and slower links never faster") {
  nlohmann::json config = Sweep({{{"path", "topology.link_bandwidth"}, {"values", {1e11, 1e9}}},
                                 {{"path", "model.d_ff"}, {"values", {32, 32}}}});
  config["combine"] = "zip";
  const std::string out = Dir("podsim_sweep_zip_test");
  CHECK(Run(config, out).ok == 2);
  const nlohmann::json points = nlohmann::json::parse(Slurp(out + "/results.json"))["points"];
  REQUIRE(points.size() == 2);
  CHECK(points[1]["step_time_us"].get<double>() > points[0]["step_time_us"].get<double>());

  // "model.experts" on a preset name: {"preset": name, "experts": value}.
  nlohmann::json preset = Sweep({{{"path", "model.num_layers"}, {"values", {2}}}});
  preset["base"]["model"] = "128E,12L";
  preset["base"]["topology"] = "tpu-v3-128";
  CheckExperimentConfig(preset, "<test>");
}

TEST_CASE("sweep: resume keeps the finished points and refuses another config's log") {
  const nlohmann::json config = Sweep({{{"path", "model.d_ff"}, {"values", {32, 64}}}});
  const std::string clean = Dir("podsim_sweep_clean"), out = Dir("podsim_sweep_resume");
  Run(config, clean);
  Run(config, out);
  // A run killed after its first point: the log holds one whole line and a torn one.
  const std::string log = Slurp(out + "/points.jsonl");
  const size_t first = log.find('\n');
  REQUIRE(first != std::string::npos);
  std::ofstream(out + "/points.jsonl") << log.substr(0, first + 1) << log.substr(first + 1, 20);
  std::filesystem::remove(out + "/results.csv");
  std::ofstream(out + "/status") << "status: running\n";
  Run(config, out, /*resume=*/true);
  CHECK(Slurp(out + "/results.csv") == Slurp(clean + "/results.csv"));
  CHECK(Slurp(out + "/results.json") == Slurp(clean + "/results.json"));
  CHECK(Slurp(out + "/points.jsonl") == Slurp(clean + "/points.jsonl"));

  nlohmann::json other = config;
  other["price_per_chip_hour"] = 3;
  CHECK_THROWS_WITH_AS(Run(other, out, true), doctest::Contains("another sweep config"), Error);
  RunOptions both;
  both.out_dir = out;
  both.resume = both.force = true;
  CHECK_THROWS_WITH_AS(RunExperiment(config, "<test>", both), doctest::Contains("exclude"),
                       ConfigError);
  nlohmann::json not_sweep = {{"experiment", "parameter_count"}};
  RunOptions resume;
  resume.out_dir = out;
  resume.resume = true;
  CHECK_THROWS_AS(RunExperiment(not_sweep, "<test>", resume), ConfigError);
}

TEST_CASE("sweep: Figure 8 layer-pair points") {
  nlohmann::json config = {{"experiment", "sweep"},
                           {"name", "toy_layers"},
                           {"base",
                            {{"layer",
                              {{"tokens_per_group", 8},
                               {"d_model", 16},
                               {"d_ff", 32},
                               {"num_heads", 2},
                               {"head_dim", 8},
                               {"seq_len", 4}}},
                             {"topology", "tpu-v3-8"}}},
                           {"axes",
                            {{{"path", "layer.experts"}, {"values", {4, 8, 16}}},
                             {{"path", "layer.d_ff"}, {"values", {32, 256}}}}}};
  const std::string out = Dir("podsim_sweep_layer_test");
  const RunSummary s = Run(config, out);
  CHECK(s.ok == 4);
  CHECK(s.invalid == 2);  // 4 experts over 8 cores
  const nlohmann::json points = nlohmann::json::parse(Slurp(out + "/results.json"))["points"];
  REQUIRE(points.size() == 6);
  CHECK(points[0]["status"] == "invalid");
  const nlohmann::json& e8 = points[2];
  REQUIRE(e8["status"] == "ok");
  CHECK(e8["cores"] == 8);
  CHECK(e8["resolved_model"]["num_groups"] == 8);  // G = D = the cores
  CHECK(e8["resolved_model"]["num_experts"] == 8);
  // A wider FFN is more work for the same tokens; twice the experts per core hold twice the
  // expert weights (2 x M x H each), so the peak cannot shrink.
  CHECK(points[3]["step_time_us"].get<double>() > e8["step_time_us"].get<double>());
  CHECK(points[4]["resolved_model"]["num_experts"] == 16);
  CHECK(points[4]["peak_memory_bytes"].get<int64_t>() > e8["peak_memory_bytes"].get<int64_t>());
  // A layer pair has no optimizer, remat or tokens: a training key there is an error.
  config["base"]["remat"] = "none";
  CHECK_THROWS_AS(CheckExperimentConfig(config, "<test>"), ConfigError);
}

TEST_CASE("sweep: config errors name what is wrong") {
  auto error_of = [](const nlohmann::json& config) {
    try {
      CheckExperimentConfig(config, "<test>");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A misspelt path is an error for the whole sweep, not a column of invalid points.
  CHECK(error_of(Sweep({{{"path", "model.expertz"}, {"values", {8}}}})).find("expertz") !=
        std::string::npos);
  CHECK(error_of(Sweep(nlohmann::json::array())).find("axes") != std::string::npos);
  CHECK(error_of(Sweep({{{"path", "model.d_ff"}, {"values", nlohmann::json::array()}}}))
            .find("axes[0].values") != std::string::npos);
  CHECK(error_of(Sweep({{{"path", "model.d_ff"}, {"values", {32}}},
                        {{"path", "model.d_ff"}, {"values", {64}}}}))
            .find("swept twice") != std::string::npos);
  nlohmann::json zip = Sweep({{{"path", "model.d_ff"}, {"values", {32, 64}}},
                              {{"path", "model.d_model"}, {"values", {16}}}});
  zip["combine"] = "zip";
  CHECK(error_of(zip).find("one length") != std::string::npos);
  nlohmann::json skip = Sweep({{{"path", "model.d_ff"}, {"values", {32}}}});
  skip["skip"] = {{{"model.d_model", 16}}};
  CHECK(error_of(skip).find("skip[0].model.d_model") != std::string::npos);
  nlohmann::json plot = Sweep({{{"path", "model.d_ff"}, {"values", {32}}}});
  plot["plot"] = {{"x", "model.d_ff"}, {"y", "step_time"}};
  CHECK(error_of(plot).find("'step_time' is not a column") != std::string::npos);
  nlohmann::json topo = Sweep({{{"path", "topology"}, {"values", {"tpu-v9-1"}}}});
  CHECK(error_of(topo).find("tpu-v9-1") != std::string::npos);
}

}  // namespace
}  // namespace podsim::experiments
