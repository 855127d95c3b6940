#include "sim/collectives/schedule_check.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"

namespace podsim::sim {
namespace {

int64_t BufferSize(const Schedule& s, int64_t p, Buffer b) {
  const size_t i = static_cast<size_t>(p);
  switch (b) {
    case Buffer::kInput: return s.input_elements[i];
    case Buffer::kOutput: return s.output_elements[i];
    case Buffer::kScratch: return s.scratch_elements.empty() ? 0 : s.scratch_elements[i];
  }
  return 0;
}

std::string Where(size_t t) { return "schedule.transfers[" + std::to_string(t) + "]"; }

}  // namespace

void ValidateSchedule(const Schedule& s) {
  const int64_t np = s.num_partitions;
  if (static_cast<int64_t>(s.input_elements.size()) != np ||
      static_cast<int64_t>(s.output_elements.size()) != np ||
      (!s.scratch_elements.empty() && static_cast<int64_t>(s.scratch_elements.size()) != np)) {
    throw Error("schedule: buffer size lists must have num_partitions entries");
  }
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    const ChunkTransfer& t = s.transfers[i];
    if (t.src < 0 || t.src >= np || t.dst < 0 || t.dst >= np) {
      throw Error(Where(i) + ": partition out of range");
    }
    if (t.dst_buffer == Buffer::kInput) throw Error(Where(i) + ": writes an input buffer");
    if (t.step < 0) throw Error(Where(i) + ": negative step");
    if (t.num_deps < 0 || t.first_dep < 0 ||
        static_cast<int64_t>(t.first_dep) + t.num_deps > static_cast<int64_t>(s.dep_index.size())) {
      throw Error(Where(i) + ": deps out of range");
    }
    for (int64_t d : Deps(s, t)) {
      if (d < 0 || d >= static_cast<int64_t>(i)) {
        throw Error(Where(i) + ": dep " + std::to_string(d) + " is not an earlier transfer");
      }
    }
    if (t.num_segments < 0 ||
        (t.num_segments > 0 && static_cast<int64_t>(t.first_segment) + t.num_segments >
                                                         static_cast<int64_t>(s.segments.size()))) {
      throw Error(Where(i) + ": segments out of range");
    }
    int64_t total = 0;
    const int64_t src_size = BufferSize(s, t.src, t.src_buffer);
    const int64_t dst_size = BufferSize(s, t.dst, t.dst_buffer);
    ForEachPiece(s, t, [&](int64_t so, int64_t d_off, int64_t len) {
      if (len < 0 || so < 0 || d_off < 0 || so + len > src_size || d_off + len > dst_size) {
        throw Error(Where(i) + ": a piece lies outside its buffer");
      }
      total += len;
    });
    if (total != t.elements) throw Error(Where(i) + ": segments do not add up to elements");
  }
}

std::optional<std::string> FindRace(const Schedule& s) {
  const size_t n = s.transfers.size();
  const size_t words = (n + 63) / 64;
  // before[t]: bit u set when u must complete before t starts (transitively).
  std::vector<uint64_t> before(n * words, 0);
  for (size_t t = 0; t < n; ++t) {
    uint64_t* row = &before[t * words];
    for (int64_t d : Deps(s, t)) {
      const uint64_t* dep_row = &before[static_cast<size_t>(d) * words];
      for (size_t w = 0; w < words; ++w) row[w] |= dep_row[w];
      row[static_cast<size_t>(d) / 64] |= uint64_t{1} << (static_cast<size_t>(d) % 64);
    }
  }
  auto ordered = [&](size_t a, size_t b) {  // a < b
    return (before[b * words + a / 64] >> (a % 64)) & 1;
  };
  enum Kind { kRead, kWrite, kReduce };
  // Accesses per (partition, buffer): (offset, end, transfer, kind).
  std::map<std::pair<int64_t, int>, std::vector<std::tuple<int64_t, int64_t, size_t, Kind>>>
      accesses;
  for (size_t i = 0; i < n; ++i) {
    const ChunkTransfer& t = s.transfers[i];
    ForEachPiece(s, t, [&](int64_t so, int64_t d_off, int64_t len) {
      if (len == 0) return;
      accesses[{t.src, static_cast<int>(t.src_buffer)}].emplace_back(so, so + len, i, kRead);
      accesses[{t.dst, static_cast<int>(t.dst_buffer)}].emplace_back(d_off, d_off + len, i,
                                                                     t.reduce ? kReduce : kWrite);
    });
  }
  for (auto& [key, list] : accesses) {
    std::sort(list.begin(), list.end());
    for (size_t a = 0; a < list.size(); ++a) {
      const auto& [a_begin, a_end, a_t, a_kind] = list[a];
      for (size_t b = a + 1; b < list.size() && std::get<0>(list[b]) < a_end; ++b) {
        const auto& [b_begin, b_end, b_t, b_kind] = list[b];
        if (a_t == b_t) continue;
        if (a_kind == kRead && b_kind == kRead) continue;
        if (a_kind == kReduce && b_kind == kReduce) continue;
        const size_t lo = std::min(a_t, b_t), hi = std::max(a_t, b_t);
        if (ordered(lo, hi)) continue;
        return "transfers " + std::to_string(lo) + " and " + std::to_string(hi) +
               " touch elements [" + std::to_string(std::max(a_begin, b_begin)) + ", " +
               std::to_string(std::min(a_end, b_end)) + ") of buffer " +
               std::to_string(key.second) + " of partition " + std::to_string(key.first) +
               " without an order";
      }
    }
  }
  return std::nullopt;
}

}  // namespace podsim::sim
