#pragma once
// Internal to the flow network (flow_network.cc): the queue of flow-class end times, and the hash
// of its class cache.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/pod_vector.h"

namespace podsim::sim::internal {

// MurmurHash3's 64-bit finaliser: every input bit affects every output bit.
inline uint64_t Fmix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// When a class's data ends (ps), and the class.
struct EndEntry {
  int64_t end_ps;
  int32_t cls;
  bool operator<(const EndEntry& o) const { return end_ps != o.end_ps ? end_ps < o.end_ps : cls < o.cls; }
  bool operator>(const EndEntry& o) const { return o < *this; }
};

// Pending data ends, earliest first. After a large refill every active class has a new end;
// usually only the earliest few are consumed before the next large refill, so the bulk is kept
// unsorted and the entries with the earliest end are split off by a linear pass when needed
// (after a few such passes the rest is sorted once). Classes refilled a few at a time go to a
// min-heap. Entries go stale when their class is refilled or finishes; the owner skips those.
class EndQueue {
 public:
  bool empty() const { return pos_ == run_.size() && heap_.empty(); }
  size_t size() const { return run_.size() - pos_ + heap_.size(); }
  const EndEntry& top() {
    Ready();
    if (heap_.empty()) return run_[pos_];
    if (pos_ == run_.size()) return heap_.front();
    return heap_.front() < run_[pos_] ? heap_.front() : run_[pos_];
  }
  void pop() {
    Ready();
    if (!heap_.empty() && (pos_ == run_.size() || heap_.front() < run_[pos_])) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
    } else {
      ++pos_;
    }
  }
  void push(EndEntry e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
  void clear() {
    run_.clear();
    heap_.clear();
    pos_ = ready_ = 0;
    splits_ = 0;
  }
  // Replaces everything by `entries` (taken; `entries` gets the old buffer).
  void Rebuild(PodVector<EndEntry>& entries) {
    run_.swap(entries);
    heap_.clear();
    pos_ = ready_ = 0;
    splits_ = 0;
  }

 private:
  // Makes run_[pos_] the earliest pending entry of the run: run_[pos_, ready_) is sorted and
  // precedes everything in run_[ready_, end).
  void Ready() {
    if (pos_ < ready_ || ready_ == run_.size()) return;
    const auto rest = run_.begin() + static_cast<std::ptrdiff_t>(ready_);
    if (++splits_ > 4) {
      std::sort(rest, run_.end());
      ready_ = run_.size();
      return;
    }
    const int64_t earliest = std::min_element(rest, run_.end())->end_ps;
    // Stable: entries arrive by class, so the earliest group stays sorted by class.
    const auto mid = std::stable_partition(rest, run_.end(), [&](const EndEntry& e) { return e.end_ps == earliest; });
    if (!std::is_sorted(rest, mid)) std::sort(rest, mid);
    ready_ = static_cast<size_t>(mid - run_.begin());
  }

  PodVector<EndEntry> run_;  // run_[pos_..] pending
  size_t pos_ = 0;
  size_t ready_ = 0;
  int splits_ = 0;              // linear splits since the last rebuild
  std::vector<EndEntry> heap_;  // min-heap
};

}  // namespace podsim::sim::internal
