#pragma once
// Flow network: every transfer is a flow over its route (a transfer split over several paths by
// tie-split routing is one sub-flow per path, with its share of the bytes). Links divide their
// bandwidth among the flows crossing them by exact max-min fair share (progressive filling, the
// idea of SimGrid's CM02/LMM model); rates are recomputed whenever flows start or finish.
//
// Latency: a flow competes for bandwidth from the moment it starts; its transfer completes when
// the last byte has been sent (rate phase) plus the sum of the hop latencies of its path (the
// last byte's flight time). Uncontended, that is exactly latency + bytes / bottleneck bandwidth,
// the analytic model. A split transfer completes when its slowest sub-flow does.
//
// Speed (see tests/bench/network_bench.cc):
//  - starts at one time are batched and rates are computed once per batch (not per Start call);
//  - routes go into buffers reused across starts (Topology::RouteSplitInto), and consecutive
//    starts from one core to the cores of one chip reuse the route;
//  - flows of one batch with the same path and byte count form one weighted class: under max-min
//    fairness they always get equal rates and finish together, so this is exact (cores of one
//    chip sending to cores of another chip share a path). Matches are looked for among recent
//    classes only (the previous start's, the last one to the same destination, a 16k-entry
//    cache), so merging may be incomplete for unusual start orders, never wrong;
//  - when classes finish, only the classes whose rate was >= the lowest finishing rate are
//    refilled: progressive filling shows that removing a flow frozen at level s leaves every rate
//    below s unchanged;
//  - max-min rates decompose over the connected components of the graph of classes and the
//    links they cross, so a start refills only the component of the new classes, and an end only
//    the classes at or above its rate that are connected to it through such classes, when those
//    are under a quarter of the active classes (a link -> class index, built once batches are
//    small next to the traffic in flight); nothing is kept sorted by rate, so an event costs
//    the size of its refill, not of the traffic in flight. Rings of a torus all-reduce, one or two flows per link, so
//    refill a handful of classes per event instead of all of them. Classes outside the refill
//    keep their end times instead of being rounded up to a picosecond again;
//  - the filling itself (sim/network/maxmin.h) saturates all links at the minimum fair share at
//    once, so symmetric traffic takes a few sequential sweeps, and falls back to a lazy heap of
//    link shares when there are many distinct levels;
//  - flat arrays (int32 link and class ids, paths stored once per class), data ends kept in a
//    mostly unsorted run split lazily, completion ids radix-sorted.
// Random traffic, where each finish changes most rates, costs a refill of a large part of the
// active classes per event: see BM_FlowRandomWaves.
//
// LinkBytes: bytes a link has carried so far, i.e. rate x time of the flows crossing it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/network/network_model.h"

namespace podsim::sim {

struct FlowOptions {
  // Merge flows of one start batch with identical path and byte count into one weighted class.
  // Exact; off only to measure its effect.
  bool aggregate = true;
  // Non-null: the network is the quotient of a translation-symmetric pod by its translations
  // (sim/network/symmetric_flow.h): link l counts as orbit (*link_orbits)[l] (ids 0..K-1, the
  // links of an orbit of one bandwidth and latency), a started transfer stands for itself and
  // each of its translates (one per chip), a route crossing m links of an orbit loads it m
  // times, and LinkBytes gives every link its orbit's bytes. Must outlive the model.
  const std::vector<int32_t>* link_orbits = nullptr;
};

class FlowNetwork : public NetworkModel {
 public:
  // Counters of the work done, for benchmarks and tests.
  struct Stats {
    int64_t flows = 0;               // sub-flows started with bytes to move over >= 1 link
    int64_t classes = 0;             // weighted flow classes created (== flows without aggregation)
    int64_t full_fillings = 0;       // progressive fillings over all active classes (start batches)
    int64_t partial_fillings = 0;    // progressive fillings of the classes at or above a finishing rate
    int64_t classes_filled = 0;      // classes summed over all fillings
    int64_t filling_rounds = 0;      // sweeps of the round method (see sim/network/maxmin.h)
    int64_t heap_fillings = 0;       // fillings finished one link at a time
    int64_t component_fillings = 0;  // fillings of only the classes connected to the changed ones
    int64_t peak_active_classes = 0;
  };

  // `topology` must outlive the model.
  explicit FlowNetwork(const topo::Topology& topology, FlowOptions options = {});
  ~FlowNetwork() override;

  std::string name() const override { return "flow"; }
  void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) override;
  Time NextEventTime() const override;
  std::vector<TransferId> Advance(Time t) override;
  // A flow is sent when its data ends (FinishAt), before the path's latency.
  std::vector<TransferId> TakeSent() override;
  const std::vector<double>& LinkBytes() const override;

  Stats stats() const;
  // Sum of the current rates of the flows crossing each link, in B/s (after pending starts).
  std::vector<double> LinkRates() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;  // a pointer so that const queries may flush pending starts
};

}  // namespace podsim::sim
