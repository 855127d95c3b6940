#include "sim/network/analytic_network.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace podsim::sim {

AnalyticNetwork::AnalyticNetwork(const topo::Topology& topology)
    : topology_(topology),
      link_bytes_(topology.links().size(), 0.0),
      backlog_(topology.links().size()) {}

namespace {

// Latency of the longest path + the time the most loaded link needs for the bytes the transfer
// puts on it (paths of one transfer may share links, e.g. both halves of a 2D double tie).
Time PathsDuration(const topo::Topology& topology, const std::vector<topo::Topology::WeightedPath>& paths,
                   const std::vector<int64_t>& parts) {
  const auto& links = topology.links();
  std::vector<std::pair<int64_t, int64_t>> load;  // (link, bytes of this transfer on it)
  int64_t latency = 0;
  bool moves = false;
  for (size_t p = 0; p < paths.size(); ++p) {
    if (paths[p].links.empty()) continue;  // same core: nothing to move
    moves = true;
    latency = std::max(latency, internal::PathLatencyPs(topology, paths[p].links));
    for (int64_t l : paths[p].links) {
      auto it = std::find_if(load.begin(), load.end(), [&](const auto& e) { return e.first == l; });
      if (it == load.end()) load.emplace_back(l, parts[p]);
      else it->second += parts[p];
    }
  }
  if (!moves) return Time();
  Time data;
  for (const auto& [l, bytes] : load) {
    data = std::max(data, TransferTime(Bytes{bytes}, BytesPerSecond{links[static_cast<size_t>(l)].bandwidth.value}));
  }
  return Time::Picos(latency) + data;
}

}  // namespace

Time AnalyticNetwork::Duration(int64_t src_core, int64_t dst_core, Bytes bytes) const {
  const auto paths = topology_.RouteSplit(src_core, dst_core);
  return PathsDuration(topology_, paths, internal::SplitBytes(bytes.value, paths));
}

void AnalyticNetwork::Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) {
  internal::CheckStart("analytic", topology_, src_core, dst_core, bytes, now, time_, NextEventTime());
  if (now != pending_time_) FlushBatch();
  time_ = now;
  pending_time_ = now;
  const auto paths = topology_.RouteSplit(src_core, dst_core);
  const std::vector<int64_t> parts = internal::SplitBytes(bytes.value, paths);
  for (size_t p = 0; p < paths.size(); ++p) {
    if (paths[p].links.empty()) continue;  // same core: nothing to move
    for (int64_t l : paths[p].links) link_bytes_[static_cast<size_t>(l)] += static_cast<double>(parts[p]);
    pending_.push_back(
        {id, paths[p].links, parts[p], internal::PathLatencyPs(topology_, paths[p].links)});
  }
  pending_ids_.push_back(id);
}

void AnalyticNetwork::FlushBatch() const {
  if (pending_ids_.empty()) return;
  const Time now = pending_time_;
  const auto& links = topology_.links();
  // The parts on each link, in start order; by link id, so the result does not depend on hashing.
  std::map<int64_t, std::vector<size_t>> parts_on;
  for (size_t p = 0; p < pending_.size(); ++p) {
    for (int64_t l : pending_[p].links) parts_on[l].push_back(p);
  }
  std::unordered_map<TransferId, Time> end;
  for (TransferId id : pending_ids_) end[id] = now;
  for (const auto& [l, parts] : parts_on) {
    const size_t li = static_cast<size_t>(l);
    const BytesPerSecond bw{links[li].bandwidth.value};
    // The link frees at its backlog and sends the batch's parts one after the other.
    Time sent = std::max(backlog_[li], now);
    for (size_t p : parts) {
      sent += TransferTime(Bytes{pending_[p].bytes}, bw);
      Time& e = end[pending_[p].id];
      e = std::max(e, sent + Time::Picos(pending_[p].latency_ps));
    }
    backlog_[li] = sent;
  }
  for (TransferId id : pending_ids_) completions_.Add(end[id], id);
  pending_.clear();
  pending_ids_.clear();
}

Time AnalyticNetwork::NextEventTime() const {
  FlushBatch();
  return completions_.NextTime();
}

std::vector<TransferId> AnalyticNetwork::Advance(Time t) {
  internal::CheckAdvance("analytic", t, time_, NextEventTime());
  time_ = t;
  return completions_.PopAt(t);
}

}  // namespace podsim::sim
