#pragma once
// The flow network's state (sim/network/flow_network.h), shared by its two source files:
// flow_network.cc (starts, ends, refills) and flow_components.cc (the link -> class index and the
// connected components a refill is restricted to). Internal to the flow network.

#include <cstdint>
#include <vector>

#include "base/pod_vector.h"
#include "sim/network/flow_end_queue.h"
#include "sim/network/flow_network.h"
#include "sim/network/maxmin.h"
#include "sim/network/network_util.h"

namespace podsim::sim {

class FlowNetwork::Impl {
 public:
  Impl(const topo::Topology& topology, FlowOptions options);

  void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now);
  Time NextEventTime();
  std::vector<TransferId> Advance(Time t);
  std::vector<TransferId> TakeSent();
  const std::vector<double>& LinkBytes();
  std::vector<double> LinkRates();
  Stats stats() const {
    Stats s = stats_;
    s.filling_rounds = filler_.stats().rounds;
    s.heap_fillings = filler_.stats().heap_fills;
    return s;
  }

 private:
  // The flows of one start batch with one path and one byte count: they move at one per-flow
  // rate. The path and the weight (flow count) live in data_ from begin_[c] (see ClassPaths);
  // the rate in rate_[c]; the rest here.
  struct FlowClass {
    int64_t bytes = 0;          // per flow, > 0
    int64_t latency_ps = 0;     // sum of the path's hop latencies
    int64_t updated_ps = 0;     // time `remaining` refers to
    int64_t end_ps = 0;         // time the data ends at the current rate
    double remaining = 0;       // bytes per flow still to send at updated_ps
    int32_t first_member = -1;  // head of the class's member list (member_next_), -1: none
    bool active = false;        // moving data (false: in the pending batch, or finished)
  };
  // A transfer split over several paths: done when all its sub-flows are.
  struct MultiSlot {
    TransferId id = 0;
    int32_t pending = 0;  // sub-flows not yet done
    int32_t unsent = 0;   // sub-flows whose data has not all left the source
    int64_t done_ps = 0;  // latest sub-flow completion so far
  };
  // Cache entry: a recent class of the batch and the top bits of its hash.
  struct Recent {
    uint32_t tag = 0;
    int32_t cls = -1;
  };

  int32_t Weight(int32_t c) const { return data_[static_cast<size_t>(begin_[static_cast<size_t>(c)])]; }
  int32_t NumLinks(int32_t c) const { return data_[static_cast<size_t>(begin_[static_cast<size_t>(c)]) + 1]; }
  const int32_t* Links(int32_t c) const { return data_.data() + begin_[static_cast<size_t>(c)] + 2; }
  internal::ClassPaths Paths() const { return {data_.data(), begin_.data()}; }

  // The class of the batch with this path and size per flow, created if not found.
  int32_t FindOrCreateClass(const std::vector<int64_t>& path, int64_t bytes, int64_t dst_core);
  void SubflowDone(TransferId id, int32_t slot, int64_t done_ps);
  void SubflowSent(TransferId id, int32_t slot);
  void CheckClockRange(int64_t t, double remaining) const;
  // Moves the pending batch into the active set and refills all rates at the batch time.
  void Flush();
  // Earliest end of an active class's data; INT64_MAX when none.
  int64_t NextDataEnd();
  // Retires every class whose data ends at t; returns the lowest rate among them (+inf if none).
  double FinishAt(int64_t t);
  // Max-min filling of fill_set_ (ascending) at time t over the capacity the other classes leave,
  // the progressive filling resumed at `base` (a level no refilled class ends below).
  // component: fill_set_ is component_, whose links' usage by the other classes is recomputed
  // from the index rather than left to accumulate rounding over millions of partial refills.
  void Refill(int64_t t, bool all, double base, bool component = false);
  // Refill of a start batch (and of the classes that ended at its time, finished_) when the
  // classes they can affect are few; false (nothing done) when they are many.
  bool RefillComponent(int64_t t);
  // The active classes connected to the links of `seeds` through shared links and classes
  // (only classes with rate >= `lowest` cross), into component_, marked in class_mark_; false
  // as soon as there are more than `limit`.
  bool CollectComponent(const PodVector<int32_t>& seeds, double lowest, size_t limit);
  // Lists class c on each of its links (link_classes_).
  void IndexClass(int32_t c);

  bool MaybeCompact();  // true if it compacted
  void Reset();

  const topo::Topology& topology_;
  const FlowOptions options_;
  const int32_t num_links_;
  std::vector<double> capacity_;  // per link, B/s
  std::vector<int64_t> latency_;  // per link, ps

  int64_t time_ps_ = 0;  // model time
  // Start()'s reusable routing buffers: the paths of the transfer being started (entries past
  // RouteSplitInto's count are stale) and their byte split.
  std::vector<topo::Topology::WeightedPath> route_paths_;
  size_t route_count_ = 0;
  int64_t route_src_core_ = -1;  // route_paths_ hold the route from this core to this chip
  int64_t route_dst_chip_ = -1;  // (-1: not reusable)
  std::vector<int64_t> split_parts_;
  Stats stats_;

  // All classes (finished ones until compaction), their paths, rates and members.
  PodVector<FlowClass> classes_;
  PodVector<int32_t> data_;   // class records: weight, hops, link ids
  PodVector<int64_t> begin_;  // per class: its record in data_
  PodVector<double> rate_;    // per class: B/s per flow
  // Members (sub-flows) of the classes: singly linked lists, one per class.
  PodVector<TransferId> member_ids_;
  PodVector<int32_t> member_slots_;  // multi-path slot, or kNoSlot
  PodVector<int32_t> member_next_;   // next member of the same class, -1 at the end
  std::vector<MultiSlot> slots_;
  std::vector<int32_t> free_slots_;
  int64_t active_classes_ = 0;

  PodVector<int32_t> frozen_order_;  // the filler's freezing order (not needed here)
  internal::EndQueue ends_;                   // data ends, with stale entries (class refilled or finished)
  PodVector<internal::EndEntry> end_scratch_;
  std::vector<double> used_;        // per link: sum of weight * rate of active classes, B/s
  std::vector<double> done_bytes_;  // per link: bytes of finished classes
  std::vector<double> link_bytes_;  // LinkBytes() result
  internal::CompletionQueue completions_;
  std::vector<TransferId> sent_;  // sent since the last TakeSent
  internal::MaxMinFiller filler_;
  PodVector<int32_t> fill_set_;
  // Connected components. Max-min fair rates decompose over the connected components of the
  // graph of classes and the links they cross: a start or an end changes rates only in its
  // component. On traffic that is many small independent groups (the rings of a torus
  // all-reduce, where each link carries one or two flows), refilling the component instead of
  // every class at or above the finishing rate is what keeps an event cheap.
  std::vector<PodVector<int32_t>> link_classes_;  // per link: classes crossing it (finished ones pruned lazily)
  PodVector<uint32_t> class_mark_;                // per class: == mark_ if in component_
  std::vector<uint32_t> link_mark_;               // per link: == mark_ if visited
  uint32_t mark_ = 0;
  bool indexed_ = false;  // link_classes_ lists every active class
  PodVector<int32_t> component_;
  PodVector<int32_t> component_links_;  // the links CollectComponent visited
  PodVector<int32_t> link_stack_;
  PodVector<int32_t> finished_;  // classes retired by the last FinishAt
  PodVector<int32_t> seeds_;     // scratch: classes whose links start a component search

  // Pending start batch.
  bool batch_open_ = false;
  int64_t batch_ps_ = 0;
  size_t batch_first_class_ = 0;
  // Direct-mapped cache of the batch's recent classes by path-and-size hash. A miss creates a
  // new class even if an equal one exists further back: still exact, just less merged.
  std::vector<Recent> recent_;
  int32_t last_class_ = -1;                 // class of the previous sub-flow
  std::vector<int32_t> last_class_for_dst_;  // per core: class of the last sub-flow to it
};

}  // namespace podsim::sim
