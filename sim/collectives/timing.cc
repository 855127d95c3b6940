#include "sim/collectives/timing.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <utility>

#include "base/error.h"

namespace podsim::sim {

TimingResult RunTiming(const Schedule& schedule, const topo::Topology& topology,
                       NetworkModel& network, const TimingOptions& options) {
  if (schedule.num_partitions > topology.num_cores()) {
    throw Error("schedule: " + std::to_string(schedule.num_partitions) +
                " partitions, but topology '" + topology.name() + "' has " +
                std::to_string(topology.num_cores()) + " cores");
  }
  if (options.fixed_overhead.ps < 0) throw Error("fixed_overhead: must be >= 0");
  if (options.local_copy_bandwidth < 0) throw Error("local_copy_bandwidth: must be >= 0");
  const std::vector<ChunkTransfer>& transfers = schedule.transfers;
  const size_t n = transfers.size();

  // Successors in CSR form, and the number of unfinished deps of each transfer.
  // What a completion needs of its transfer, packed in 16 B: completions arrive in an order
  // unrelated to the schedule's, and one cache line per completion instead of three (the
  // 56 B transfer, the successor offsets) is most of RunTiming's own time on 4 million.
  struct Node {
    int64_t first_successor = 0;  // successors[first_successor, + num_successors)
    int32_t num_successors = 0;
    int32_t step = -1;  // its step; -1 for a local transfer
  };
  std::vector<Node> nodes(n);
  std::vector<int32_t> remaining(n);
  for (size_t i = 0; i < n; ++i) {
    nodes[i].step = transfers[i].local() ? -1 : transfers[i].step;
    remaining[i] = transfers[i].num_deps;
    for (int32_t d : Deps(schedule, i)) ++nodes[static_cast<size_t>(d)].num_successors;
  }
  int64_t total_successors = 0;
  for (Node& node : nodes) {
    node.first_successor = total_successors;
    total_successors += node.num_successors;
  }
  // Transfer indices fit int32 (see schedule.h).
  std::vector<int32_t> successors(static_cast<size_t>(total_successors));
  if (total_successors > 0) {  // (a direct all-to-all has no deps: skip a pass over 4M)
    std::vector<int32_t> filled(n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (int32_t d : Deps(schedule, i)) {
        const size_t k = static_cast<size_t>(d);
        successors[static_cast<size_t>(nodes[k].first_successor + filled[k]++)] =
            static_cast<int32_t>(i);
      }
    }
  }

  TimingResult result;
  result.steps.resize(static_cast<size_t>(schedule.num_steps));
  for (int s = 0; s < schedule.num_steps; ++s) result.steps[static_cast<size_t>(s)].step = s;
  if (options.record_transfers) {
    result.transfer_start.assign(n, Time::Max());
    result.transfer_end.assign(n, Time::Max());
  }
  const std::vector<double> bytes_before = network.LinkBytes();

  using Pending = std::pair<int64_t, int64_t>;  // (completion ps, transfer), for local copies
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> local_queue;
  std::vector<int32_t> ready, batch, immediate;  // transfer indices
  for (size_t i = 0; i < n; ++i) {
    if (remaining[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  Time now = options.fixed_overhead;
  size_t completed = 0;

  auto start = [&](int64_t id) {
    const ChunkTransfer& t = transfers[static_cast<size_t>(id)];
    const int64_t bytes = schedule.Bytes(t);
    if (options.record_transfers) result.transfer_start[static_cast<size_t>(id)] = now;
    if (t.local()) {
      result.local_bytes += bytes;
      if (options.local_copy_bandwidth > 0 && bytes > 0) {
        const Time d = TransferTime(Bytes{bytes}, BytesPerSecond{options.local_copy_bandwidth});
        local_queue.push({(now + d).ps, id});
      } else {
        immediate.push_back(static_cast<int32_t>(id));
      }
      return;
    }
    ++result.network_transfers;
    result.network_bytes += bytes;
    StepTiming& step = result.steps[static_cast<size_t>(t.step)];
    step.start = std::min(step.start, now);
    ++step.transfers;
    step.bytes += bytes;
    network.Start(id, t.src, t.dst, Bytes{bytes}, now);
  };
  auto complete = [&](int64_t id) {
    ++completed;
    if (options.record_transfers) result.transfer_end[static_cast<size_t>(id)] = now;
    const Node& node = nodes[static_cast<size_t>(id)];
    if (node.step >= 0) {
      StepTiming& step = result.steps[static_cast<size_t>(node.step)];
      step.end = std::max(step.end, now);
    }
    for (int64_t k = node.first_successor; k < node.first_successor + node.num_successors; ++k) {
      const int32_t s = successors[static_cast<size_t>(k)];
      if (--remaining[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  };

  while (true) {
    // Start everything ready now; zero-time local transfers complete at once and may make more
    // transfers ready at the same time.
    while (!ready.empty() || !immediate.empty()) {
      batch.swap(ready);
      for (int32_t id : batch) start(id);
      batch.clear();
      std::vector<int32_t> done;
      done.swap(immediate);
      for (int32_t id : done) complete(id);
    }
    const Time network_next = network.NextEventTime();
    const Time local_next = local_queue.empty() ? Time::Max() : Time{local_queue.top().first};
    const Time next = std::min(network_next, local_next);
    if (next == Time::Max()) break;
    now = next;
    if (network_next == next) {
      // Completions come in batches (an AllToAll: millions at a few times); prefetching the
      // nodes a few completions ahead hides most of their cache misses.
      const std::vector<TransferId> done = network.Advance(next);
      constexpr size_t kAhead = 16;
      for (size_t i = 0; i < done.size(); ++i) {
        if (i + kAhead < done.size()) {
          __builtin_prefetch(&nodes[static_cast<size_t>(done[i + kAhead])]);
        }
        complete(done[i]);
      }
    }
    while (!local_queue.empty() && local_queue.top().first == next.ps) {
      const int64_t id = local_queue.top().second;
      local_queue.pop();
      complete(id);
    }
  }
  if (completed != n) {
    throw Error("schedule: " + std::to_string(n - completed) + " of " + std::to_string(n) +
                " transfers never started (their deps never complete)");
  }
  result.total = now;

  const std::vector<double>& bytes_after = network.LinkBytes();
  const std::vector<topo::Link>& links = topology.links();
  result.link_bytes.assign(links.size(), 0.0);
  for (size_t l = 0; l < links.size() && l < bytes_after.size(); ++l) {
    result.link_bytes[l] = bytes_after[l] - (l < bytes_before.size() ? bytes_before[l] : 0.0);
  }
  const double seconds = result.total.seconds();
  for (size_t l = 0; l < links.size(); ++l) {
    if (result.link_bytes[l] > result.busiest_link_bytes) {
      result.busiest_link_bytes = result.link_bytes[l];
      result.busiest_link = static_cast<int64_t>(l);
    }
    if (seconds > 0) {
      result.max_link_utilization =
          std::max(result.max_link_utilization,
                   result.link_bytes[l] / (links[l].bandwidth_bytes_per_s * seconds));
    }
  }
  if (result.busiest_link >= 0 && seconds > 0) {
    result.busiest_link_utilization =
        result.busiest_link_bytes /
        (links[static_cast<size_t>(result.busiest_link)].bandwidth_bytes_per_s * seconds);
  }
  return result;
}

}  // namespace podsim::sim
