#pragma once
// A collective algorithm's output: a DAG of point-to-point chunk transfers (and local copies /
// reductions) between partitions. The timing run executes it on a network model; the functional
// run executes it on real float buffers. Both read the same Schedule.
//
// Buffers: every partition has an input, an output and (if the algorithm needs one) a scratch
// buffer of Schedule::{input,output,scratch}_elements. Outputs start as zeros, scratch as NaN
// (so reading scratch that nothing wrote poisons the result).
//
// A transfer moves one contiguous piece (src_offset, dst_offset, elements) or, when
// num_segments > 0, a gather/scatter list of pieces Schedule::segments[first_segment ..
// first_segment + num_segments) sent as ONE network message of `elements` (their sum) elements.
// A transfer with src == dst is a local copy or reduction: no network. A local transfer with
// elements == 0 is a join (a synchronisation point that moves nothing).
//
// Dependencies: a transfer starts once every transfer in its deps (Deps(schedule, t), stored
// CSR-style in Schedule::dep_index) has completed; deps refer to earlier indices only, so the
// vector order is a topological order. Transfers not ordered by deps never conflict (no
// overlapping writes, except two reductions, which commute; no read of a range another writes),
// so any topological order gives the same result (tests check this).
//
// Send queues (timing only): a transfer may also wait for an earlier network transfer between
// the same two partitions to have been *sent* (its last byte has left the source; delivery
// follows after the path's flight time), as the messages of one DMA queue go out one after
// another. Schedule::queued_after holds them; the functional run ignores them.

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/huge_pages.h"

namespace podsim::sim {

enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute
};

// Which per-partition buffer a chunk lives in.
enum class Buffer : uint8_t { kInput, kOutput, kScratch };

inline const char* BufferName(Buffer b) {
  switch (b) {
    case Buffer::kInput: return "input";
    case Buffer::kOutput: return "output";
    case Buffer::kScratch: return "scratch";
  }
  return "?";
}

// One contiguous piece of a multi-piece transfer, in elements.
struct Segment {
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  int64_t elements = 0;
};

// Fields ordered for packing: a schedule can hold millions of these (56 B each). Partitions,
// steps, transfer indices and indices into Schedule::{segments, dep_index} are int32: a schedule
// has fewer than 2^31 partitions, transfers, segments and dependency entries (ScheduleBuilder
// throws otherwise). Offsets and element counts are int64.
struct ChunkTransfer {
  int64_t src_offset = 0;  // in elements (first piece when segmented)
  int64_t dst_offset = 0;  // in elements (first piece when segmented)
  int64_t elements = 0;    // elements moved (sum over segments); bytes = elements * element_bytes
  int32_t src = 0;         // partition that sends (src == dst: a local copy / reduction)
  int32_t dst = 0;         // partition that receives
  int32_t first_segment = 0;  // index into Schedule::segments when num_segments > 0
  int32_t num_segments = 0;   // 0: one contiguous piece (src_offset, dst_offset, elements)
  // Indices of the transfers that must complete before this one starts:
  // Schedule::dep_index[first_dep, first_dep + num_deps) (see Deps()).
  int32_t first_dep = 0;
  int32_t num_deps = 0;
  int32_t step = 0;  // algorithm step, for --explain and traces (0-based)
  Buffer src_buffer = Buffer::kInput;
  Buffer dst_buffer = Buffer::kOutput;
  bool reduce = false;  // dst[...] += src[...] instead of dst[...] = src[...]

  bool local() const { return src == dst; }
};
static_assert(sizeof(ChunkTransfer) == 56, "ChunkTransfer: keep it packed");

// The arrays a schedule of millions of transfers fills (hundreds of MB): huge-page backed, as
// their page faults were a quarter of building one (base/huge_pages.h).
template <typename T>
using ScheduleArray = std::vector<T, HugePageAllocator<T>>;

struct Schedule {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string algorithm;       // e.g. "ring-bidir", "torus", "direct"
  int64_t num_partitions = 0;  // buffers exist for partitions 0 .. num_partitions-1
  int64_t element_bytes = 4;
  std::vector<int64_t> input_elements;    // per partition
  std::vector<int64_t> output_elements;   // per partition (0 for partitions in no group)
  std::vector<int64_t> scratch_elements;  // per partition; empty: no scratch buffers
  ScheduleArray<ChunkTransfer> transfers;  // in a valid topological order of deps
  ScheduleArray<Segment> segments;         // pieces of the segmented transfers
  ScheduleArray<int32_t> dep_index;        // the transfers' deps, concatenated (see Deps())
  // Per transfer, the earlier one of its send queue it goes out after (-1: none); empty when no
  // transfer is queued. Each transfer is queued after at most one and before at most one.
  ScheduleArray<int32_t> queued_after;
  int num_steps = 0;                      // 1 + the largest step of a network transfer (0: none)
  // The replica groups it runs over (resolved: never empty for group collectives; empty for
  // collective-permute), and the permute pairs.
  std::vector<std::vector<int64_t>> replica_groups;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  int chunks = 1;  // pipelining depth it was built with
  // Human-readable: the algorithm, the ring orders / axes it uses, per-step meaning.
  std::string description;

  int64_t Bytes(const ChunkTransfer& t) const { return t.elements * element_bytes; }
};

// The deps of t (a transfer of `schedule`): indices of earlier transfers, ascending.
inline std::span<const int32_t> Deps(const Schedule& schedule, const ChunkTransfer& t) {
  return {schedule.dep_index.data() + t.first_dep, static_cast<size_t>(t.num_deps)};
}
inline std::span<const int32_t> Deps(const Schedule& schedule, size_t i) {
  return Deps(schedule, schedule.transfers[i]);
}

// Calls f(src_offset, dst_offset, elements) for each contiguous piece of t.
template <typename F>
void ForEachPiece(const Schedule& schedule, const ChunkTransfer& t, F&& f) {
  if (t.num_segments == 0) {
    f(t.src_offset, t.dst_offset, t.elements);
    return;
  }
  const int64_t first = t.first_segment;
  for (int64_t i = first; i < first + t.num_segments; ++i) {
    const Segment& s = schedule.segments[static_cast<size_t>(i)];
    f(s.src_offset, s.dst_offset, s.elements);
  }
}

}  // namespace podsim::sim
