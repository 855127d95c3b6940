#pragma once
// The flow model (sim/network/flow_network.h) on traffic that the pod's translations map onto
// itself, solved on one representative flow per orbit instead of on every flow.
//
// On a torus that is not twisted, whose every dimension wraps or has at most 2 chips, and whose
// routes depend only on the chip difference (tie break "positive" or "split", or "alternate"
// with no ties: no even ring), adding a vector v to every chip's coordinates maps links onto
// links (the link leaving chip x along (dimension, direction) onto the one leaving x + v; on a
// 2-chip line both directions are one orbit; on-chip links by their (source, destination) local
// cores) and routes onto routes. When every link of an orbit has the same bandwidth and latency
// and the traffic is invariant too (each core sends, at one time, the same bytes to the core at
// each offset, as in a direct AllToAll over every core with equal blocks), the max-min fair rates
// are invariant, being unique: every flow of an orbit moves at its representative's rate and
// ends with it, and a link carries m representative-units of each flow orbit whose path crosses
// m links of its orbit (N flows x m crossings over N links). The progressive filling over
// N chips x F flows becomes one over F flows (those of chip 0's cores) and the link orbits, with
// the same classes' levels and ends: exact, not an approximation, up to the rounding of sums in
// another order (a few picoseconds). tests/sim/network/symmetric_flow_test.cc checks it against
// the full model.

#include <cstdint>
#include <optional>
#include <vector>

#include "base/units.h"
#include "topologies/topology.h"

namespace podsim::sim {

// One representative transfer: src_core on chip 0.
struct RepresentativeTransfer {
  int64_t src_core = 0;
  int64_t dst_core = 0;
  int64_t bytes = 0;
  // When it (and each of its translates) starts; unset: the start SolveSymmetricFlow is given.
  // Traffic made of several waves, each invariant, is invariant at every instant, so the
  // shortcut stays exact for collectives that overlap (sim/program/collective_executor.h).
  std::optional<Time> start;
};

struct SymmetricFlowResult {
  std::vector<Time> done;          // per representative: when its transfer (every path) completes
  std::vector<double> link_bytes;  // per link of the topology: bytes it carries in all
  int64_t classes = 0;             // representative sub-flows solved
};

// Whether the translations of `topology` are automorphisms that preserve routes, bandwidths and
// latencies (see above). Cheap: one pass over the links.
bool TranslationSymmetric(const topo::Topology& topology);
// The orbit of each link (by id; orbits numbered 0..K-1) under those translations, for
// FlowOptions::link_orbits; std::nullopt if TranslationSymmetric(topology) is false.
std::optional<std::vector<int32_t>> TranslationLinkOrbits(const topo::Topology& topology);

// Times the traffic made of every translate of `reps` (each started at its start, else at `start`) on the flow
// model; std::nullopt if TranslationSymmetric(topology) is false. Throws podsim::Error on a
// representative whose source is not on chip 0 or whose end leaves the picosecond clock's range.
std::optional<SymmetricFlowResult> SolveSymmetricFlow(const topo::Topology& topology,
                                                      const std::vector<RepresentativeTransfer>& reps,
                                                      Time start);

}  // namespace podsim::sim
