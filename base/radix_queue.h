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
// The buckets above 0 are chains of fixed-size blocks from one pool: a bucket grows without
// moving what it holds (a vector's doubling copied every entry of a bucket of millions, and a
// freed one faulted its pages back in), and a bucket emptied by a redistribution hands its
// blocks to the next to fill. The pool keeps the peak's blocks until the queue is destroyed.
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
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "base/huge_pages.h"

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
    Append(BucketOf(key), e);
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
    } else if (++head_ == zero_.size()) {
      zero_.clear();
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
    return i < zero_.size() ? &zero_[i].value : nullptr;
  }

 private:
  struct Entry {
    int64_t key;
    uint64_t seq;
    Value value;
    bool operator>(const Entry& o) const { return key != o.key ? key > o.key : seq > o.seq; }
  };

  // Entries per block: 48 KiB with an 8-byte value.
  static constexpr size_t kBlockEntries = 2048;
  struct Chain {
    std::vector<uint32_t> blocks;  // indices into blocks_, in fill order
    size_t size = 0;               // entries; all blocks full but the last
    Entry* tail = nullptr;         // next free entry of the last block
    Entry* tail_end = nullptr;     // the last block's end (tail == tail_end: full or none)
  };

  size_t BucketOf(int64_t key) const {
    const uint64_t diff = static_cast<uint64_t>(key) ^ static_cast<uint64_t>(base_);
    return diff == 0 ? 0 : static_cast<size_t>(std::bit_width(diff));
  }

  void Append(size_t bucket, const Entry& e) {
    if (bucket == 0) {
      zero_.push_back(e);
      return;
    }
    Chain& chain = chains_[bucket];
    if (chain.tail == chain.tail_end) {
      if (free_blocks_.empty()) AddSlab();
      chain.blocks.push_back(free_blocks_.back());
      free_blocks_.pop_back();
      chain.tail = blocks_[chain.blocks.back()];
      chain.tail_end = chain.tail + kBlockEntries;
    }
    *chain.tail++ = e;
    ++chain.size;
  }

  // Calls f on each entry of the chain, in push order.
  template <typename F>
  void ForEach(const Chain& chain, F&& f) const {
    size_t left = chain.size;
    for (const uint32_t b : chain.blocks) {
      const Entry* block = blocks_[b];
      const size_t n = std::min(left, kBlockEntries);
      for (size_t i = 0; i < n; ++i) f(block[i]);
      left -= n;
    }
  }

  // More free blocks, in one allocation: 1, 2, 4, ... blocks, then kMaxSlabBlocks at a time,
  // huge pages once a slab reaches 2 MiB (base/huge_pages.h): a queue of millions of events
  // spans hundreds of blocks, and a page fault per 4 KiB of them cost more than the queue's own
  // work, while a small queue keeps a small footprint.
  void AddSlab() {
    static_assert(std::is_trivially_copyable_v<Entry>, "blocks hold entries as raw memory");
    const size_t n = std::min(kMaxSlabBlocks, size_t{1} << std::min<size_t>(slabs_.size(), 16));
    Entry* slab = static_cast<Entry*>(AllocateMaybeHuge(n * kBlockEntries * sizeof(Entry)));
    slabs_.emplace_back(slab);
    for (size_t k = 0; k < n; ++k) {
      free_blocks_.push_back(static_cast<uint32_t>(blocks_.size()));
      blocks_.push_back(slab + k * kBlockEntries);
    }
  }

  // The next entry to pop (in bucket 0 or the early heap); requires size_ > 0.
  const Entry* Top() {
    if (head_ == zero_.size() && size_ > early_.size()) Settle();
    const bool radix = head_ < zero_.size();
    if (early_.empty()) return &zero_[head_];
    if (!radix) return &early_.front();
    const Entry& a = early_.front();
    const Entry& b = zero_[head_];
    return b > a ? &a : &b;
  }

  // Bucket 0 empty, some bucket above not: moves the base to the smallest key there and
  // redistributes that bucket, so that bucket 0 holds the smallest key's entries in sequence
  // order.
  void Settle() {
    size_t b = 1;
    while (chains_[b].size == 0) ++b;
    Chain from;
    from.blocks.swap(chains_[b].blocks);
    std::swap(from.size, chains_[b].size);
    chains_[b].tail = chains_[b].tail_end = nullptr;
    int64_t min_key = std::numeric_limits<int64_t>::max();
    ForEach(from, [&](const Entry& e) { min_key = std::min(min_key, e.key); });
    base_ = min_key;
    ForEach(from, [&](const Entry& e) { Append(BucketOf(e.key), e); });  // each to a bucket < b
    free_blocks_.insert(free_blocks_.end(), from.blocks.begin(), from.blocks.end());
    chains_[b].blocks.swap(from.blocks);  // keeps the index vector's capacity
    chains_[b].blocks.clear();
    if (zero_.size() > 1) {
      std::sort(zero_.begin(), zero_.end(),
                [](const Entry& x, const Entry& y) { return x.seq < y.seq; });
    }
  }

  struct SlabFree {
    void operator()(Entry* p) const noexcept { FreeMaybeHuge(p); }
  };
  static constexpr size_t kMaxSlabBlocks = 64;  // 3 MiB of 24-byte entries

  std::vector<Entry, HugePageAllocator<Entry>> zero_;  // bucket 0; popped from head_
  std::array<Chain, 65> chains_;  // buckets 1 .. 64 (chains_[0] unused)
  std::vector<std::unique_ptr<Entry, SlabFree>> slabs_;
  std::vector<Entry*> blocks_;  // in slabs_
  std::vector<uint32_t> free_blocks_;
  std::vector<Entry> early_;  // min-heap on (key, seq): pushed below base_
  size_t head_ = 0;           // next entry of bucket 0 to pop
  size_t size_ = 0;           // all entries, early_ included
  int64_t base_ = 0;          // the radix buckets' reference key
  int64_t floor_ = 0;         // the last popped key
  uint64_t seq_ = 0;
};

}  // namespace podsim
