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
// region's few accessors are stored inline (transfer indices fit int32: kMaxIndex).
struct ScheduleBuilder::Tracker {
  struct Region {  // from its start up to the next region's
    int32_t writer = -1;
    boost::container::small_vector<int32_t, 2> reducers;
    boost::container::small_vector<int32_t, 2> readers;
    bool operator==(const Region& o) const {
      return writer == o.writer && reducers == o.reducers && readers == o.readers;
    }
  };
  struct RegionMap {
    std::vector<int64_t> starts;  // ascending, starts[0] == 0
    std::vector<Region> regions;
    // The region holding element `pos`.
    size_t Find(int64_t pos) const {
      return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), pos) - starts.begin()) - 1;
    }
    // Splits so that a region starts at `pos`; returns its index.
    size_t Split(int64_t pos) {
      const size_t i = Find(pos);
      if (starts[i] == pos) return i;
      starts.insert(starts.begin() + static_cast<std::ptrdiff_t>(i + 1), pos);
      Region copy = regions[i];
      regions.insert(regions.begin() + static_cast<std::ptrdiff_t>(i + 1), std::move(copy));
      return i + 1;
    }
    void Erase(size_t i) {
      starts.erase(starts.begin() + static_cast<std::ptrdiff_t>(i));
      regions.erase(regions.begin() + static_cast<std::ptrdiff_t>(i));
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

  std::vector<RegionMap> maps;  // [partition * 3 + buffer]
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
  Tracker::RegionMap& map = tracker_->Map(partition, buffer);
  const int64_t end = offset + elements;
  map.Split(end);
  const size_t begin = map.Split(offset);  // second: an insertion moves the later regions
  const int32_t index = static_cast<int32_t>(t);  // < kMaxIndex (AddMerged checks)
  for (size_t i = begin; i < map.starts.size() && map.starts[i] < end; ++i) {
    Tracker::Region& r = map.regions[i];
    // The deps first (this transfer's own earlier pieces are among them: SetDeps drops them).
    if (r.writer >= 0) deps_.push_back(r.writer);
    if (access != Access::kReduce) deps_.insert(deps_.end(), r.reducers.begin(), r.reducers.end());
    if (access != Access::kRead) deps_.insert(deps_.end(), r.readers.begin(), r.readers.end());
    switch (access) {
      case Access::kRead: r.readers.push_back(index); break;
      case Access::kWrite:
        r.writer = index;
        r.reducers.clear();
        r.readers.clear();
        break;
      case Access::kReduce:
        r.reducers.push_back(index);
        r.readers.clear();
        break;
    }
  }
  // Neighbours left in one state are one region again (a write leaves the whole range so): the
  // regions stay as few as the distinct states, not as the ranges ever touched, and a later
  // access to a large range visits a few of them. Deps are unchanged: they depend on the states.
  size_t first = begin > 0 ? begin - 1 : 0;
  for (size_t next = first + 1; next < map.starts.size() && map.starts[next] <= end;) {
    if (map.regions[first] == map.regions[next]) {
      map.Erase(next);
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
  std::vector<int32_t>& index = schedule_.dep_index;
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
}

}  // namespace podsim::sim
