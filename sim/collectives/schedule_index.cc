#include "sim/collectives/schedule_index.h"

#include <string>

#include "base/error.h"

namespace podsim::sim {

ScheduleIndex IndexSchedule(const Schedule& schedule) {
  const auto& transfers = schedule.transfers;
  const size_t n = transfers.size();
  ScheduleIndex index;
  index.nodes.resize(n);
  index.deps.resize(n);
  index.touches.assign(static_cast<size_t>(std::max<int64_t>(schedule.num_partitions, 0)), 0);
  const auto& queued = schedule.queued_after;
  if (!queued.empty()) {
    if (queued.size() != n)
      throw Error("schedule: queued_after does not have one entry per transfer");
    index.queue_next.assign(n, -1);
  }
  for (size_t i = 0; i < n; ++i) {
    const ChunkTransfer& t = transfers[i];
    for (int64_t p : {t.src, t.dst}) {
      if (p < 0 || p >= schedule.num_partitions) {
        throw Error("schedule: transfer " + std::to_string(i) + " names partition " +
                    std::to_string(p) + ", outside [0, " + std::to_string(schedule.num_partitions) +
                    ")");
      }
    }
    index.nodes[i].step = t.local() ? -1 : t.step;
    index.deps[i] = t.num_deps;
    if (!queued.empty() && queued[i] >= 0) {
      const size_t q = static_cast<size_t>(queued[i]);
      if (q >= i || transfers[q].local() || index.queue_next[q] >= 0) {
        throw Error("schedule: transfer " + std::to_string(i) + " is queued after " +
                    std::to_string(q) + ", not an earlier network transfer free to queue it");
      }
      index.queue_next[q] = static_cast<int32_t>(i);
      ++index.deps[i];
    }
    if (index.deps[i] == 0) index.roots.push_back(static_cast<int32_t>(i));
    for (int32_t d : Deps(schedule, i)) ++index.nodes[static_cast<size_t>(d)].num_successors;
    ++index.touches[static_cast<size_t>(t.src)];
    if (t.dst != t.src) ++index.touches[static_cast<size_t>(t.dst)];
  }
  int64_t total = 0;
  for (ScheduleIndex::Node& node : index.nodes) {
    node.first_successor = total;
    total += node.num_successors;
  }
  index.successors.resize(static_cast<size_t>(total));
  if (total > 0) {  // (a direct all-to-all has no deps: skip a pass over 4M)
    std::vector<int32_t> filled(n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (int32_t d : Deps(schedule, i)) {
        const size_t k = static_cast<size_t>(d);
        index.successors[static_cast<size_t>(index.nodes[k].first_successor + filled[k]++)] =
            static_cast<int32_t>(i);
      }
    }
  }
  return index;
}

}  // namespace podsim::sim
