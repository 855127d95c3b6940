// The "inference" experiment: a small MoE model decoding on a v3 slice of 8 cores. The batch is
// padded to whole sentences per core (so 1 and 8 sentences run the same programs), the caches'
// bytes by hand, the sentence latency from its parts, and an out-of-memory point reported as
// such in every output.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/error.h"
#include "experiments/experiment.h"

namespace podsim::experiments {
namespace {

// 8 experts on the 8 cores of tpu-v3-8; 4 layers (2 + 2, moe_every 2: one iteration of a dense
// and an MoE layer per side), M = 32, 2 heads of 16, bf16 activations (the preset's).
nlohmann::json Config(nlohmann::json batches) {
  return {{"experiment", "inference"},
          {"name", "toy_inference"},
          {"points",
           {{{"name", "toy"},
             {"topology", "tpu-v3-8"},
             {"model",
              {{"preset", "128E,12L"},
               {"experts", 8},
               {"num_layers", 4},
               {"d_model", 32},
               {"d_ff", 64},
               {"num_heads", 2},
               {"head_dim", 16},
               {"source_vocab", 64},
               {"target_vocab", 64}}}}}},
          {"batches", std::move(batches)},
          {"inference", {{"beam", 2}, {"source_len", 4}, {"max_len", 4}}}};
}

nlohmann::json Run(const nlohmann::json& config, const std::string& name, std::string* csv) {
  const std::string out = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(out);
  RunOptions options;
  options.out_dir = out;
  RunExperiment(config, "<test>", options);
  std::ifstream in(out + "/results.json");
  if (csv) {
    std::ifstream c(out + "/results.csv");
    std::stringstream s;
    s << c.rdbuf();
    *csv = s.str();
  }
  return nlohmann::json::parse(in);
}

TEST_CASE("inference: padded batches, cache bytes by hand, sentence latency from its parts") {
  const nlohmann::json r = Run(Config({1, 8, 16}), "podsim_inference_toy", nullptr);
  const nlohmann::json& p = r["points"];
  REQUIRE(p.size() == 3);
  for (const auto& x : p) CHECK(x["status"] == "ok");
  // 1 and 8 sentences on 8 cores: one sentence per core either way (padded), same programs.
  CHECK(p[0]["padded_batch"] == 8);
  CHECK(p[1]["padded_batch"] == 8);
  CHECK(p[0]["token_ms"].get<double>() == p[1]["token_ms"].get<double>());
  CHECK(p[0]["prefill_ms"].get<double>() == p[1]["prefill_ms"].get<double>());
  // ... so 8 sentences get 8 times the throughput.
  CHECK(p[1]["tokens_per_s"].get<double>() ==
        doctest::Approx(8 * p[0]["tokens_per_s"].get<double>()));
  // 16 sentences: two per core, more work per step.
  CHECK(p[2]["padded_batch"] == 16);
  CHECK(p[2]["token_ms"].get<double>() > p[1]["token_ms"].get<double>());
  // Caches per core: keys and values of N x K = 32 bf16 values per position and decoder layer
  // (2 of them): 2 x 32 x 2 B x 2 = 256 B per position. One sentence: W x T = 8 positions of
  // self-attention, Ls = 4 of cross-attention.
  CHECK(p[0]["kv_cache_bytes"]["self"] == 8 * 256);
  CHECK(p[0]["kv_cache_bytes"]["cross"] == 4 * 256);
  CHECK(p[2]["kv_cache_bytes"]["self"] == 2 * 8 * 256);
  // A decode step has b x W tokens per group: C = ceil(2 x 2 / 8) = 1 slot per expert.
  CHECK(p[0]["tokens_per_group"] == 2);
  CHECK(p[0]["capacity"] == 1);
  // Sentence latency: prefill + max_len decode steps.
  for (const auto& x : p) {
    CHECK(x["sentence_ms"].get<double>() ==
          doctest::Approx(x["prefill_ms"].get<double>() + 4 * x["token_ms"].get<double>()));
  }
}

TEST_CASE("inference: a decode step over the cores' HBM is oom in every output") {
  nlohmann::json c = Config({8});
  c["sim"] = {{"device", {{"preset", "tpu-v3-core"}, {"hbm_capacity", 1 << 16}}}};
  std::string csv;
  const nlohmann::json r = Run(c, "podsim_inference_oom", &csv);
  REQUIRE(r["points"].size() == 1);
  CHECK(r["points"][0]["status"] == "oom");
  // Both programs are over 64 KiB per core; the message names each.
  const std::string error = r["points"][0]["error"];
  CHECK(error.find("prefill: OOM") != std::string::npos);
  CHECK(error.find("decode step: OOM") != std::string::npos);
  CHECK(!r["points"][0].contains("token_ms"));
  CHECK(csv.find(",oom\n") != std::string::npos);
  CHECK(r["summary"].get<std::string>().find("1 oom") != std::string::npos);
}

TEST_CASE("inference: bad configs are errors naming the key") {
  nlohmann::json c = Config({0});
  CHECK_THROWS_WITH_AS(CheckExperimentConfig(c, "<test>"), doctest::Contains("batches[0]"),
                       ConfigError);
  c = Config({8});
  c["inference"]["beam"] = 0;
  CHECK_THROWS_WITH_AS(CheckExperimentConfig(c, "<test>"), doctest::Contains("inference.beam"),
                       ConfigError);
  c = Config({8});
  c["inference"]["batch"] = 64;  // the batches come from "batches"; this one would be ignored
  CHECK_THROWS_WITH_AS(CheckExperimentConfig(c, "<test>"), doctest::Contains("inference.batch"),
                       ConfigError);
  c = Config({8});
  c["points"][0]["model"]["experts"] = 4;  // fewer experts than the 8 cores to split them over
  CHECK_THROWS_WITH_AS(CheckExperimentConfig(c, "<test>"), doctest::Contains("points[0]"),
                       ConfigError);
}

}  // namespace
}  // namespace podsim::experiments
