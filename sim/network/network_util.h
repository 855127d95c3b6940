#pragma once
// Pieces shared by the network models: argument checks, the integer split of a transfer over its
// weighted paths, and the queue of transfers waiting for their completion time.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/units.h"
#include "sim/network/network_model.h"
#include "topologies/topology.h"

namespace podsim::sim::internal {

// Throws podsim::Error naming `model` unless src/dst are cores of `topology`, bytes >= 0 and
// model_time <= now <= next_event (the caller must Advance through earlier events first).
void CheckStart(const char* model, const topo::Topology& topology, int64_t src_core,
                int64_t dst_core, Bytes bytes, Time now, Time model_time, Time next_event);

// Throws podsim::Error naming `model` unless model_time <= t <= next_event.
void CheckAdvance(const char* model, Time t, Time model_time, Time next_event);

// Bytes of each path: path i carries round(bytes * (f_0 + ... + f_i)) - round(bytes * (f_0 +
// ... + f_{i-1})), the last path the rest, so the parts are integers that sum to `bytes`.
std::vector<int64_t> SplitBytes(int64_t bytes, const std::vector<topo::Topology::WeightedPath>& paths);
// The same for paths[0 .. n), into `parts` (resized to n; reused storage).
void SplitBytesInto(int64_t bytes, const topo::Topology::WeightedPath* paths, size_t n,
                    std::vector<int64_t>& parts);

// Sum of the per-hop latencies of `links`, in picoseconds.
int64_t PathLatencyPs(const topo::Topology& topology, const std::vector<int64_t>& links);

// Transfers whose completion time is known, grouped by that time.
class CompletionQueue {
 public:
  void Add(Time t, TransferId id) { by_time_[t.picos()].push_back(id); }
  // The transfers completing at t, to append to (one lookup for many Adds: the flow model's
  // classes end many transfers at one time).
  std::vector<TransferId>& At(Time t) { return by_time_[t.picos()]; }
  // Earliest pending completion time; Time::Max() when empty.
  Time NextTime() const { return by_time_.empty() ? Time::Max() : Time::Picos(by_time_.begin()->first); }
  // Removes and returns the transfers completing at exactly t, ascending (empty if none).
  std::vector<TransferId> PopAt(Time t);
  bool empty() const { return by_time_.empty(); }

 private:
  std::map<int64_t, std::vector<TransferId>> by_time_;  // completion time (ps) -> ids
};

// Sorts transfer ids ascending (a radix sort for large lists).
void SortTransferIds(std::vector<TransferId>& ids);

}  // namespace podsim::sim::internal
