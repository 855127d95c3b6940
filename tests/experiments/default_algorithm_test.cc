// `default` picks the algorithm a full search (`best`) confirms, on the shipped presets.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "experiments/collective_run.h"
#include "topologies/load.h"

namespace podsim::experiments {
namespace {

TEST_CASE("default is within 10% of the best algorithm on every preset up to 256 cores") {
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
      CHECK(chosen.time_us <= 1.10 * best.time_us);
    }
  }
  CHECK(cases >= 40);
}

}  // namespace
}  // namespace podsim::experiments
