// `default` picks the algorithm a full search (`best`) confirms, on the shipped presets.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "experiments/collective_run.h"
#include "topologies/load.h"

namespace podsim::experiments {
namespace {

TEST_CASE("default is within 10% of the best algorithm on every preset up to 256 cores") {
  // 8 MiB, where bandwidth and contention decide, and 4 KiB, where latency does (the number of
  // steps: direct's one or two against a ring's tens).
  int cases = 0;
  for (const std::string& preset : topo::TopologyPresets().Names()) {
    const auto topology = topo::LoadTopology(preset);
    if (topology->num_cores() > 256) continue;
    for (const char* bytes : {"8MiB", "4KiB"}) {
      for (const char* op : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"}) {
        const std::string name = preset + " " + op + " " + bytes;
        CAPTURE(name);
        nlohmann::json config = {{"topology", topo::ExpandTopologyConfig(preset, "topology")},
                                 {"op", op},
                                 {"bytes", bytes},
                                 {"algorithm", "best"}};
        const CollectiveRunResult best =
            RunCollective(CollectiveRunConfig::FromJson(config, ""), *topology);
        // Which algorithm default picks does not depend on the network model (it times its
        // candidates on the flow one), and `best` has already timed every algorithm on the flow
        // model: the cheap analytic run names the choice, best's list gives its flow time.
        config["algorithm"] = "default";
        config["network"] = "analytic";
        const std::string chosen =
            RunCollective(CollectiveRunConfig::FromJson(config, ""), *topology).algorithm;
        CAPTURE(best.algorithm);
        CAPTURE(chosen);
        double chosen_us = -1;
        for (const AlgorithmCandidate& c : best.candidates) {
          if (c.algorithm == chosen && c.error.empty()) chosen_us = c.time_us;
        }
        ++cases;
        REQUIRE(chosen_us > 0);
        CHECK(chosen_us <= 1.10 * best.time_us);
      }
    }
  }
  CHECK(cases >= 80);
}

}  // namespace
}  // namespace podsim::experiments
