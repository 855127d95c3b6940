#include "topologies/topology.h"

#include <nlohmann/json.hpp>

#include "topologies/on_chip_links.h"

namespace podsim::topo {

nlohmann::json Topology::ToJson() const { return {{"kind", "unknown"}, {"name", name()}}; }

void AppendOnChipLinks(int64_t num_chips, int64_t cores_per_chip, double bandwidth,
                       int64_t latency_ps, std::vector<Link>& links) {
  links.reserve(links.size() + num_chips * cores_per_chip * (cores_per_chip - 1));
  for (int64_t chip = 0; chip < num_chips; ++chip) {
    for (int64_t i = 0; i < cores_per_chip; ++i) {
      for (int64_t j = 0; j < cores_per_chip; ++j) {
        if (i == j) continue;
        links.push_back(Link{.id = static_cast<int64_t>(links.size()),
                             .src_chip = chip,
                             .dst_chip = chip,
                             .kind = LinkKind::kOnChip,
                             .bandwidth = BytesPerSecond{bandwidth},
                             .latency = Time::Picos(latency_ps),
                             .src_core = chip * cores_per_chip + i,
                             .dst_core = chip * cores_per_chip + j});
      }
    }
  }
}

}  // namespace podsim::topo
