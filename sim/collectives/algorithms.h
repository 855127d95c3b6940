#pragma once
// Collective algorithms: turn a CollectiveSpec on a topology into a Schedule.
//
// Algorithms (by name):
//   "ring"        unidirectional ring (all-reduce, all-gather, reduce-scatter); ring order from
//                 ChooseRingOrder (group_geometry.h): a Hamiltonian cycle on box groups.
//   "ring-bidir"  bidirectional ring: each piece halved, one half each way round.
//   "torus"       dimension-wise: reduce-scatter along each axis of a box group in turn, then
//                 all-gather back in reverse order, a ring per line; the data is cut into one
//                 part per chip axis, each with the axes rotated, so that every axis's links are
//                 busy at once, and each part halved between the two ring directions
//                 (all-reduce, all-gather, reduce-scatter; box groups on grid topologies).
//   "direct"      every pair at once, one message per pair (every collective; the only one for
//                 collective-permute).
//   "dim-staged"  all-to-all in one stage per axis, aggregated messages between neighbours of
//                 one axis (box groups on grid topologies).
//   "halving-doubling"  recursive halving (reduce-scatter) and doubling (all-gather) between
//                 partners one bit apart in group index, log2(g) steps each (all-reduce,
//                 all-gather, reduce-scatter; groups of a power-of-two size, any topology).
// Default (DefaultAlgorithm): all-to-all and collective-permute: "direct" (GShard's all-to-all:
// every pair at once, routed dimension by dimension). All-reduce, all-gather, reduce-scatter:
// of "torus" (on a grid topology when every group is a box spanning >= 2 axes, the core axis
// counting), "ring-bidir", "ring", for groups of a power-of-two size "halving-doubling", and
// when the groups hold at most 256 members in all "direct" (it wins small payloads: two
// steps), the one that finishes first: timed on the flow network when the groups hold at most
// 256 members in all, else by the alpha-beta closed form (closed_form.h).
// tests/experiments/default_algorithm_test.cc checks it against `best` on the presets. Each replica
// group runs the algorithm independently and concurrently, in one schedule.

#include <string>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/collectives/schedule.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct AlgorithmOptions {
  // "" or "default": DefaultAlgorithm(); otherwise one of AlgorithmNames(kind).
  std::string algorithm;
  // Pipelining depth (>= 1): ring and torus pieces are cut into this many sub-chunks, each
  // forwarded as soon as it has arrived (a sub-chunk waits only for the same sub-chunk of the
  // previous step). Direct and dim-staged messages are not cut.
  int chunks = 1;
};

// Algorithm names that apply to `kind` (default first is not implied; see DefaultAlgorithm).
std::vector<std::string> AlgorithmNames(CollectiveKind kind);

// The default algorithm for the spec on the topology (see the file comment). Validates the spec.
std::string DefaultAlgorithm(const CollectiveSpec& spec, const topo::Topology& topology);

// Builds the schedule. Partitions are the topology's cores. Throws podsim::Error naming the field
// for a bad spec (replica_groups[..], source_target_pairs[..], elements...), an unknown
// algorithm or one that does not apply ("algorithm: ...", "replica_groups[1]: algorithm 'torus'
// needs every group to be a box..."), or chunks < 1 ("chunks: ...").
Schedule BuildSchedule(const CollectiveSpec& spec, const topo::Topology& topology,
                       const AlgorithmOptions& options = {});

// BuildSchedule's transfers without their dependencies: what each sends where, for link loads
// (ScheduleLinkBytes), not a schedule to run. Cheaper where the builder derives dependencies
// from the buffer ranges each transfer touches (torus, halving-doubling, tree).
Schedule BuildTransfers(const CollectiveSpec& spec, const topo::Topology& topology,
                        const AlgorithmOptions& options);

}  // namespace podsim::sim
