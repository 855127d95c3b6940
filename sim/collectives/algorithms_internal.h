#pragma once
// Shared between the algorithm files (ring_algorithms.cc, torus_algorithms.cc,
// direct_algorithms.cc, alltoall_staged.cc) and the registry (algorithms.cc). Not a public API.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/group_geometry.h"
#include "sim/collectives/schedule.h"
#include "sim/collectives/schedule_builder.h"
#include "topologies/topology.h"

namespace podsim::sim::internal {

// Everything an algorithm builder reads. `schedule` arrives with kind, sizes and groups filled in
// (scratch empty); the builder appends transfers, sets scratch_elements and the description.
struct BuildContext {
  const CollectiveSpec& spec;
  const topo::Topology& topology;
  const AlgorithmOptions& options;
  const std::vector<std::vector<int64_t>>& groups;  // resolved
};

// One ring phase over `ring` (partition ids in ring order; position q sends to q + 1): pieces[q]
// are the element ranges (the same in every member's `buffer`) that position q ends up owning
// (reduce-scatter: the sum over the ring) or starts with (all-gather). Takes ring.size() - 1
// steps labelled step0, step0 + 1, ...; each piece is cut into `chunks` sub-chunks that travel
// independently. bidirectional: each piece is halved, the first half goes round in ring order,
// the second half the other way.
void RingReduceScatter(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                       const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
                       bool bidirectional);
void RingAllGather(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                   const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
                   bool bidirectional);

// Algorithm builders (one per file). Each throws podsim::Error naming the field when it does not
// apply.
// Called by each builder before it allocates: `transfers` and `segments` are its estimates
// (upper bounds) of what the schedule will hold. Throws podsim::Error naming the collective,
// its group size and the estimate when the schedule and the executor's state for it would not
// fit this machine's memory (base/memory.h), instead of a std::bad_alloc half-way.
void RequireScheduleMemory(const BuildContext& context, const char* algorithm, double transfers,
                           double segments = 0);

void BuildRing(const BuildContext& context, bool bidirectional, Schedule& schedule);
void BuildTorus(const BuildContext& context, Schedule& schedule);
void BuildDirect(const BuildContext& context, Schedule& schedule);
void BuildAllToAllStaged(const BuildContext& context, Schedule& schedule);
void BuildHalvingDoubling(const BuildContext& context, Schedule& schedule);
void BuildTree(const BuildContext& context, Schedule& schedule);

// "partitions 0 1 2 3 ... (16)": a short rendering of a list of ids for descriptions / errors.
std::string ShortList(const std::vector<int64_t>& ids, size_t max_shown = 16);

// The box of every group of `context` (group_geometry.h), for an algorithm that needs a torus or
// mesh and groups that are boxes of it. Throws podsim::Error naming the algorithm, the group
// and `alternatives` ("direct") otherwise; `box_example` follows "a product of coordinate
// ranges" in the message (", e.g. a row or a sub-torus", or empty).
std::vector<BoxGroup> RequireBoxGroups(const BuildContext& context, const std::string& algorithm,
                                       const std::string& box_example,
                                       const std::string& alternatives);

}  // namespace podsim::sim::internal
