#include "sim/network/network_util.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"

namespace podsim::sim::internal {

namespace {
std::string Ps(Time t) { return t == Time::Max() ? std::string("never") : std::to_string(t.picos()) + " ps"; }
}  // namespace

void CheckStart(const char* model, const topo::Topology& topology, int64_t src_core,
                int64_t dst_core, Bytes bytes, Time now, Time model_time, Time next_event) {
  const int64_t cores = topology.num_cores();
  if (src_core < 0 || src_core >= cores || dst_core < 0 || dst_core >= cores) {
    throw Error(std::string(model) + " network: transfer " + std::to_string(src_core) + " -> " +
                std::to_string(dst_core) + " names a core outside [0, " + std::to_string(cores) +
                ") of topology " + topology.name());
  }
  if (bytes.value < 0) {
    throw Error(std::string(model) + " network: transfer of " + std::to_string(bytes.value) + " bytes (must be >= 0)");
  }
  if (now < model_time) {
    throw Error(std::string(model) + " network: Start at " + Ps(now) + " is before the model time " + Ps(model_time));
  }
  if (now > next_event) {
    throw Error(std::string(model) + " network: Start at " + Ps(now) + " skips the pending event at " +
                Ps(next_event) + "; call Advance first");
  }
}

void CheckAdvance(const char* model, Time t, Time model_time, Time next_event) {
  if (t < model_time) {
    throw Error(std::string(model) + " network: Advance to " + Ps(t) + " is before the model time " + Ps(model_time));
  }
  if (t > next_event) {
    throw Error(std::string(model) + " network: Advance to " + Ps(t) + " skips the pending event at " + Ps(next_event));
  }
}

std::vector<int64_t> SplitBytes(int64_t bytes, const std::vector<topo::Topology::WeightedPath>& paths) {
  std::vector<int64_t> parts;
  SplitBytesInto(bytes, paths.data(), paths.size(), parts);
  return parts;
}

void SplitBytesInto(int64_t bytes, const topo::Topology::WeightedPath* paths, size_t n,
                    std::vector<int64_t>& parts) {
  parts.assign(n, 0);
  double cumulative = 0;
  int64_t given = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    cumulative += paths[i].fraction;
    const int64_t upto = std::clamp<int64_t>(std::llround(static_cast<double>(bytes) * cumulative), given, bytes);
    parts[i] = upto - given;
    given = upto;
  }
  if (n > 0) parts.back() = bytes - given;
}

int64_t PathLatencyPs(const topo::Topology& topology, const std::vector<int64_t>& links) {
  const auto& all = topology.links();
  int64_t sum = 0;
  for (int64_t l : links) sum += all[static_cast<size_t>(l)].latency.picos();
  return sum;
}

namespace {

// Sorts ids ascending: LSD radix sort on 16-bit digits of the sign-flipped value, skipping
// digits that all ids share. Linear time: a bucket can hold millions of AllToAll transfers.
void RadixSort(std::vector<TransferId>& ids) {
  constexpr int kBits = 16;
  constexpr size_t kBuckets = size_t{1} << kBits;
  const auto key = [](TransferId id) { return static_cast<uint64_t>(id) ^ (uint64_t{1} << 63); };
  std::vector<TransferId> buffer(ids.size());
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (TransferId id : ids) ++count[(key(id) >> shift) & (kBuckets - 1)];
    if (count[(key(ids[0]) >> shift) & (kBuckets - 1)] == ids.size()) continue;  // one digit value
    size_t sum = 0;
    for (size_t& c : count) sum += std::exchange(c, sum);
    for (TransferId id : ids) buffer[count[(key(id) >> shift) & (kBuckets - 1)]++] = id;
    ids.swap(buffer);
  }
}

}  // namespace

void SortTransferIds(std::vector<TransferId>& ids) {
  if (std::is_sorted(ids.begin(), ids.end())) return;
  if (ids.size() < 4096) {
    std::sort(ids.begin(), ids.end());
  } else {
    RadixSort(ids);
  }
}

std::vector<TransferId> CompletionQueue::PopAt(Time t) {
  auto it = by_time_.find(t.picos());
  if (it == by_time_.end()) return {};
  std::vector<TransferId> ids = std::move(it->second);
  by_time_.erase(it);
  SortTransferIds(ids);
  return ids;
}

}  // namespace podsim::sim::internal
