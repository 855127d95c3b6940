#include "sim/network/analytic_network.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"

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
  const size_t num_paths = topology_.RouteSplitInto(src_core, dst_core, route_paths_);
  internal::SplitBytesInto(bytes.value, route_paths_.data(), num_paths, split_parts_);
  if (pending_ids_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw Error("analytic network: more than 2^31 transfers start at one time");
  }
  const int32_t transfer = static_cast<int32_t>(pending_ids_.size());
  for (size_t p = 0; p < num_paths; ++p) {
    const std::vector<int64_t>& links = route_paths_[p].links;
    if (links.empty()) continue;  // same core: nothing to move
    const int64_t first = static_cast<int64_t>(part_links_.size());
    for (int64_t l : links) {
      link_bytes_[static_cast<size_t>(l)] += static_cast<double>(split_parts_[p]);
      part_links_.push_back(static_cast<int32_t>(l));
    }
    pending_.push_back({transfer, static_cast<int32_t>(links.size()), first, split_parts_[p],
                        internal::PathLatencyPs(topology_, links)});
  }
  pending_ids_.push_back(id);
}

void AnalyticNetwork::FlushBatch() const {
  if (pending_ids_.empty()) return;
  const Time now = pending_time_;
  const auto& links = topology_.links();
  // Each link frees at its backlog and sends the batch's parts one after the other in start
  // order: walking the parts in start order, a link's backlog after a part is max(backlog, now)
  // plus the part's time on it (the max matters only at a link's first part of the batch).
  end_.assign(pending_ids_.size(), now);
  sent_.assign(pending_ids_.size(), now);
  for (const Part& part : pending_) {
    Time& e = end_[static_cast<size_t>(part.transfer)];
    Time& out = sent_[static_cast<size_t>(part.transfer)];
    for (int32_t i = 0; i < part.n; ++i) {
      const size_t l = static_cast<size_t>(part_links_[static_cast<size_t>(part.first + i)]);
      Time& sent = backlog_[l];
      sent = std::max(sent, now) + TransferTime(Bytes{part.bytes}, BytesPerSecond{links[l].bandwidth.value});
      e = std::max(e, sent + Time::Picos(part.latency_ps));
      out = std::max(out, sent);
    }
  }
  for (size_t i = 0; i < pending_ids_.size(); ++i) {
    completions_.Push(end_[i].picos(), pending_ids_[i]);
    sends_.Push(sent_[i].picos(), pending_ids_[i]);
  }
  pending_.clear();
  part_links_.clear();
  pending_ids_.clear();
}

Time AnalyticNetwork::NextEventTime() const {
  FlushBatch();
  const Time done = completions_.empty() ? Time::Max() : Time::Picos(completions_.TopKey());
  return sends_.empty() ? done : std::min(done, Time::Picos(sends_.TopKey()));
}

std::vector<TransferId> AnalyticNetwork::Advance(Time t) {
  internal::CheckAdvance("analytic", t, time_, NextEventTime());
  time_ = t;
  std::vector<TransferId> done;
  while (!completions_.empty() && completions_.TopKey() == t.picos()) done.push_back(completions_.Pop());
  internal::SortTransferIds(done);
  while (!sends_.empty() && sends_.TopKey() == t.picos()) sent_now_.push_back(sends_.Pop());
  return done;
}

std::vector<TransferId> AnalyticNetwork::TakeSent() {
  std::vector<TransferId> sent;
  sent.swap(sent_now_);
  internal::SortTransferIds(sent);
  return sent;
}

}  // namespace podsim::sim
