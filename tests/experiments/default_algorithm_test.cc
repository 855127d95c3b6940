// `default` picks the algorithm a full search (`best`) confirms, on the shipped presets.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "experiments/collective_run.h"
#include "topologies/load.h"

namespace podsim::experiments {
namespace {

TEST_CASE("default is within 10% of the best algorithm on every preset up to 256 cores") {
  // Known misses, where the analytic model that picks (sim/collectives/algorithms.h) misjudges
  // the flow model's contention: on hypercube-16 the bidirectional ring's reverse direction
  // closes over a 3-hop route that shares links with the ring's own edges, which the analytic
  // model charges as if the bytes were on all three links at once. The flow model makes that
  // ring 1.5x (all-gather) and 1.15x (reduce-scatter) slower than the unidirectional one.
  const std::set<std::string> known = {"hypercube-16 all-gather", "hypercube-16 reduce-scatter"};
  int cases = 0;
  for (const std::string& preset : topo::TopologyPresets().Names()) {
    const auto topology = topo::LoadTopology(preset);
    if (topology->num_cores() > 256) continue;
    for (const char* op : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"}) {
      const std::string name = preset + " " + op;
      CAPTURE(name);
      nlohmann::json config = {{"topology", topo::ExpandTopologyConfig(preset, "topology")},
                               {"op", op},
                               {"bytes", "8MiB"},
                               {"algorithm", "best"}};
      const CollectiveRunResult best =
          RunCollective(CollectiveRunConfig::FromJson(config, ""), *topology);
      config["algorithm"] = "default";
      const CollectiveRunResult chosen =
          RunCollective(CollectiveRunConfig::FromJson(config, ""), *topology);
      CAPTURE(best.algorithm);
      CAPTURE(chosen.algorithm);
      ++cases;
      if (known.count(name)) {
        CHECK(chosen.time_us > 1.10 * best.time_us);  // still missed: update the list when fixed
        continue;
      }
      CHECK(chosen.time_us <= 1.10 * best.time_us);
    }
  }
  CHECK(cases >= 40);
}

}  // namespace
}  // namespace podsim::experiments
