#pragma once
// The timing run of a direct AllToAll over every core of a translation-symmetric pod on the flow
// model, without building its schedule: the traffic (each core sends one equal block to every
// other core at once) is invariant under the pod's translations, so the flow model's answer is
// SolveSymmetricFlow's (sim/network/symmetric_flow.h) on the transfers of chip 0's cores. Same
// TimingResult as RunTiming on the schedule BuildSchedule makes (within the rounding of sums
// taken in another order; the busiest link is the lowest id of the busiest orbit), in a
// thousandth of the time and memory on a full pod: G(G-1) transfers become cores_per_chip x
// (G-1).

#include <optional>
#include <string>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/collectives/timing.h"
#include "sim/network/symmetric_flow.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct SymmetricTiming {
  TimingResult timing;
  // When each core's part ends (its last transfer in or out, or its local copy), by its index on
  // its chip: the same on every chip.
  std::vector<Time> done_by_local_core;
};

// The representative transfers (chip 0's cores') of `spec` as a direct all-to-all of equal blocks
// over every core of a translation-symmetric pod, or std::nullopt when it is not one (the
// conditions below, but for the network model and options).
std::optional<std::vector<RepresentativeTransfer>> SymmetricAllToAllTransfers(
    const CollectiveSpec& spec, const topo::Topology& topology, const std::string& algorithm);

// When each core of a chip finishes its part of a symmetric all-to-all started at `start`: the
// later of its own block's local copy (block_bytes at local_copy_bandwidth; free at 0) and the
// last of reps[first, last) it sends or receives (the same on every chip), reps[k] completing at
// done[k].
std::vector<Time> DoneByLocalCore(const std::vector<RepresentativeTransfer>& reps,
                                  const std::vector<Time>& done, size_t first, size_t last,
                                  int64_t cores_per_chip, Time start, int64_t block_bytes,
                                  double local_copy_bandwidth);

// The timing of `spec` with `algorithm` ("" or "default": DefaultAlgorithm) on the model named
// `network`, or std::nullopt when the shortcut does not apply: the model is not "flow", the
// collective is not a direct all-to-all of equal blocks (elements a multiple of the group size)
// in one group of every core, the topology is not TranslationSymmetric, or options ask for
// per-transfer times.
std::optional<SymmetricTiming> TimeSymmetricAllToAll(const CollectiveSpec& spec,
                                                     const topo::Topology& topology,
                                                     const std::string& algorithm,
                                                     const std::string& network,
                                                     const TimingOptions& options);

// The timing of the torus algorithm (`algorithm` "torus"; callers resolve the default) cut into
// `chunks` sub-chunks, for an all-reduce, all-gather or reduce-scatter over every core of a
// translation-symmetric pod in core order, on the model named `network`, from chip 0's transfers
// (symmetric_torus.cc says why that is exact); std::nullopt when the shortcut does not apply:
// another model or algorithm, other groups, a payload whose slots differ in size (all-reduce and
// reduce-scatter: elements not a multiple of the cores), options that ask for per-transfer times.
// Same TimingResult as RunTiming on BuildSchedule's schedule, within the rounding of sums taken in
// another order (but for per-transfer times, which it never records), and when each core's part
// ends (its last transfer in or out, local ones included): the same on every chip. A 16,384-core
// all-reduce (9.4 million transfers) runs as 2,304.
std::optional<SymmetricTiming> TimeSymmetricTorus(const CollectiveSpec& spec,
                                                  const topo::Topology& topology,
                                                  const std::string& algorithm, int chunks,
                                                  const std::string& network,
                                                  const TimingOptions& options);

}  // namespace podsim::sim
