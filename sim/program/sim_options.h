#pragma once
// Options of a program simulation (sim/program/simulate.h), and their JSON form:
//
//   {"device": "tpu-v3-core" | {...DeviceSpec fields, optional "preset"},
//    "network": {"model": "flow", "options": {...network_factory.h options}},
//    "collectives": {"all-to-all": {"algorithm": "direct", "chunks": 1}, ...},
//    "collective_overhead_us": 0, "exact_collective_max_transfers": 300000,
//    "memoize_collectives": true,
//    "fusion": true, "async_collectives": true, "num_partitions": 0, "category_depth": 1,
//    "stragglers": {"5": 1.5},
//    "trace": {"enabled": false, "devices": [], "max_links": 16, "max_events": 1000000},
//    "functional": false, "functional_seed": 1}
//
// Every key is optional; defaults are the member initializers below. Unknown keys and bad values
// are errors naming the JSON path ("sim.device.hbm_bandwidth: must be > 0, got 0").

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/literal.h"
#include "sim/collectives/algorithms.h"
#include "sim/device/device.h"
#include "sim/network/network_factory.h"

namespace podsim::sim {

struct TraceOptions {
  bool enabled = false;
  // Devices that get a compute track (and a collectives track). Empty: all devices of a pod of
  // <= 8 partitions, else 0, 1, D/2 and D-1 (and every straggler).
  std::vector<int64_t> devices;
  int64_t max_links = 16;         // tracks for the busiest links, >= 0
  int64_t max_events = 1000000;   // per device; later events are dropped (counted), >= 1
};

struct SimOptions {
  DeviceSpec device;
  std::string network = "flow";  // NetworkModelNames(): "analytic", "flow", "packet"
  NetworkOptions network_options;
  // Algorithm per collective kind ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
  // "collective-permute"); kinds not listed use DefaultAlgorithm.
  std::map<std::string, AlgorithmOptions> collective_algorithms;
  double collective_overhead_us = 0;  // fixed cost of each collective before its first transfer
  // A collective whose "direct" schedule would exceed this many network transfers takes its
  // alone-on-the-network time from the closed form (sim/program/collective_memo.h), >= 0.
  int64_t exact_collective_max_transfers = 300000;
  // Reuse a collective's alone-on-an-idle-network time (exact; off only to measure it).
  bool memoize_collectives = true;
  bool fusion = true;
  bool async_collectives = true;
  int64_t num_partitions = 0;  // partition p on core p; 0: every core of the topology
  int category_depth = 1;      // scope components that form a category, >= 1
  // Compute-time factor per device (a straggler: 1.5 = 50% slower compute), > 0.
  std::map<int64_t, double> stragglers;
  TraceOptions trace;
  // Functional mode: carry real tensors (small pods only).
  bool functional = false;
  uint64_t functional_seed = 1;  // ir::RandomArguments seed when functional_args is empty
  // Per partition, the entry arguments by parameter number (not part of the JSON form).
  std::vector<std::vector<ir::Literal>> functional_args;

  // Reads the JSON form; errors name `path`.key.
  static SimOptions FromJson(const nlohmann::json& json, const std::string& path = "sim");
  // The fully resolved options (device spec expanded; functional_args omitted).
  nlohmann::json ToJson() const;
  // Checks the values a caller may have set in code; throws naming `path`.field.
  void Validate(const std::string& path = "sim") const;
};

}  // namespace podsim::sim
