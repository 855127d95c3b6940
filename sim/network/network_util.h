#pragma once
// Pieces shared by the network models: argument checks, the integer split of a transfer over its
// weighted paths, and the queue of transfers waiting for their completion time.

#include <cstdint>
#include <string>
#include <vector>

#include "base/radix_queue.h"
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
  // t must not be before the last time popped (completions are never in the past); throws
  // std::logic_error otherwise, a model's bug.
  void Add(Time t, TransferId id) { by_time_.Push(t.picos(), id); }
  // Earliest pending completion time; Time::Max() when empty.
  Time NextTime() const { return by_time_.empty() ? Time::Max() : Time::Picos(by_time_.TopKey()); }
  // Removes and returns the transfers completing at exactly t, ascending (empty if none).
  std::vector<TransferId> PopAt(Time t);
  bool empty() const { return by_time_.empty(); }

 private:
  // By completion time (ps). A radix queue: millions of distinct times (an analytic all-to-all
  // gives every transfer its own) cost no node allocation each.
  // Mutable: finding the next time may move entries between its buckets.
  mutable RadixQueue<TransferId> by_time_;
};

}  // namespace podsim::sim::internal
