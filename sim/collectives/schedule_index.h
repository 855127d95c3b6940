#pragma once
// A schedule's dependency graph indexed for execution (the one index; sim/collectives/
// schedule_executor.h runs it): each transfer's successors in CSR form, the roots, and how many
// transfers touch each partition.

#include <cstdint>
#include <vector>

#include "sim/collectives/schedule.h"

namespace podsim::sim {

struct ScheduleIndex {
  // What a completion needs of its transfer, packed in 16 B: completions arrive in an order
  // unrelated to the schedule's, and one cache line per completion instead of three (the 56 B
  // transfer, the successor offsets) is most of the executor's own time on 4 million.
  struct Node {
    int64_t first_successor = 0;  // successors[first_successor, + num_successors)
    int32_t num_successors = 0;
    int32_t step = -1;  // its step; -1 for a local transfer
  };
  ScheduleArray<Node> nodes;          // per transfer
  ScheduleArray<int32_t> successors;  // transfer indices (they fit int32, see schedule.h)
  ScheduleArray<int32_t> deps;        // per transfer: how many deps it waits for (its send-queue
                                      // predecessor's send included)
  // Per transfer, the one queued after it (Schedule::queued_after inverted; -1: none); empty
  // when the schedule has no send queues.
  ScheduleArray<int32_t> queue_next;
  std::vector<int32_t> roots;       // transfers without deps, ascending
  std::vector<int32_t> touches;     // per partition: transfers with src or dst there
};

ScheduleIndex IndexSchedule(const Schedule& schedule);

}  // namespace podsim::sim
