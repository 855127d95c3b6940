// The "routing_skew" experiment: drop rates that follow from counting alone (two experts, every
// token to both), a hot expert's expected drops derived from its binomial demand, the Zipf
// probabilities by hand, a step time that grows with the capacity whatever the routing, and
// repeatable results.

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

// The layer pair at toy size on `cores` cores of a v3 slice of 1 x 1 or 2 x 2 chips.
nlohmann::json Config(int64_t experts, int64_t tokens, nlohmann::json distributions,
                      nlohmann::json factors) {
  nlohmann::json c = {
      {"experiment", "routing_skew"},
      {"name", "toy_skew"},
      {"experts", experts},
      {"tokens_per_group", tokens},
      {"groups", 50},
      {"distributions", std::move(distributions)},
      {"capacity_factors", std::move(factors)},
      {"topology", "tpu-v3-8"},
      {"layer",
       {{"d_model", 16}, {"d_ff", 32}, {"num_heads", 2}, {"head_dim", 8}, {"seq_len", 4}}}};
  if (experts < 8) {  // one chip of 2 cores
    c["topology_overrides"] = {{"dims", {1, 1}}, {"wraparound", {false, false}}};
  }
  return c;
}

nlohmann::json RunSkew(const nlohmann::json& config, const std::string& name) {
  const std::string out = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(out);
  RunOptions options;
  options.out_dir = out;
  RunExperiment(config, "<test>", options);
  std::ifstream in(out + "/results.json");
  return nlohmann::json::parse(in);
}

TEST_CASE("routing_skew: two experts, every token to both: drops by counting") {
  // E = 2 and the second expert always dispatched: each expert is asked by every token of the
  // group (as top-1 or top-2), S demands. C = factor x 2S/E = factor x S: factor 0.5 keeps S/2
  // of S (half the assignments dropped), factor 1 keeps all, whatever the sampling.
  const nlohmann::json r =
      RunSkew(Config(2, 1000, {{{"kind", "uniform"}}}, {0.5, 1}), "podsim_skew_two");
  const nlohmann::json& points = r["distributions"][0]["points"];
  REQUIRE(points.size() == 2);
  CHECK(points[0]["capacity"] == 500);
  CHECK(points[0]["drop_rate"].get<double>() == 0.5);
  CHECK(points[0]["hottest_demand"].get<double>() == 2.0);  // 1000 demands on 500 slots
  CHECK(points[1]["drop_rate"].get<double>() == 0.0);
  CHECK(points[1]["tokens_dropped"].get<double>() == 0.0);
}

TEST_CASE("routing_skew: a hot expert's drops follow its binomial demand") {
  // E = 4, one hot expert with share 0.7 (the others 0.1 each), S = 400, factor 1: C = 200.
  // Expert 0's top-1 demand n ~ Bin(400, 0.7) (mean 280, sd 9.2: above 200 for sure) keeps 200
  // and drops n - 200; every top-2 choice of expert 0 (tokens whose top-1 is another expert,
  // 400 - n of them, each choosing 0 with probability 0.7 / 0.9) finds it full. The others'
  // demand (mean 40 top-1 + about 102 top-2) stays far below 200. Expected drops per group:
  // (280 - 200) + 120 x 7/9 = 173.33 of 800 assignments: 0.2167; over 50 groups the sampling
  // error is about 0.002.
  const nlohmann::json r =
      RunSkew(Config(4, 400, {{{"kind", "hot"}, {"fraction", 0.25}, {"share", 0.7}}}, {1}),
              "podsim_skew_hot");
  const nlohmann::json& p = r["distributions"][0];
  CHECK(p["probabilities_top"][0].get<double>() == doctest::Approx(0.7));
  CHECK(p["probabilities_top"][1].get<double>() == doctest::Approx(0.1));
  CHECK(p["points"][0]["drop_rate"].get<double>() == doctest::Approx(0.2167).epsilon(0.03));
}

TEST_CASE("routing_skew: Zipf probabilities, step time by capacity, repeatable") {
  // Zipf s = 1 over 8 experts: p_k proportional to 1/k; the first is 1 / H_8 = 1 / 2.717857.
  const nlohmann::json config =
      Config(8, 64, {{{"kind", "uniform"}}, {{"kind", "zipf"}, {"s", 1.0}}}, {1, 2, 4});
  const nlohmann::json a = RunSkew(config, "podsim_skew_zipf_a");
  const nlohmann::json& zipf = a["distributions"][1];
  CHECK(zipf["probabilities_top"][0].get<double>() == doctest::Approx(1 / 2.717857));
  CHECK(zipf["probabilities_top"][1].get<double>() == doctest::Approx(0.5 / 2.717857));
  // The step time is sized by C (16, 32, 64 slots): it grows with the factor and is the same
  // for both routings; a skewed router drops more at every factor.
  for (size_t k = 0; k < 3; ++k) {
    const nlohmann::json& u = a["distributions"][0]["points"][k];
    const nlohmann::json& z = zipf["points"][k];
    CHECK(u["step_ms"] == z["step_ms"]);
    CHECK(z["drop_rate"].get<double>() >= u["drop_rate"].get<double>());
    if (k > 0) {
      CHECK(u["step_ms"].get<double>() >
            a["distributions"][0]["points"][k - 1]["step_ms"].get<double>());
    }
  }
  const nlohmann::json b = RunSkew(config, "podsim_skew_zipf_b");
  CHECK(a["points"] == b["points"]);
}

TEST_CASE("routing_skew: config errors") {
  auto error_of = [](const nlohmann::json& config) {
    try {
      CheckExperimentConfig(config, "<test>");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of(Config(8, 64, {{{"kind", "hot"}, {"fraction", 1.0}, {"share", 0.5}}}, {1}))
            .find("distributions[0].fraction") != std::string::npos);
  CHECK(error_of(Config(8, 64, {{{"kind", "pareto"}}}, {1})).find("distributions[0].kind") !=
        std::string::npos);
  CHECK(error_of(Config(8, 64, {{{"kind", "uniform"}}}, {0})).find("capacity_factors[0]") !=
        std::string::npos);
  CHECK(error_of(Config(8, 64, {{{"kind", "uniform"}}}, nlohmann::json::array()))
            .find("capacity_factors") != std::string::npos);
}

}  // namespace
}  // namespace podsim::experiments
