// The "parameter_count" experiment (GShard Table 1): counts of a small model worked out by hand,
// the paper's column beside the presets, and config errors naming the JSON path.

#include <doctest/doctest.h>

#include <algorithm>
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

std::vector<std::vector<std::string>> ParameterCountReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    // Model names are quoted ("128E,12L"): split outside quotes.
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') {
        quoted = !quoted;
      } else if (ch == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += ch;
      }
    }
    rows.push_back(cells);
  }
  return rows;
}

std::string Run(const nlohmann::json& config, const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config.dump(2);
  RunOptions options;
  options.out_dir = dir + "/out";
  RunExperimentFile(dir + "/config.json", options);
  return options.out_dir;
}

TEST_CASE("parameter_count: a small model's counts, by hand") {
  // M = 8, H = 16, E = 4, 2 heads of 4, L = 4 (2 + 2 layers, the second of each side MoE),
  // vocabularies 10 and 6. Attention: 4 x M x N x K = 256; a LayerNorm 2M = 16; a dense FFN
  // 2MH = 256; an MoE FFN wg ME = 32 + experts 2EMH = 1024.
  //   encoder: (16 + 256 + 16 + 256) + (16 + 256 + 16 + 32 + 1024)             = 1888
  //   decoder: (16 + 256 + 16 + 256 + 16 + 256) + (16 + 256 + 16 + 256 + 16 + 32 + 1024) = 2432
  //   embeddings 10 x 8 + 6 x 8 = 128, final LayerNorms 2 x 16 = 32: total 4480, experts 2048.
  // Per core on D = E = 4: 2432 replicated x 4 B + 2048 / 4 x 4 B = 11776 B.
  const nlohmann::json tiny = {{"name", "tiny"},       {"experts", 4},     {"num_layers", 4},
                               {"d_model", 8},         {"d_ff", 16},       {"num_heads", 2},
                               {"head_dim", 4},        {"tokens_per_group", 8}, {"seq_len", 4},
                               {"source_vocab", 10},   {"target_vocab", 6},     {"groups", 4}};
  nlohmann::json tiny_bf16 = tiny;
  tiny_bf16["name"] = "tiny-bf16";
  tiny_bf16["weight_dtype"] = "bf16";
  const std::string out = Run({{"experiment", "parameter_count"},
                               {"name", "count_test"},
                               {"models", {tiny, tiny_bf16, "128E,12L"}},
                               {"reference",
                                {{"file", "experiments/reference/gshard-paper.json"},
                                 {"table", "table1_params_billion"}}}},
                              "podsim_parameter_count_test");
  const auto rows = ParameterCountReadCsv(out + "/results.csv");
  REQUIRE(rows.size() == 4);
  const std::vector<std::string>& h = rows[0];
  auto col = [&](size_t row, const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    REQUIRE(it != h.end());
    return rows[row][static_cast<size_t>(it - h.begin())];
  };
  CHECK(col(1, "model") == "tiny");
  CHECK(col(1, "params") == "4480");
  CHECK(col(1, "expert_params") == "2048");
  CHECK(col(1, "replicated_params") == "2432");
  CHECK(col(1, "f32_params") == "4480");
  CHECK(col(1, "bf16_params") == "0");
  CHECK(std::stod(col(1, "expert_formula")) == 2048);
  CHECK(std::stod(col(1, "per_core_weight_gib")) * (1 << 30) == doctest::Approx(11776));
  CHECK(col(1, "paper_billion").empty());
  CHECK(col(2, "bf16_params") == "4480");
  CHECK(std::stod(col(2, "per_core_weight_gib")) * (1 << 30) == doctest::Approx(11776 / 2));
  // 128E,12L: experts 128 x 6 MoE layers x 2 x 1024 x 8192; the paper prints 12.5 (billion),
  // the expert count / 1.0308 (the reference file's note).
  CHECK(col(3, "expert_params") == "12884901888");
  CHECK(std::stod(col(3, "paper_billion")) == 12.5);
  CHECK(std::stod(col(3, "paper_vs_expert")) == doctest::Approx(1 / 1.0308).epsilon(1e-3));
}

TEST_CASE("parameter_count: config errors name the JSON path") {
  auto config = [](nlohmann::json models) {
    return nlohmann::json{{"experiment", "parameter_count"}, {"models", models}};
  };
  CHECK_THROWS_WITH_AS(Run(config({"128E,12L", "64E,12L"}), "podsim_parameter_count_bad"),
                       doctest::Contains("models[1].preset: '64E,12L' is not one of"), ConfigError);
  CHECK_THROWS_WITH_AS(Run(config({{{"name", "x"}, {"preset", "128E,12L"}, {"layers", 2}}}),
                           "podsim_parameter_count_bad"),
                       doctest::Contains("models[0].layers"), ConfigError);
  CHECK_THROWS_WITH_AS(
      Run(config({{{"name", "x"}, {"preset", "128E,12L"}, {"batch_tokens", 1000}}}),
          "podsim_parameter_count_bad"),
      doctest::Contains("models[0].batch_tokens: 1000 tokens do not divide into groups of 2048"),
      ConfigError);
  CHECK_THROWS_WITH_AS(Run(config({{{"name", "x"}, {"preset", "128E,12L"}, {"num_layers", 7}}}),
                           "podsim_parameter_count_bad"),
                       doctest::Contains("models[0]: model.num_layers: must be even"), ConfigError);
  CHECK_THROWS_WITH_AS(Run(config(nlohmann::json::array()), "podsim_parameter_count_bad"),
                       doctest::Contains("models: must be a non-empty array"), ConfigError);
}

}  // namespace
}  // namespace podsim::experiments
