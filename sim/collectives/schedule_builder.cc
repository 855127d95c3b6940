#include "sim/collectives/schedule_builder.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

#include <boost/container/small_vector.hpp>

#include "base/error.h"
#include "sim/collectives/collective.h"

namespace podsim::sim {

void AppendRange(Ranges& ranges, int64_t offset, int64_t elements) {
  if (elements <= 0) return;
  if (!ranges.empty() && ranges.back().offset + ranges.back().elements == offset) {
    ranges.back().elements += elements;
    return;
  }
  ranges.push_back({offset, elements});
}

int64_t TotalElements(const Ranges& ranges) {
  int64_t total = 0;
  for (const Range& r : ranges) total += r.elements;
  return total;
}

std::vector<Ranges> SplitRanges(const Ranges& ranges, int64_t k) {
  std::vector<Ranges> parts(static_cast<size_t>(k));
  const int64_t total = TotalElements(ranges);
  size_t r = 0;
  int64_t used = 0;  // elements of ranges[r] already given out
  for (int64_t i = 0; i < k; ++i) {
    int64_t want = BlockOf(total, k, i).elements;
    while (want > 0) {
      const Range& range = ranges[r];
      const int64_t take = std::min(want, range.elements - used);
      AppendRange(parts[static_cast<size_t>(i)], range.offset + used, take);
      used += take;
      want -= take;
      if (used == range.elements) {
        ++r;
        used = 0;
      }
    }
  }
  return parts;
}

// Per (partition, buffer), the regions sorted by start in two flat arrays: looked up by binary
// search over contiguous starts (a tree's nodes, scattered over the heap, cost a cache miss per
// level: most of a large build's time), split by an insertion into arrays of a few hundred. A
// region's readers and reducers live in a pool of recycled slots, its index beside the writer.
struct ScheduleBuilder::Tracker {
  // A region's readers and reducers since its last writer (transfer indices fit int32).
  struct Accessors {
    boost::container::small_vector<int32_t, 2> reducers;
    boost::container::small_vector<int32_t, 2> readers;
  };
  // From its start up to the next region's. Trivially copyable, so that splitting a region
  // moves the later ones with one memmove (element-wise moves made unoptimised builds crawl).
  struct Region {
    int32_t writer = -1;
    int32_t accessors = -1;  // index into pool, -1: none
  };
  struct RegionMap {
    std::vector<int64_t> starts;  // ascending, starts[0] == 0
    std::vector<Region> regions;
    // The region holding element `pos`.
    size_t Find(int64_t pos) const {
      return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), pos) - starts.begin()) - 1;
    }
  };

  explicit Tracker(int64_t partitions) : maps(static_cast<size_t>(partitions) * 3) {}
  RegionMap& Map(int64_t partition, Buffer buffer) {
    RegionMap& map = maps[static_cast<size_t>(partition * 3 + static_cast<int64_t>(buffer))];
    if (map.starts.empty()) {
      map.starts.push_back(0);
      map.regions.emplace_back();
    }
    return map;
  }

  const Accessors* Of(const Region& r) const {
    return r.accessors < 0 ? nullptr : &pool[static_cast<size_t>(r.accessors)];
  }
  // r's accessors, made if it has none (the reference lasts until the next NewSlot).
  Accessors& Own(Region& r) {
    if (r.accessors < 0) r.accessors = NewSlot(Accessors{});
    return pool[static_cast<size_t>(r.accessors)];
  }
  void Release(Region& r) {
    if (r.accessors < 0) return;
    Accessors& a = pool[static_cast<size_t>(r.accessors)];
    a.reducers.clear();
    a.readers.clear();
    free_slots.push_back(r.accessors);
    r.accessors = -1;
  }
  int32_t NewSlot(Accessors a) {
    if (!free_slots.empty()) {
      const int32_t slot = free_slots.back();
      free_slots.pop_back();
      pool[static_cast<size_t>(slot)] = std::move(a);
      return slot;
    }
    if (pool.size() >= static_cast<size_t>(kMaxIndex)) throw Error("schedule: more than 2^31 - 1 regions");
    pool.push_back(std::move(a));
    return static_cast<int32_t>(pool.size() - 1);
  }
  bool Same(const Region& a, const Region& b) const {
    if (a.writer != b.writer) return false;
    static const Accessors kNone;
    const Accessors& x = a.accessors < 0 ? kNone : pool[static_cast<size_t>(a.accessors)];
    const Accessors& y = b.accessors < 0 ? kNone : pool[static_cast<size_t>(b.accessors)];
    return x.reducers == y.reducers && x.readers == y.readers;
  }
  // Splits so that a region of `map` starts at `pos`; returns its index.
  size_t Split(RegionMap& map, int64_t pos) {
    const size_t i = map.Find(pos);
    if (map.starts[i] == pos) return i;
    Region copy = map.regions[i];
    if (copy.accessors >= 0) copy.accessors = NewSlot(pool[static_cast<size_t>(copy.accessors)]);
    map.starts.insert(map.starts.begin() + static_cast<std::ptrdiff_t>(i + 1), pos);
    map.regions.insert(map.regions.begin() + static_cast<std::ptrdiff_t>(i + 1), copy);
    return i + 1;
  }
  void Erase(RegionMap& map, size_t i) {
    Release(map.regions[i]);
    map.starts.erase(map.starts.begin() + static_cast<std::ptrdiff_t>(i));
    map.regions.erase(map.regions.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::vector<RegionMap> maps;  // [partition * 3 + buffer]
  ScheduleArray<Accessors> pool;  // regions' accessors; free slots are empty (huge pages: it
                                  // reaches hundreds of MB on a 16k-partition all-reduce)
  std::vector<int32_t> free_slots;
};

ScheduleBuilder::ScheduleBuilder(Schedule& schedule, bool track)
    : schedule_(schedule), track_(track) {
  if (schedule.num_partitions > kMaxIndex) {
    throw Error("schedule: " + std::to_string(schedule.num_partitions) +
                " partitions; at most 2^31 - 1 supported");
  }
  if (track_) tracker_ = std::make_unique<Tracker>(schedule.num_partitions);
}

ScheduleBuilder::~ScheduleBuilder() = default;

void ScheduleBuilder::Touch(int64_t partition, Buffer buffer, int64_t offset, int64_t elements,
                            Access access, int64_t t) {
  Tracker& tracker = *tracker_;
  Tracker::RegionMap& map = tracker.Map(partition, buffer);
  const int64_t end = offset + elements;
  tracker.Split(map, end);
  const size_t begin = tracker.Split(map, offset);  // second: an insertion moves the later regions
  const int32_t index = static_cast<int32_t>(t);  // < kMaxIndex (AddMerged checks)
  for (size_t i = begin; i < map.starts.size() && map.starts[i] < end; ++i) {
    Tracker::Region& r = map.regions[i];
    // The deps first (this transfer's own earlier pieces are among them: SetDeps drops them).
    if (r.writer >= 0) deps_.push_back(r.writer);
    if (const Tracker::Accessors* a = tracker.Of(r)) {
      if (access != Access::kReduce) deps_.insert(deps_.end(), a->reducers.begin(), a->reducers.end());
      if (access != Access::kRead) deps_.insert(deps_.end(), a->readers.begin(), a->readers.end());
    }
    switch (access) {
      case Access::kRead: tracker.Own(r).readers.push_back(index); break;
      case Access::kWrite:
        r.writer = index;
        tracker.Release(r);
        break;
      case Access::kReduce: {
        Tracker::Accessors& a = tracker.Own(r);
        a.reducers.push_back(index);
        a.readers.clear();
        break;
      }
    }
  }
  // Neighbours left in one state are one region again (a write leaves the whole range so): the
  // regions stay as few as the distinct states, not as the ranges ever touched, and a later
  // access to a large range visits a few of them. Deps are unchanged: they depend on the states.
  size_t first = begin > 0 ? begin - 1 : 0;
  for (size_t next = first + 1; next < map.starts.size() && map.starts[next] <= end;) {
    if (tracker.Same(map.regions[first], map.regions[next])) {
      tracker.Erase(map, next);
    } else {
      first = next++;
    }
  }
}

int64_t ScheduleBuilder::Add(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                             const std::vector<Segment>& pieces, bool reduce, int step,
                             const std::vector<int64_t>& extra_deps) {
  std::vector<Segment> merged;
  merged.reserve(pieces.size());
  for (const Segment& s : pieces) {
    if (s.elements <= 0) continue;
    if (!merged.empty() && merged.back().src_offset + merged.back().elements == s.src_offset &&
        merged.back().dst_offset + merged.back().elements == s.dst_offset) {
      merged.back().elements += s.elements;
    } else {
      merged.push_back(s);
    }
  }
  return AddMerged(src, src_buffer, dst, dst_buffer, merged.data(), merged.size(), reduce, step,
                   extra_deps);
}

int64_t ScheduleBuilder::AddPiece(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                                  const Segment& piece, bool reduce, int step,
                                  const std::vector<int64_t>& extra_deps) {
  return AddMerged(src, src_buffer, dst, dst_buffer, &piece, piece.elements > 0 ? 1 : 0, reduce,
                   step, extra_deps);
}

int64_t ScheduleBuilder::AddMerged(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                                   const Segment* pieces, size_t count, bool reduce, int step,
                                   const std::vector<int64_t>& extra_deps) {
  if (count == 0) return -1;
  const int64_t index = static_cast<int64_t>(schedule_.transfers.size());
  if (index >= kMaxIndex) throw Error("schedule: more than 2^31 - 1 transfers");
  ChunkTransfer& t = schedule_.transfers.emplace_back();
  t.src = static_cast<int32_t>(src);
  t.dst = static_cast<int32_t>(dst);
  t.src_buffer = src_buffer;
  t.dst_buffer = dst_buffer;
  t.src_offset = pieces[0].src_offset;
  t.dst_offset = pieces[0].dst_offset;
  for (size_t i = 0; i < count; ++i) t.elements += pieces[i].elements;
  t.reduce = reduce;
  t.step = step;
  if (count > 1) {
    if (schedule_.segments.size() + count > static_cast<size_t>(kMaxIndex)) {
      throw Error("schedule: more than 2^31 - 1 segments");
    }
    t.first_segment = static_cast<int32_t>(schedule_.segments.size());
    t.num_segments = static_cast<int32_t>(count);
    schedule_.segments.insert(schedule_.segments.end(), pieces, pieces + count);
  }
  deps_.assign(extra_deps.begin(), extra_deps.end());
  if (track_) {
    const Access write = reduce ? Access::kReduce : Access::kWrite;
    // Each access collects its deps and records itself in one pass over its regions. Later
    // pieces of this transfer may see its earlier ones: a write or reduction has already
    // collected what they would (a region's writer, reducers and readers), so dropping the
    // transfer's own index gives the deps of collecting everything before recording anything.
    for (size_t i = 0; i < count; ++i) {
      Touch(src, src_buffer, pieces[i].src_offset, pieces[i].elements, Access::kRead, index);
      Touch(dst, dst_buffer, pieces[i].dst_offset, pieces[i].elements, write, index);
    }
    std::erase(deps_, index);
  }
  SetDeps(t);
  return index;
}

void ScheduleBuilder::SetDeps(ChunkTransfer& t) {
  if (deps_.size() > 1) {
    std::sort(deps_.begin(), deps_.end());
    deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
  }
  auto& index = schedule_.dep_index;
  if (index.size() + deps_.size() > static_cast<size_t>(kMaxIndex)) {
    throw Error("schedule: more than 2^31 - 1 dependencies");
  }
  t.first_dep = static_cast<int32_t>(index.size());
  t.num_deps = static_cast<int32_t>(deps_.size());
  for (int64_t d : deps_) index.push_back(static_cast<int32_t>(d));
}

int64_t ScheduleBuilder::AddRanges(int64_t src, Buffer src_buffer, int64_t dst, Buffer dst_buffer,
                                   const Ranges& ranges, bool reduce, int step,
                                   const std::vector<int64_t>& extra_deps) {
  if (ranges.size() == 1) {
    return AddPiece(src, src_buffer, dst, dst_buffer,
                    {ranges[0].offset, ranges[0].offset, ranges[0].elements}, reduce, step,
                    extra_deps);
  }
  std::vector<Segment> pieces;
  pieces.reserve(ranges.size());
  for (const Range& r : ranges) pieces.push_back({r.offset, r.offset, r.elements});
  return Add(src, src_buffer, dst, dst_buffer, pieces, reduce, step, extra_deps);
}

void ScheduleBuilder::QueueAfter(int64_t t, int64_t previous) {
  if (t < 0 || previous < 0) return;
  const size_t n = schedule_.transfers.size();
  if (t >= static_cast<int64_t>(n) || previous >= t) {
    throw Error("schedule: transfer " + std::to_string(t) + " queued after " +
                std::to_string(previous) + ", not an earlier transfer");
  }
  const ChunkTransfer& a = schedule_.transfers[static_cast<size_t>(t)];
  const ChunkTransfer& b = schedule_.transfers[static_cast<size_t>(previous)];
  if (a.local() || a.src != b.src || a.dst != b.dst) {
    throw Error("schedule: transfer " + std::to_string(t) + " queued after " +
                std::to_string(previous) +
                ", which is not a network transfer between the same partitions");
  }
  schedule_.queued_after.resize(n, -1);
  schedule_.queued_after[static_cast<size_t>(t)] = static_cast<int32_t>(previous);
}

int64_t ScheduleBuilder::AddJoin(int64_t partition, const std::vector<int64_t>& deps, int step) {
  if (deps.empty()) return -1;
  const int64_t index = static_cast<int64_t>(schedule_.transfers.size());
  if (index >= kMaxIndex) throw Error("schedule: more than 2^31 - 1 transfers");
  ChunkTransfer& t = schedule_.transfers.emplace_back();
  t.src = static_cast<int32_t>(partition);
  t.dst = static_cast<int32_t>(partition);
  t.src_buffer = Buffer::kOutput;
  t.dst_buffer = Buffer::kOutput;
  t.step = step;
  deps_.assign(deps.begin(), deps.end());
  SetDeps(t);
  return index;
}

void ScheduleBuilder::Finish() {
  int steps = 0;
  for (const ChunkTransfer& t : schedule_.transfers) {
    if (!t.local()) steps = std::max(steps, t.step + 1);
  }
  schedule_.num_steps = steps;
  if (!schedule_.queued_after.empty())
    schedule_.queued_after.resize(schedule_.transfers.size(), -1);
}

}  // namespace podsim::sim
