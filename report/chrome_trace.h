#pragma once
// The one Chrome trace writer (traceEvents JSON; opens in Perfetto and chrome://tracing), for
// program runs (sim/program/trace.h) and for a single collective's link activity.

#include <string>

#include <nlohmann/json.hpp>

#include "sim/collectives/schedule.h"
#include "sim/collectives/timing.h"
#include "sim/program/trace.h"
#include "topologies/topology.h"

namespace podsim::report {

using sim::TraceData;

// The Chrome trace JSON object {"traceEvents": [...], "displayTimeUnit": "ns", ...}. Times in
// microseconds; deterministic for a deterministic run.
nlohmann::json ChromeTrace(const TraceData& trace);
// Writes ChromeTrace to `path`; throws podsim::Error if the file cannot be written.
void WriteChromeTrace(const TraceData& trace, const std::string& path);

// One collective run alone: one track (tid) per directed link that carried traffic, one slice per
// transfer on each link of its route, at most `max_events` slices (then "truncated_after_events").
nlohmann::json CollectiveLinkTrace(const sim::Schedule& schedule, const sim::TimingResult& timing,
                                   const topo::Topology& topology,
                                   const std::string& topology_name, size_t max_events);

}  // namespace podsim::report
