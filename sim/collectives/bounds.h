#pragma once
// Lower bounds on one collective's time on a pod, computed for the actual topology and groups
// from the physics alone, independently of the network models (docs/collectives.md, "Lower
// bounds"). Each is a time the collective cannot beat; the fixed per-collective overhead is not
// included. A bound that does not apply is absent (null in JSON), never 0.
//
//   injection     the bytes some chip must send (or receive) over ICI, over the bandwidth of
//                 its own ICI links out of (into) it. Minimum bytes per chip holding k members
//                 of a group of g spread over c chips, payload B per member:
//                   all-gather       in (g-k) B             out k B
//                   reduce-scatter   in k B/g               out (g-k) B/g
//                   all-reduce       in and out 2(c-1)/c B  (chips as the nodes; reductions
//                                                          happen in chips, not in the network)
//                   all-to-all       in and out k (g-k) B/g
//                   permute          B per pair whose source and target chips differ
//   bisection     grids only: for each dimension, the cut through its middle (coordinates
//                 < D/2 against the rest); the bytes that must cross it in one direction over
//                 the bandwidth of the links crossing it that way. With m and m' members on
//                 the two sides: all-gather m' B into the first side, reduce-scatter m B/g,
//                 all-reduce B (when both sides hold members), all-to-all m m' B/g, permute B
//                 per crossing pair. The largest over cuts and directions.
//   busiest_link  the chosen schedule: the bytes its routes put on each link over that link's
//                 bandwidth, the largest. A bound of this schedule, not of every algorithm.
//   latency       the route latency between the two members farthest apart (every member's
//                 output depends on every member's input; a permute: its farthest pair), over
//                 the routes podsim takes. Sources sampled on large groups (a smaller maximum
//                 is still a bound).

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/collectives/schedule.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct CollectiveBounds {
  std::optional<double> injection_us;
  std::optional<double> bisection_us;
  std::optional<double> busiest_link_us;
  std::optional<double> latency_us;

  // The largest bound that applies (0 if none does).
  double max_us() const;
  // {"injection_us", "bisection_us", "busiest_link_us", "latency_us"}, null where absent.
  nlohmann::json ToJson() const;
};

// The bytes `schedule`'s network transfers put on each link of `topology` (by link id) over the
// routes the network models take (Topology::RouteSplit; a split route's bytes by path fraction),
// without running it: the busiest-link bound of a schedule before (or instead of) its timing.
std::vector<double> ScheduleLinkBytes(const Schedule& schedule, const topo::Topology& topology);

// The busiest-link bound in microseconds: the largest bytes[l] / bandwidth of link l; absent when
// no link carries bytes or `bytes` is not one entry per link.
std::optional<double> BusiestLinkBound(const topo::Topology& topology,
                                       const std::vector<double>& bytes);

// `schedule_link_bytes`: bytes the chosen schedule puts on each link, by link id
// (TimingResult::link_bytes); empty: no busiest-link bound.
CollectiveBounds ComputeBounds(const CollectiveSpec& spec, const topo::Topology& topology,
                               const std::vector<double>& schedule_link_bytes);

}  // namespace podsim::sim
