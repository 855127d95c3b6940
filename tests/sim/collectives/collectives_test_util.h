#pragma once
// Helpers for the collective tests: grid topologies from configs, integer-valued inputs (so sums
// are exact in float), and the functional check of a schedule against the reference.

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/functional.h"
#include "sim/collectives/reference.h"
#include "sim/collectives/schedule_check.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "topologies/config.h"
#include "topologies/load.h"

namespace podsim::sim::testing {

// A torus / mesh of chips; wraparound per dimension.
inline std::unique_ptr<topo::Topology> Grid(std::vector<int64_t> dims, std::vector<bool> wrap,
                                            int64_t cores_per_chip = 1, double bandwidth = 1e11,
                                            double hop_latency_us = 1.0) {
  topo::TopologyConfig config;
  bool all_wrap = true;
  for (bool w : wrap) all_wrap = all_wrap && w;
  config.kind = all_wrap ? "torus" : "mesh";
  config.dims = std::move(dims);
  config.wraparound = std::move(wrap);
  config.cores_per_chip = cores_per_chip;
  config.link_bandwidth = bandwidth;
  config.hop_latency_us = hop_latency_us;
  return topo::MakeTopology(config);
}

// A torus of chips (every dimension wrapped) with twisted wraparounds: twists[k] = {dim,
// offsets}, as topo::TwistConfig.
inline std::unique_ptr<topo::Topology> TwistedGrid(std::vector<int64_t> dims,
                                                   std::vector<topo::TwistConfig> twists,
                                                   int64_t cores_per_chip = 1,
                                                   double bandwidth = 1e11) {
  topo::TopologyConfig config;
  config.kind = "torus";
  config.wraparound.assign(dims.size(), true);
  config.dims = std::move(dims);
  config.twists = std::move(twists);
  config.cores_per_chip = cores_per_chip;
  config.link_bandwidth = bandwidth;
  return topo::MakeTopology(config);
}

// The schedule of `algorithm` for `kind` over `elements` elements per partition, every core.
inline Schedule Build(const topo::Topology& topology, CollectiveKind kind, int64_t elements,
                      const std::string& algorithm, int chunks = 1) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.elements = elements;
  AlgorithmOptions options;
  options.algorithm = algorithm;
  options.chunks = chunks;
  return BuildSchedule(spec, topology, options);
}

// The time of `algorithm`'s schedule for `spec` on the flow network, in microseconds.
inline double FlowMicros(const CollectiveSpec& spec, const topo::Topology& topology,
                         const std::string& algorithm) {
  AlgorithmOptions options;
  options.algorithm = algorithm;
  const Schedule schedule = BuildSchedule(spec, topology, options);
  auto network = MakeNetworkModel("flow", topology, NetworkOptions{});
  return RunTiming(schedule, topology, *network).total.micros();
}

// inputs[p][e] = p * 512 + e (distinct, exact in float; sums of <= 128 of them stay exact).
inline PartitionBuffers MakeInputs(int64_t partitions, int64_t elements) {
  PartitionBuffers inputs(static_cast<size_t>(partitions));
  for (int64_t p = 0; p < partitions; ++p) {
    for (int64_t e = 0; e < elements; ++e) {
      inputs[static_cast<size_t>(p)].push_back(static_cast<float>(p * 512 + e % 512));
    }
  }
  return inputs;
}

// Network transfers only.
inline int64_t NetworkTransfers(const Schedule& s) {
  int64_t count = 0;
  for (const ChunkTransfer& t : s.transfers) count += t.local() ? 0 : 1;
  return count;
}

// Bytes each partition sends over the network.
inline std::vector<int64_t> BytesSent(const Schedule& s) {
  std::vector<int64_t> sent(static_cast<size_t>(s.num_partitions), 0);
  for (const ChunkTransfer& t : s.transfers) {
    if (!t.local()) sent[static_cast<size_t>(t.src)] += s.Bytes(t);
  }
  return sent;
}

// Builds the schedule and checks that it is well formed, race-free (small schedules), and that
// its functional run, in schedule order and in a random topological order, equals the reference.
inline void CheckFunctional(const CollectiveSpec& spec, const topo::Topology& topology,
                            const AlgorithmOptions& options, const std::string& label) {
  INFO(label);
  const Schedule schedule = BuildSchedule(spec, topology, options);
  ValidateSchedule(schedule);
  if (schedule.transfers.size() <= 6000) {
    const auto race = FindRace(schedule);
    CHECK_MESSAGE(!race.has_value(), (race ? *race : std::string()));
  }
  const PartitionBuffers inputs = MakeInputs(topology.num_cores(), spec.elements);
  const PartitionBuffers expected = ReferenceCollective(spec, topology.num_cores(), inputs);
  CHECK(RunFunctional(schedule, inputs) == expected);
  CHECK(RunFunctional(schedule, inputs, /*order_seed=*/12345) == expected);
}

}  // namespace podsim::sim::testing
