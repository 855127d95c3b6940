#pragma once
// A monotone priority queue of (key, value) with non-negative int64 keys, popped in ascending
// key order and, among equal keys, in push order (first in, first out): the order of a binary
// heap on (key, push sequence), which is what a discrete-event simulator needs to be
// deterministic. "Monotone": a push's key must be >= the last popped key, as an event's time is
// never before the clock.
//
// It is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990): bucket b holds the entries whose
// key first differs from the last popped key at bit b - 1 (bucket 0: equal to it). An entry only
// ever moves to a lower bucket, so each is moved at most 64 times and in practice a few, by
// sequential appends instead of a heap's cache-missing sift over millions of entries.
//
// Bucket 0 is kept in push-sequence order: entries reach it either pushed with the current key
// (a later sequence than every entry there) or redistributed from a higher bucket when it is
// empty, and then sorted by sequence.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
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
    if (key < last_) throw std::logic_error("RadixQueue: key below the last popped key");
    const size_t b = BucketOf(key);
    buckets_[b].push_back(Entry{key, seq_++, value});
    ++size_;
    if (b != 0 && top_ != kUnknown && key < top_) top_ = key;
  }

  // The smallest key; requires !empty(). It moves no entry (a push between TopKey and Pop may
  // still be below it), so repeated calls are O(1) and the first after a Pop scans one bucket.
  int64_t TopKey() const {
    if (head_ < buckets_[0].size()) return last_;
    if (top_ == kUnknown) {
      size_t b = 1;
      while (buckets_[b].empty()) ++b;
      for (const Entry& e : buckets_[b]) top_ = std::min(top_, e.key);
    }
    return top_;
  }
  // The value `ahead` entries after the next one to pop, if it has the same key (nullptr
  // otherwise or when unknown); after a Pop. For prefetching.
  const Value* PeekSameKey(size_t ahead) const {
    const size_t i = head_ + ahead;
    return i < buckets_[0].size() ? &buckets_[0][i].value : nullptr;
  }
  // Removes and returns the first entry of the smallest key; requires !empty().
  Value Pop() {
    Settle();
    const Value value = buckets_[0][head_].value;
    if (++head_ == buckets_[0].size()) {
      buckets_[0].clear();
      head_ = 0;
    }
    --size_;
    return value;
  }

 private:
  struct Entry {
    int64_t key;
    uint64_t seq;
    Value value;
  };

  size_t BucketOf(int64_t key) const {
    const uint64_t diff = static_cast<uint64_t>(key) ^ static_cast<uint64_t>(last_);
    return diff == 0 ? 0 : static_cast<size_t>(std::bit_width(diff));
  }

  // Makes bucket 0 hold the smallest key's entries, in sequence order.
  void Settle() {
    if (head_ < buckets_[0].size()) return;
    size_t b = 1;
    while (buckets_[b].empty()) ++b;  // size_ > 0: some bucket is not empty
    std::vector<Entry>& from = buckets_[b];
    int64_t min_key = from.front().key;
    for (const Entry& e : from) min_key = std::min(min_key, e.key);
    last_ = min_key;
    top_ = kUnknown;
    for (const Entry& e : from) buckets_[BucketOf(e.key)].push_back(e);  // each to a bucket < b
    from.clear();
    std::vector<Entry>& zero = buckets_[0];
    if (zero.size() > 1) {
      std::sort(zero.begin(), zero.end(), [](const Entry& x, const Entry& y) { return x.seq < y.seq; });
    }
  }

  static constexpr int64_t kUnknown = INT64_MAX;

  std::array<std::vector<Entry>, 65> buckets_;
  mutable int64_t top_ = kUnknown;  // smallest key outside bucket 0 if known, else kUnknown
  size_t head_ = 0;  // next entry of bucket 0 to pop
  size_t size_ = 0;
  int64_t last_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace podsim
