#pragma once
// Max-min fair rates of weighted flow classes over shared links, by progressive filling (the
// idea of SimGrid's LMM solver): raise every flow's rate together; when a link runs out of
// capacity, the flows crossing it freeze at the current level; repeat with the rest.
//
// Two ways to find the next links to saturate, chosen as the filling goes:
//  - rounds: compute every link's fair share (capacity left / flows not yet frozen), saturate all
//    links at the minimum at once, and sweep the unfrozen classes in memory order. Few distinct
//    levels (symmetric traffic such as an AllToAll on a torus) take a few cheap sequential sweeps.
//  - heap: once a round freezes less than a quarter of the classes left, the rest is filled one
//    link at a time from a lazy min-heap of shares (shares only grow as flows freeze, so a stale
//    key is pushed again with its current value) over a link -> class index (CSR).
// Both give the same rates: shares within a relative 1e-12 of the current level count as that
// level, so flows that are equal in exact arithmetic get bitwise-equal rates.
//
// Internal to the flow network (sim/network/flow_network.cc); separate so that it can be tested alone.

#include <cstdint>
#include <vector>

#include "base/pod_vector.h"

namespace podsim::sim::internal {

// The paths of weighted flow classes: class c's record starts at data[begin[c]]:
// data[begin[c]] = weight (flows in the class, >= 1), data[begin[c] + 1] = n (links, >= 1),
// then the n link ids.
struct ClassPaths {
  const int32_t* data = nullptr;
  const int64_t* begin = nullptr;
};

class MaxMinFiller {
 public:
  // Work counters, summed over calls.
  struct Stats {
    int64_t fills = 0;
    int64_t rounds = 0;      // sweeps of the round method
    int64_t heap_fills = 0;  // fills that finished with the heap method
  };

  explicit MaxMinFiller(int32_t num_links);

  // Gives every class in `classes` (ascending ids) its max-min fair per-flow rate, in B/s, on the
  // capacity the other flows leave: capacity[l] - used[l] on link l. Writes rate[c], adds
  // weight * rate[c] to used[l] on each of its links, and appends the classes to `order` in the
  // order they froze (rates nondecreasing, all >= base_level).
  void Fill(const PodVector<int32_t>& classes, ClassPaths paths, const std::vector<double>& capacity,
            std::vector<double>& used, double base_level, double* rate, PodVector<int32_t>& order);

  const Stats& stats() const { return stats_; }

 private:
  void Freeze(int32_t c, ClassPaths paths, double level, std::vector<double>& used, double* rate,
              PodVector<int32_t>& order);
  // Finishes the filling of unfrozen_ one link at a time; returns the final level.
  void HeapFill(ClassPaths paths, std::vector<double>& used, double level, double* rate,
                PodVector<int32_t>& order);

  Stats stats_;
  uint32_t epoch_ = 0;                // stamps link_epoch_ and class_epoch_ per Fill
  uint32_t round_ = 0;                // stamps saturated_ per round
  std::vector<uint32_t> link_epoch_;  // per link: == epoch_ if a class of this fill crosses it
  std::vector<uint32_t> saturated_;   // per link: == round_ if saturated in this round
  std::vector<int32_t> touched_;      // links crossed by the classes of this fill
  std::vector<int64_t> weight_;       // per link: flows not yet frozen
  std::vector<double> cap_;           // per link: capacity not yet given out, B/s
  PodVector<int32_t> unfrozen_;     // classes not yet frozen, ascending
  PodVector<int32_t> next_;
  // Heap method.
  PodVector<uint32_t> class_epoch_;  // per class id: == epoch_ once frozen by the heap method
  std::vector<int64_t> csr_begin_;     // per link
  std::vector<int64_t> csr_end_;       // per link
  PodVector<int32_t> csr_;           // link -> unfrozen classes crossing it
  struct ShareEntry {
    double share;
    int32_t link;
    bool operator>(const ShareEntry& o) const { return share != o.share ? share > o.share : link > o.link; }
  };
  std::vector<ShareEntry> heap_;
};

}  // namespace podsim::sim::internal
