#pragma once
// What the program runner needs from a collective's schedule, computed once per distinct
// collective:
//  - ScheduleData: a schedule with its index (sim/collectives/schedule_index.h) and its
//    participants, to run it on the shared network (sim/program/shared_network.h);
//  - CollectiveMemo: the collective's duration when it runs alone on an otherwise idle network
//    with every group starting together, per partition, and the bytes it puts on each link.
//    Exact (the schedule run on a fresh network model of the configured kind, as RunTiming
//    does; the torus algorithm over every core of a symmetric pod on the flow model from chip
//    0's transfers, TimeSymmetricTorus in sim/collectives/symmetric_timing.h) unless the schedule
//    would exceed exact_max_transfers network transfers and the algorithm is "direct", whose closed
//    form (sim/collectives/closed_form.h) agrees with the flow model within a few hop latencies;
//    then every member finishes at the closed-form time and the link bytes come from routing each
//    pair's bytes.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/units.h"
#include "sim/collectives/schedule.h"
#include "sim/collectives/schedule_index.h"
#include "sim/network/network_factory.h"
#include "sim/program/program_plan.h"
#include "topologies/topology.h"

namespace podsim::sim {

// A collective's schedule, indexed, and the partitions that take part in it.
struct ScheduleData {
  Schedule schedule;
  ScheduleIndex index;
  std::vector<int64_t> participants;  // partitions of its groups (or permute pairs), sorted
};

// Builds and indexes the schedule of `spec` (its groups as given) on `topology`.
std::shared_ptr<const ScheduleData> MakeScheduleData(const CollectiveSpec& spec,
                                                     const topo::Topology& topology,
                                                     const AlgorithmOptions& algorithm);

struct MemoOptions {
  std::string network = "flow";
  NetworkOptions network_options;
  Time fixed_overhead;           // per collective, before its first transfer
  double local_copy_bandwidth = 0;  // B/s of local copies / reductions (0: free)
  int64_t exact_max_transfers = 300000;
};

struct CollectiveMemo {
  bool closed_form = false;
  Time total;                       // start to the last member's completion
  std::vector<Time> done;              // per partition: completion after the start (members)
  std::vector<double> link_bytes;      // per directed link
  int64_t network_transfers = 0;       // of the schedule (estimated for the closed form)
};

// The memo of `plan`'s collective (all its groups starting together on an idle network).
CollectiveMemo ComputeMemo(const CollectivePlan& plan, const topo::Topology& topology,
                           const MemoOptions& options);

// A key equal for collectives whose memo is the same (kind, sizes, groups, pairs, algorithm).
std::string MemoSignature(const CollectivePlan& plan);

}  // namespace podsim::sim
