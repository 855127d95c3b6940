#pragma once
// The timing run of one collective alone: its Schedule executed on a NetworkModel by the schedule
// executor (sim/collectives/schedule_executor.h, which states the semantics), with per-step and
// per-link statistics.

#include <cstdint>
#include <vector>

#include "base/units.h"
#include "sim/collectives/schedule.h"
#include "sim/network/network_model.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct TimingOptions {
  // Fixed cost of the collective (launch, synchronisation): the first transfers start after it.
  Time fixed_overhead;
  // Bytes/s of a local copy or reduction (e.g. the HBM bandwidth); 0: local transfers are free.
  double local_copy_bandwidth = 0;
  // Keep each transfer's start and end times (TimingResult::transfer_start / transfer_end).
  bool record_transfers = false;
};

struct StepTiming {
  int step = 0;
  Time start = Time::Max();  // earliest start of one of its network transfers
  Time end;               // latest completion of one of its network transfers
  int64_t transfers = 0;     // network transfers of the step
  int64_t bytes = 0;         // their bytes
};

struct TimingResult {
  Time total;                  // fixed overhead + until the last transfer completes
  std::vector<StepTiming> steps;  // one per schedule step, in order
  int64_t network_transfers = 0;
  int64_t network_bytes = 0;  // bytes of network transfers (each counted once)
  int64_t local_bytes = 0;    // bytes of local copies / reductions
  // Bytes each directed link carried during this run (the model's LinkBytes growth), by link id.
  std::vector<double> link_bytes;
  // The link busy for the longest time, bytes / bandwidth (-1: no network traffic); on links of
  // one bandwidth, the one that carried the most bytes.
  int64_t busiest_link = -1;
  double busiest_link_bytes = 0;
  // Busiest link's bytes / (its bandwidth * total), in [0, 1]; max_link_utilization is the same
  // number (the largest utilisation over all links is the busiest link's).
  double busiest_link_utilization = 0;
  double max_link_utilization = 0;
  std::vector<Time> transfer_start;  // per transfer, with TimingOptions::record_transfers
  std::vector<Time> transfer_end;
};

// Runs `schedule` on `network` (over `topology`, which must be the network's) from time 0; the
// network must be idle and its time <= 0. Throws podsim::Error if the schedule's partitions do
// not exist on the topology or its deps never let some transfer start.
TimingResult RunTiming(const Schedule& schedule, const topo::Topology& topology,
                       NetworkModel& network, const TimingOptions& options = {});

// Sets busiest_link, busiest_link_bytes and the utilisations from result.link_bytes and
// result.total (RunTiming calls it; so do the timings that skip the executor).
void SetBusiestLink(const topo::Topology& topology, TimingResult& result);

}  // namespace podsim::sim
