#include "sim/collectives/timing.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/error.h"
#include "sim/collectives/schedule_executor.h"
#include "sim/collectives/schedule_index.h"

namespace podsim::sim {

TimingResult RunTiming(const Schedule& schedule, const topo::Topology& topology,
                       NetworkModel& network, const TimingOptions& options) {
  if (schedule.num_partitions > topology.num_cores()) {
    throw Error("schedule: " + std::to_string(schedule.num_partitions) +
                " partitions, but topology '" + topology.name() + "' has " +
                std::to_string(topology.num_cores()) + " cores");
  }
  const auto& transfers = schedule.transfers;
  const size_t n = transfers.size();
  const ScheduleIndex index = IndexSchedule(schedule);

  TimingResult result;
  result.steps.resize(static_cast<size_t>(schedule.num_steps));
  for (int s = 0; s < schedule.num_steps; ++s) result.steps[static_cast<size_t>(s)].step = s;
  if (options.record_transfers) {
    result.transfer_start.assign(n, Time::Max());
    result.transfer_end.assign(n, Time::Max());
  }
  const std::vector<double> bytes_before = network.LinkBytes();

  ScheduleExecutor::Callbacks callbacks;
  callbacks.started = [&](int32_t id, Time t) {
    const ChunkTransfer& x = transfers[static_cast<size_t>(id)];
    const int64_t bytes = schedule.Bytes(x);
    if (options.record_transfers) result.transfer_start[static_cast<size_t>(id)] = t;
    if (x.local()) {
      result.local_bytes += bytes;
      return;
    }
    ++result.network_transfers;
    result.network_bytes += bytes;
    StepTiming& step = result.steps[static_cast<size_t>(x.step)];
    step.start = std::min(step.start, t);
    ++step.transfers;
    step.bytes += bytes;
  };
  Time now;
  callbacks.done = [&](int32_t id, Time t) {
    if (options.record_transfers) result.transfer_end[static_cast<size_t>(id)] = t;
    const int32_t step = index.nodes[static_cast<size_t>(id)].step;
    if (step >= 0) {
      StepTiming& st = result.steps[static_cast<size_t>(step)];
      st.end = std::max(st.end, t);
    }
  };
  ScheduleExecutor executor(network, {options.fixed_overhead, options.local_copy_bandwidth});
  executor.Start(schedule, index, nullptr, {}, Time(), std::move(callbacks));
  for (Time t = executor.NextEventTime(); t != Time::Max(); t = executor.NextEventTime()) {
    now = t;
    executor.AdvanceTo(t);
  }
  if (const int64_t left = executor.unfinished_transfers(); left > 0) {
    throw Error("schedule: " + std::to_string(left) + " of " + std::to_string(n) +
                " transfers never started (their deps never complete)");
  }
  result.total = now;

  const std::vector<double>& bytes_after = network.LinkBytes();
  const std::vector<topo::Link>& links = topology.links();
  result.link_bytes.assign(links.size(), 0.0);
  for (size_t l = 0; l < links.size() && l < bytes_after.size(); ++l) {
    result.link_bytes[l] = bytes_after[l] - (l < bytes_before.size() ? bytes_before[l] : 0.0);
  }
  SetBusiestLink(topology, result);
  return result;
}

void SetBusiestLink(const topo::Topology& topology, TimingResult& result) {
  // The busiest link is the one busy for the longest time, bytes / bandwidth (on links of one
  // bandwidth, the one with the most bytes): so it is the link of max_link_utilization too.
  const std::vector<topo::Link>& links = topology.links();
  const double seconds = result.total.seconds();
  double busiest_seconds = 0;
  result.busiest_link = -1;
  result.busiest_link_bytes = 0;
  for (size_t l = 0; l < links.size() && l < result.link_bytes.size(); ++l) {
    const double busy = result.link_bytes[l] / links[l].bandwidth.value;
    if (result.link_bytes[l] > 0 && busy > busiest_seconds) {
      busiest_seconds = busy;
      result.busiest_link_bytes = result.link_bytes[l];
      result.busiest_link = static_cast<int64_t>(l);
    }
  }
  result.busiest_link_utilization = 0;
  result.max_link_utilization = 0;
  if (result.busiest_link >= 0 && seconds > 0) {
    result.busiest_link_utilization = busiest_seconds / seconds;
    result.max_link_utilization = result.busiest_link_utilization;
  }
}

}  // namespace podsim::sim
