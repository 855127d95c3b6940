#pragma once
// One collective on one pod, as `podsim collective` and the collective sweeps run it: a JSON
// config (topology, collective, algorithm, network) resolved into a timing run.
//
// Config keys (all but "topology" and "op" optional):
//   topology    preset name, file, or object (docs/config.md "topology")
//   op          all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute
//   bytes       per-partition payload (input buffer) in bytes, default 8 MiB
//   dtype_bytes element width in bytes, default 4
//   algorithm   "default", "best" (every algorithm that applies is timed; the fastest is the
//               result, the others are listed) or a name from sim/collectives/algorithms.h
//   chunks      pipelining depth, default 1
//   network     analytic | flow | packet, default flow
//   network_options  {packet_bytes, switching, aggregate_flows} (sim/network/network_factory.h)
//   overhead_us fixed cost per collective, default 0
//   replica_groups   [[0,1],[2,3]]; default one group of every partition
//   source_target_pairs  [[0,1],[1,0]] (collective-permute)
//   partitions  use only cores 0..partitions-1 as one group (default: every core)

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/collectives/bounds.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "topologies/topology.h"

namespace podsim::experiments {

struct CollectiveRunConfig {
  nlohmann::json topology;  // expanded object
  sim::CollectiveKind kind = sim::CollectiveKind::kAllReduce;
  int64_t bytes = 8 << 20;
  int64_t dtype_bytes = 4;
  std::string algorithm = "default";
  int64_t chunks = 1;
  std::string network = "flow";
  sim::NetworkOptions network_options;
  double overhead_us = 0;
  int64_t partitions = 0;  // 0: every core
  std::vector<std::vector<int64_t>> replica_groups;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;

  // Reads the keys above; errors name `path`.key.
  static CollectiveRunConfig FromJson(const nlohmann::json& json, const std::string& path);
  nlohmann::json ToJson() const;
};

// One algorithm tried by "best": its time, or why it does not apply.
struct AlgorithmCandidate {
  std::string algorithm;
  double time_us = 0;
  std::string error;  // non-empty: it does not apply (time_us unset)
};

struct CollectiveRunResult {
  std::string topology_name;
  std::string algorithm;      // resolved ("default" replaced)
  int64_t partitions = 0;     // members taking part
  // The schedule timed; when schedule_built is false (a direct all-to-all timed by symmetry,
  // sim/collectives/symmetric_timing.h) only its header (kind, algorithm, partitions, steps):
  // EnsureSchedule builds the rest.
  sim::Schedule schedule;
  bool schedule_built = true;
  sim::TimingResult timing;
  double time_us = 0;
  double algorithm_bandwidth = 0;  // payload bytes / time, B/s
  double bus_bandwidth = 0;        // algorithm bandwidth x the collective's bus factor
  sim::CollectiveBounds bounds;     // lower bounds (sim/collectives/bounds.h)
  // With algorithm "best": every algorithm of the kind, in AlgorithmNames order; the result's
  // algorithm is the fastest (the first of equals).
  std::vector<AlgorithmCandidate> candidates;

  // The figures of the run: time_us, algorithm, partitions, topology, algorithm_bandwidth_Bps,
  // bus_bandwidth_Bps, max_link_utilization, network_transfers, bounds; with "best",
  // candidates: [{algorithm, time_us} or {algorithm, error}].
  nlohmann::json ToJson() const;
};

// Builds the topology from config.topology and runs. `topology_out`, if given, receives it.
CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  std::unique_ptr<topo::Topology>* topology_out = nullptr);
// Runs on `topology`, which the caller built from config.topology (it is not read again).
CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  const topo::Topology& topology);

// The run as `podsim collective --json` prints it: result.ToJson() plus the op, bytes, network,
// busiest link, step count and the resolved config.
nlohmann::json CollectiveRunJson(const CollectiveRunConfig& config,
                                 const CollectiveRunResult& result);

// Builds result.schedule if RunCollective left it out (schedule_built false); for --explain.
void EnsureSchedule(const CollectiveRunConfig& config, const topo::Topology& topology,
                    CollectiveRunResult& result);

// Times result.schedule again with each transfer's start and end recorded
// (TimingResult::transfer_start / transfer_end) and stores it in result.timing; the first run
// leaves them out to keep memory low on big pods.
void RecordTransferTimes(const CollectiveRunConfig& config, const topo::Topology& topology,
                         CollectiveRunResult& result);

}  // namespace podsim::experiments
