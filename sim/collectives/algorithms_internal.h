#pragma once
// Shared between the algorithm files (ring_algorithms.cc, torus_algorithms.cc,
// direct_algorithms.cc, alltoall_staged.cc) and the registry (algorithms.cc). Not a public API.

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/closed_form.h"
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
  // false: the transfers only, without the dependencies builders derive from buffer ranges
  // (ScheduleBuilder's tracking), for link loads (BuildTransfers).
  bool derive_dependencies = true;
  // Non-null (torus only): build only the lines whose ring has a member on a chip c with
  // (*near_chips)[c] != 0, for the symmetric timing (symmetric_timing.h), which needs the
  // transfers of chip 0 and of its neighbours, not the pod's.
  const std::vector<char>* near_chips = nullptr;
};

// The send queues of a ring algorithm. A ring algorithm runs as channels (one per ring direction,
// and per rotation of the torus algorithm), each a DMA queue that sends its messages from one
// member to the next in the order the algorithm issues them: a message waits for the previous
// one of its channel between the same two members to have been sent. Without the queue, a member
// whose inputs arrive early starts several steps' messages at once, they share the link with the
// step everyone waits for, and a ring gets slower when some of its links get faster.
class SendQueues {
 public:
  // The last message of `channel` from `src` to `dst` (-1: none yet), to wait for and update.
  int64_t& Tail(int channel, int64_t src, int64_t dst);

 private:
  struct Key {
    int64_t channel, src, dst;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const noexcept {
      uint64_t h = static_cast<uint64_t>(k.src) * 0x9E3779B97F4A7C15ull;
      h ^= static_cast<uint64_t>(k.dst) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
      h ^= static_cast<uint64_t>(k.channel) * 0xC2B2AE3D27D4EB4Full;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  std::unordered_map<Key, int64_t, Hash> tail_;
};

// One ring phase over `ring` (partition ids in ring order; position q sends to q + 1): pieces[q]
// are the element ranges (the same in every member's `buffer`) that position q ends up owning
// (reduce-scatter: the sum over the ring) or starts with (all-gather). Takes ring.size() - 1
// steps labelled step0, step0 + 1, ...; each piece is cut into `chunks` sub-chunks that travel
// independently. bidirectional: each piece is halved, the first half goes round in ring order
// on `channel`, the second half the other way on channel + 1 (of `queues`).
void RingReduceScatter(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                       const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
                       bool bidirectional, SendQueues& queues, int channel);
void RingAllGather(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                   const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
                   bool bidirectional, SendQueues& queues, int channel);

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

// The torus schedule restricted to the lines through the chips marked in `near_chips` (see
// BuildContext::near_chips); the dependencies of a transfer are complete when its source and
// destination are both marked.
Schedule BuildTorusNear(const CollectiveSpec& spec, const topo::Topology& topology,
                        const AlgorithmOptions& options, const std::vector<char>& near_chips);

// The torus algorithm's rotations over a box group (torus_algorithms.cc): each rotation's phase
// order (indices into box.axes) and the box it runs on: the group's own, or its TwistedView
// along the rotation's first chip axis when that axis is a twisted dimension (a ring there, not
// a line). Holds pointers to the box it was planned for.
struct TorusRotations {
  const BoxGroup* box = nullptr;  // the group's
  std::vector<std::vector<size_t>> orders;
  std::deque<BoxGroup> twisted_views;
  std::vector<const BoxGroup*> boxes;  // per rotation: `box` or a twisted view

  bool twisted() const { return !twisted_views.empty(); }
  bool Twisted(size_t rotation) const { return boxes[rotation] != box; }
  // Each rotation's closed-form axes (closed_form.h), in its phase order.
  std::vector<std::vector<AnalyticAxis>> Axes(const topo::Topology& topology) const;
};
TorusRotations PlanTorusRotations(const topo::Topology& topology, const BoxGroup& box,
                                  CollectiveKind kind);

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
