// The "training_step" experiment (GShard Table 3, Figure 7) at a toy size: the derived columns
// follow the reference file's formulas, the weights at the peak are one copy of each core's
// shards (worked out by hand), rematerialisation is chosen by fit, and config errors name the
// JSON path.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "experiments/experiment.h"

namespace podsim::experiments {
namespace {

nlohmann::json TrainingStepRunToyModel() {
  return {{"name", "toy"},      {"experts", 8},       {"groups", 8},        {"num_layers", 2},
          {"moe_every", 1},     {"d_model", 16},      {"d_ff", 32},         {"num_heads", 2},
          {"head_dim", 8},      {"tokens_per_group", 8}, {"seq_len", 4},   {"source_vocab", 16},
          {"target_vocab", 12}, {"dtype", "f32"}};
}

nlohmann::json RunConfig(const nlohmann::json& config, const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config.dump(2);
  RunOptions options;
  options.out_dir = dir + "/out";
  RunExperimentFile(dir + "/config.json", options);
  std::ifstream in(options.out_dir + "/results.json");
  return nlohmann::json::parse(in);
}

TEST_CASE("training_step: throughput columns and the weights at the peak, by hand") {
  const nlohmann::json results =
      RunConfig({{"experiment", "training_step"},
                 {"name", "toy_table3"},
                 {"points", {{{"model", TrainingStepRunToyModel()}, {"topology", "tpu-v3-8"}}}},
                 {"tokens", 1e9}},
                "podsim_training_step_test");
  const nlohmann::json& p = results["points"][0];
  REQUIRE(p["status"] == "ok");
  CHECK(p["cores"] == 8);
  CHECK(p["batch_tokens"] == 64);  // 8 groups of 8 tokens
  const double sps = p["steps_per_s"].get<double>();
  CHECK(sps == doctest::Approx(1e6 / p["step_time_us"].get<double>()));
  // days = tokens / (batch * steps/s) / 86400; core-years = cores * days / 365.
  const double days = 1e9 / (64 * sps) / 86400;
  CHECK(p["days"].get<double>() == doctest::Approx(days));
  CHECK(p["core_years"].get<double>() == doctest::Approx(8 * days / 365));
  // Weights per core (f32), M = 16, H = 32, E = 8, 2 heads of 8, one MoE layer per side:
  //   replicated: encoder 2 LayerNorms (32 each) + attention 4 x 16 x 16 + wg 16 x 8 = 1216;
  //   decoder 3 LayerNorms + 2 attentions + wg = 2272; embeddings (16 + 12) x 16 = 448; final
  //   LayerNorms 64: 4000 elements, 16000 B on every core.
  //   experts: 2 sides x 2 x 8 x 16 x 32 = 16384 elements, an eighth per core: 8192 B.
  // Donated, each weight is one buffer except while its update runs (then at most one more, the
  // largest shard: an expert stack's 2048 B).
  const int64_t weights = p["memory_by_kind"]["weights"].get<int64_t>();
  CHECK(weights >= 16000 + 8192);
  CHECK(weights <= 16000 + 8192 + 2048);
  // Forward matmul FLOPs of the whole toy batch (64 tokens), per side and layer:
  //   q, k, v, output projections 4 x 2 x 64 x 16 x 16 = 131072; QK^T and AV 2 x 2 x 8 groups x
  //   2 sequences x 2 heads x 4 x 4 x 8 = 16384 (the decoder has both twice: self and cross);
  //   gating logits 2 x 64 x 16 x 8 = 16384; the two GSE,GSC->GSEC outer products 2 x 2048;
  //   dispatch and combine 2 x 2 x 8 x 8 x 8 x 2 x 16 = 65536; experts 2 x 2 x 128 slots x 16 x
  //   32 = 262144; then logits 2 x 64 x 16 x 12 = 24576.
  //   encoder 131072 + 16384 + 16384 + 4096 + 65536 + 262144 = 495616; decoder 643072;
  //   total 1163264; model FLOPs 3x that.
  CHECK(p["model_flops"].get<double>() == 3 * 1163264.0);
  const double peak = 61.5e12;  // tpu-v3-core bf16
  CHECK(p["mfu"].get<double>() ==
        doctest::Approx(3 * 1163264.0 / (8 * p["step_time_us"].get<double>() * 1e-6 * peak)));
  CHECK(p["categories"].contains("backward"));
  CHECK(p["categories"].contains("optimizer"));
}

// A toy training_step config on 8 cores with HBM of `hbm_bytes` per core (0: the preset's 16 GiB).
nlohmann::json RematConfig(const std::string& remat, int64_t hbm_bytes) {
  nlohmann::json c = {
      {"experiment", "training_step"},
      {"name", "toy_remat"},
      {"points", {{{"model", TrainingStepRunToyModel()}, {"topology", "tpu-v3-8"}}}},
      {"remat", remat}};
  if (hbm_bytes > 0) c["sim"] = {{"device", {{"preset", "tpu-v3-core"}, {"hbm_capacity", hbm_bytes}}}};
  return c;
}

std::string CsvRow(const std::string& name, int row) {
  std::ifstream in((std::filesystem::temp_directory_path() / name / "out" / "results.csv").string());
  std::string line;
  std::getline(in, line);  // the header
  for (int k = 0; k <= row; ++k) std::getline(in, line);
  return line;
}

TEST_CASE("training_step: rematerialisation is chosen by fit, as the paper's compiler did") {
  // The peaks of the forced policies first; the automatic choice is then steered by HBM alone.
  const nlohmann::json none = RunConfig(RematConfig("none", 0), "podsim_ts_none")["points"][0];
  const nlohmann::json layer = RunConfig(RematConfig("per-layer", 0), "podsim_ts_layer")["points"][0];
  const nlohmann::json selective = RunConfig(RematConfig("selective", 0), "podsim_ts_sel")["points"][0];
  const int64_t none_peak = none["peak_memory_bytes"].get<int64_t>();
  const int64_t layer_peak = layer["peak_memory_bytes"].get<int64_t>();
  const int64_t selective_peak = selective["peak_memory_bytes"].get<int64_t>();
  REQUIRE(none_peak > selective_peak);
  REQUIRE(selective_peak > layer_peak);
  // A forced policy is measured against saving everything.
  CHECK(layer["remat"] == "per-layer");
  CHECK(layer["no_remat_peak_bytes"] == none_peak);
  CHECK(layer["memory_saved_bytes"] == none_peak - layer_peak);
  REQUIRE(layer["remat_candidates"].size() == 2);
  CHECK(layer["remat_candidates"][0]["remat"] == "none");
  // Recomputing each layer's forward takes time; saving every value a gradient rule reads
  // recomputes only views of saved values (broadcasts, reshapes, widening converts), which fuse
  // into their readers: no time.
  CHECK(layer["recompute_fraction"].get<double>() > 0);
  CHECK(layer["categories"].contains("recompute"));
  CHECK(layer["categories"]["recompute"]["modelled_us"].get<double>() > 0);
  CHECK(none["recompute_fraction"].get<double>() == 0);
  if (none["categories"].contains("recompute")) {
    CHECK(none["categories"]["recompute"]["modelled_us"].get<double>() == 0);
  }

  SUBCASE("room for everything: no recomputation, one candidate measured") {
    const nlohmann::json p = RunConfig(RematConfig("auto", 0), "podsim_ts_auto")["points"][0];
    CHECK(p["remat"] == "none");
    CHECK(p["remat_candidates"].size() == 1);
    CHECK(p["memory_saved_bytes"] == 0);
  }
  SUBCASE("room for the selective step only") {
    const nlohmann::json p =
        RunConfig(RematConfig("auto", selective_peak), "podsim_ts_auto")["points"][0];
    CHECK(p["status"] == "ok");
    CHECK(p["remat"] == "selective");
    CHECK(p["remat_candidates"].size() == 2);
    CHECK(p["remat_candidates"][0]["fits"] == false);
    CHECK(p["memory_saved_bytes"] == none_peak - selective_peak);
  }
  SUBCASE("room for the per-layer step only") {
    const nlohmann::json p =
        RunConfig(RematConfig("auto", layer_peak), "podsim_ts_auto")["points"][0];
    CHECK(p["status"] == "ok");
    CHECK(p["remat"] == "per-layer");
    CHECK(p["remat_candidates"].size() == 3);
    CHECK(p["peak_memory_bytes"] == layer_peak);
    CHECK(p["recompute_fraction"].get<double>() > 0);
  }
  SUBCASE("no room even with remat: an OOM result naming the instruction and the bytes") {
    nlohmann::json config = RematConfig("auto", layer_peak - 1);
    config["plot"] = "memory";
    const nlohmann::json p = RunConfig(config, "podsim_ts_auto")["points"][0];
    CHECK(p["status"] == "oom");
    CHECK(p["remat"] == "per-layer");  // the smallest peak of the three
    CHECK(p["remat_candidates"].size() == 3);
    CHECK(p["error"].get<std::string>().find("OOM at %") != std::string::npos);
    CHECK(p["error"].get<std::string>().find("every remat policy") != std::string::npos);
    // results.csv says so too, and gives no step time for the point.
    const std::string row = CsvRow("podsim_ts_auto", 0);
    CHECK(row.rfind("toy,8,64,", 0) == 0);
    CHECK(row.find(",,,,") != std::string::npos);
    CHECK(row.substr(row.size() - 4) == ",oom");
    // And the plot's bar is labelled so.
    std::ifstream plot((std::filesystem::temp_directory_path() / "podsim_ts_auto" / "out" / "plot.csv").string());
    std::string header, bar;
    std::getline(plot, header);
    std::getline(plot, bar);
    CHECK(bar.rfind("\"toy (oom)\" ", 0) == 0);
  }
}

TEST_CASE("training_step: config errors name the JSON path") {
  auto config = [](nlohmann::json point) {
    return nlohmann::json{{"experiment", "training_step"}, {"points", {point}}};
  };
  nlohmann::json bad = TrainingStepRunToyModel();
  bad["experts"] = 6;  // 8 cores cannot split 6 experts
  CHECK_THROWS_WITH_AS(RunConfig(config({{"model", bad}, {"topology", "tpu-v3-8"}}), "podsim_ts_bad"),
                       doctest::Contains("points[0].model: moe.num_devices: 8 devices cannot split "
                                         "num_experts = 6"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(RunConfig(config({{"model", "64E,12L"}, {"topology", "tpu-v3-8"}}), "podsim_ts_bad"),
                       doctest::Contains("points[0].model.preset"), ConfigError);
  nlohmann::json c = config({{"model", TrainingStepRunToyModel()}, {"topology", "tpu-v3-8"}});
  c["remat"] = "sometimes";
  CHECK_THROWS_WITH_AS(RunConfig(c, "podsim_ts_bad"), doctest::Contains("remat"), ConfigError);
}

}  // namespace
}  // namespace podsim::experiments
