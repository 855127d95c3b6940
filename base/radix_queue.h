#pragma once
// A monotone priority queue of (key, value) with non-negative int64 keys, popped in ascending
// key order and, among equal keys, in push order (first in, first out): the order of a binary
// heap on (key, push sequence), which is what a discrete-event simulator needs to be
// deterministic. "Monotone": a push's key must be >= the last popped key, as an event's time is
// never before the clock.
//
// It is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990): bucket b holds the entries whose
// key first differs from the base key at bit b - 1 (bucket 0: equal to it). An entry only ever
// moves to a lower bucket, so each is moved at most 64 times and in practice a few, by
// sequential appends instead of a heap's cache-missing sift over millions of entries.
//
// Bucket 0 is kept in push-sequence order: entries reach it either pushed with the base key (a
// later sequence than every entry there) or redistributed from a higher bucket when it is
// empty, and then sorted by sequence. Looking at the top moves the base up to the smallest key;
// a later push below the base but not below the last popped key (a simulator that asked for
// its next event time, then starts something sooner) waits in a small binary heap beside.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

namespace podsim {

template <typename Value>
class RadixQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  // Throws std::logic_error if key < the last popped key or key < 0 (a caller's bug).
  void Push(int64_t key, const Value& value) {
    if (key < floor_) throw std::logic_error("RadixQueue: key below the last popped key");
    const Entry e{key, seq_++, value};
    ++size_;
    if (key < base_) {
      early_.push_back(e);
      std::push_heap(early_.begin(), early_.end(), std::greater<>());
      return;
    }
    buckets_[BucketOf(key)].push_back(e);
  }

  // The smallest key; requires !empty().
  int64_t TopKey() {
    const Entry* e = Top();
    return e->key;
  }
  // Removes and returns the first entry of the smallest key; requires !empty().
  Value Pop() {
    const Entry* e = Top();
    const Value value = e->value;
    floor_ = e->key;
    if (!early_.empty() && e == &early_.front()) {
      std::pop_heap(early_.begin(), early_.end(), std::greater<>());
      early_.pop_back();
    } else if (++head_ == buckets_[0].size()) {
      buckets_[0].clear();
      head_ = 0;
    }
    --size_;
    return value;
  }
  // The value `ahead` entries after the next one in bucket 0, if there is one (nullptr
  // otherwise): usually an entry due at the same time, soon (when the next pops come from the
  // early heap, a later one). For prefetching only.
  const Value* PeekSameKey(size_t ahead) const {
    const size_t i = head_ + ahead;
    return i < buckets_[0].size() ? &buckets_[0][i].value : nullptr;
  }

 private:
  struct Entry {
    int64_t key;
    uint64_t seq;
    Value value;
    bool operator>(const Entry& o) const { return key != o.key ? key > o.key : seq > o.seq; }
  };

  size_t BucketOf(int64_t key) const {
    const uint64_t diff = static_cast<uint64_t>(key) ^ static_cast<uint64_t>(base_);
    return diff == 0 ? 0 : static_cast<size_t>(std::bit_width(diff));
  }

  // The next entry to pop (in bucket 0 or the early heap); requires size_ > 0.
  const Entry* Top() {
    if (head_ == buckets_[0].size() && size_ > early_.size()) Settle();
    const bool radix = head_ < buckets_[0].size();
    if (early_.empty()) return &buckets_[0][head_];
    if (!radix) return &early_.front();
    const Entry& a = early_.front();
    const Entry& b = buckets_[0][head_];
    return b > a ? &a : &b;
  }

  // Bucket 0 empty, some bucket above not: moves the base to the smallest key there and
  // redistributes that bucket, so that bucket 0 holds the smallest key's entries in sequence
  // order.
  void Settle() {
    size_t b = 1;
    while (buckets_[b].empty()) ++b;
    std::vector<Entry>& from = buckets_[b];
    int64_t min_key = from.front().key;
    for (const Entry& e : from) min_key = std::min(min_key, e.key);
    base_ = min_key;
    for (const Entry& e : from) buckets_[BucketOf(e.key)].push_back(e);  // each to a bucket < b
    // A large bucket emptied gives its memory back: entries only move down, so the buckets that
    // filled first (the high ones) would otherwise keep a peak's worth of capacity each.
    if (from.capacity() > (size_t{1} << 20)) {
      std::vector<Entry>().swap(from);
    } else {
      from.clear();
    }
    std::vector<Entry>& zero = buckets_[0];
    if (zero.size() > 1) {
      std::sort(zero.begin(), zero.end(), [](const Entry& x, const Entry& y) { return x.seq < y.seq; });
    }
  }

  std::array<std::vector<Entry>, 65> buckets_;
  std::vector<Entry> early_;  // min-heap on (key, seq): pushed below base_
  size_t head_ = 0;           // next entry of bucket 0 to pop
  size_t size_ = 0;           // all entries, early_ included
  int64_t base_ = 0;          // the radix buckets' reference key
  int64_t floor_ = 0;         // the last popped key
  uint64_t seq_ = 0;
};

}  // namespace podsim
