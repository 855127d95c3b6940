#pragma once
// A step-by-step account of a schedule for people (podsim collective --explain): per step, its
// transfers (which chunk goes from where to where, what is reduced, over which links) and the
// bytes each link carries, with utilisation when a timing run is given. Meant for small pods.

#include <cstddef>
#include <string>
#include <vector>

#include "sim/collectives/schedule.h"
#include "sim/collectives/timing.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct ExplainOptions {
  size_t max_transfers_per_step = 32;  // more are summarised as "... and N more"
  size_t max_links_per_step = 16;      // the busiest links of each step
  bool show_local = false;             // list local copies / reductions too
};

// Bytes each directed link carries in each step: [step][link id]. A transfer split over several
// paths (tie-split routing) counts its fraction on each.
std::vector<std::vector<double>> StepLinkBytes(const Schedule& schedule,
                                               const topo::Topology& topology);

// "link 12 (chip 3 -> chip 4, dim 0 +)" / "link 40 (core 6 -> core 7, on chip)".
std::string DescribeLink(const topo::Topology& topology, int64_t link);

// The text. `timing`, if given, must be RunTiming's result for this schedule: each step then
// shows its time span and each link its utilisation over that span.
std::string ExplainSchedule(const Schedule& schedule, const topo::Topology& topology,
                            const TimingResult* timing = nullptr,
                            const ExplainOptions& options = {});

}  // namespace podsim::sim
