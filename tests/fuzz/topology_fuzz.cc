// The topology loader with routing: JSON -> config -> topology, then routes between a few core
// pairs (chosen from the input) must be chains of links from the source chip to the destination
// chip, and small topologies describe themselves (diameter and mean hops included).

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config.h"
#include "topologies/describe.h"
#include "topologies/load.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  podsim::fuzz::ExpectClearErrors([&] {
    const nlohmann::json json = podsim::ParseJson(text, "fuzz.json");
    const podsim::topo::TopologyConfig config =
        podsim::topo::TopologyConfig::FromJson(podsim::topo::ExpandTopologyConfig(json, "topology"), "topology");
    if (config.NumCores() > 4096) return;  // building large pods is slow, not interesting here
    const auto topology = podsim::topo::MakeTopology(config);
    const int64_t cores = topology->num_cores();
    FUZZ_CHECK(cores == config.NumCores(), "num_cores matches the config");
    const auto& links = topology->links();
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < size; ++k) h = (h ^ data[k]) * 1099511628211ull;
    for (int pair = 0; pair < 8; ++pair) {
      const int64_t src = static_cast<int64_t>((h >> 7) % static_cast<uint64_t>(cores));
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      const int64_t dst = static_cast<int64_t>((h >> 7) % static_cast<uint64_t>(cores));
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      const std::vector<int64_t> route = topology->Route(src, dst);
      int64_t at = topology->ChipOfCore(src);
      for (int64_t l : route) {
        FUZZ_CHECK(l >= 0 && l < static_cast<int64_t>(links.size()), "route link id in range");
        FUZZ_CHECK(links[static_cast<size_t>(l)].src_chip == at, "route is a chain of links");
        at = links[static_cast<size_t>(l)].dst_chip;
      }
      FUZZ_CHECK(at == topology->ChipOfCore(dst), "route ends at the destination chip");
      FUZZ_CHECK(topology->Hops(src, dst) == static_cast<int64_t>(route.size()), "Hops == route length");
      podsim::topo::DescribeRoute(*topology, src, dst);
    }
    if (topology->num_chips() <= 256) {
      topology->Describe();
      podsim::topo::DescribeJson(*topology, /*include_links=*/false);
    }
  });
  return 0;
}
