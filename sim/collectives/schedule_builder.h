#pragma once
// Helpers the algorithms share to emit a Schedule: element ranges, and a builder that appends
// transfers and (optionally) derives their dependencies from the buffer ranges they touch.
//
// Dependency tracking: per (partition, buffer) the builder keeps, for each element range, the
// last plain writer, the reductions since, and the readers since. A transfer depends on
//  - reading a range: its last writer and the reductions since (read after write);
//  - writing a range: the last writer, the reductions and the readers (no overwrite early);
//  - reducing into a range: the last writer and the readers, not other reductions (they commute).
// So a schedule built in program order is race-free by construction, and deps are as fine as the
// ranges: a ring's sub-chunk waits only for the sub-chunk it forwards, not for a whole step.
// Algorithms with many-to-many deps (direct) pass explicit deps instead (track = false).

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "sim/collectives/schedule.h"

namespace podsim::sim {

// A contiguous range of elements of one buffer.
struct Range {
  int64_t offset = 0;
  int64_t elements = 0;
};
using Ranges = std::vector<Range>;

// Appends [offset, offset + elements) to `ranges`, merging it with the last range when adjacent;
// empty ranges are dropped.
void AppendRange(Ranges& ranges, int64_t offset, int64_t elements);
int64_t TotalElements(const Ranges& ranges);
// Splits `ranges` into k consecutive parts whose element counts follow BlockOf(total, k, i).
std::vector<Ranges> SplitRanges(const Ranges& ranges, int64_t k);

class ScheduleBuilder {
 public:
  // `schedule` must already have num_partitions set. track: derive deps from buffer accesses.
  ScheduleBuilder(Schedule& schedule, bool track);
  ~ScheduleBuilder();
  ScheduleBuilder(const ScheduleBuilder&) = delete;
  ScheduleBuilder& operator=(const ScheduleBuilder&) = delete;

  // Appends a transfer moving `pieces` (merged where both ends are contiguous; empty ones
  // dropped). Returns its index, or -1 if it moves nothing (then nothing is added).
  int64_t Add(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
              const std::vector<Segment>& pieces, bool reduce, int step,
              const std::vector<int64_t>& extra_deps = {});
  // One piece (the common case: no gather list to build).
  int64_t AddPiece(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                   const Segment& piece, bool reduce, int step,
                   const std::vector<int64_t>& extra_deps = {});
  // The same, with identical offsets at both ends.
  int64_t AddRanges(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                    const Ranges& ranges, bool reduce, int step,
                    const std::vector<int64_t>& extra_deps = {});
  // A local transfer of nothing on `partition` that completes once `deps` have: a join. Returns
  // its index (-1 if deps is empty: nothing to wait for).
  int64_t AddJoin(int64_t partition, const std::vector<int64_t>& deps, int step);

  // Queues network transfer t behind `previous` (an earlier network transfer between the same
  // two partitions, or -1: nothing): t starts only once `previous` has been sent (schedule.h).
  void QueueAfter(int64_t t, int64_t previous);

  // Sets schedule.num_steps from the network transfers' steps.
  void Finish();

 private:
  enum class Access : uint8_t { kRead, kWrite, kReduce };
  struct Tracker;  // per (partition, buffer): element ranges and their accesses (.cc)

  // Sorts and dedups deps_ and stores them as t's deps (t: the last transfer).
  void SetDeps(ChunkTransfer& t);
  int64_t AddMerged(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                    const Segment* pieces, size_t count, bool reduce, int step,
                    const std::vector<int64_t>& extra_deps);
  // Adds to deps_ what an access of [offset, offset + elements) by transfer t must wait for,
  // then records the access.
  void Touch(int64_t partition, Buffer buffer, int64_t offset, int64_t elements, Access access,
             int64_t t);

  Schedule& schedule_;
  bool track_;
  std::unique_ptr<Tracker> tracker_;  // null when not tracking
  std::vector<int64_t> deps_;       // the deps of the transfer being added
  static constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
};

}  // namespace podsim::sim
