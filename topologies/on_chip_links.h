#pragma once
// On-chip links, shared by every topology kind: each chip has one directed link per ordered pair
// of its distinct cores, numbered after all ICI links by (chip, source core, destination core).

#include <cstdint>
#include <vector>

#include "topologies/topology.h"

namespace podsim::topo {

// Appends num_chips * cpc * (cpc - 1) on-chip links to `links` (ids continue from its size).
void AppendOnChipLinks(int64_t num_chips, int64_t cores_per_chip, double bandwidth,
                       int64_t latency_ps, std::vector<Link>& links);

// Id of the on-chip link from src_core to dst_core (distinct cores of one chip), given the id of
// the first on-chip link.
inline int64_t OnChipLinkId(int64_t first_on_chip, int64_t cores_per_chip, int64_t src_core,
                            int64_t dst_core) {
  const int64_t chip = src_core / cores_per_chip;
  const int64_t i = src_core % cores_per_chip;
  const int64_t j = dst_core % cores_per_chip;
  return first_on_chip + (chip * cores_per_chip + i) * (cores_per_chip - 1) + (j < i ? j : j - 1);
}

}  // namespace podsim::topo
