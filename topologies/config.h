#pragma once
// The topology config: one struct for every kind (torus, mesh, custom), read from JSON by
// FromJson and written back, fully resolved, by ToJson. Field reference: docs/config.md,
// section "topology". Defaults live in the member initializers below.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace podsim::topo {

// One twisted wraparound (TPU v4 style): crossing the wraparound of `dim` in the + direction also
// shifts each other coordinate e by offsets[e] (mod dims[e]); the - direction shifts back. TPU v4's
// k x k x 2k slices twist both short dimensions by k along the long one: dims [4,4,8],
// {dim 0, offsets [0,0,4]} and {dim 1, offsets [0,0,4]}. A twist may shift only dimensions that
// wrap and are not themselves twisted, so the wiring is the Cayley graph of an abelian group and
// the order in which wraps are crossed does not matter.
struct TwistConfig {
  int64_t dim = 0;               // the twisted dimension: wraparound, size >= 2
  std::vector<int64_t> offsets;  // one per dimension, 0 <= offsets[e] < dims[e], offsets[dim] == 0
};

// One bidirectional link of a custom topology: two directed links, a->b then b->a.
struct EdgeConfig {
  int64_t a = 0;
  int64_t b = 0;
  std::optional<double> link_bandwidth;  // B/s per direction; default: the topology's
  std::optional<double> hop_latency_us;  // default: the topology's
};

// What a custom topology's shortest paths minimise.
enum class RouteMetric : uint8_t { kHops, kLatency };

struct TopologyConfig {
  // "torus" (wraparound defaults to true), "mesh" (defaults to false) or "custom".
  std::string kind = "torus";
  // Printed name; empty: derived ("torus-4x4", "custom-16").
  std::string name;

  // --- torus / mesh ---
  std::vector<int64_t> dims;     // chips per dimension, 1..8 dimensions, each >= 1
  std::vector<bool> wraparound;  // one per dimension; empty: all true (torus) / false (mesh)
  // Physical links between two neighbour chips; they act as one link of n x the bandwidth.
  int64_t links_per_neighbor = 1;
  TieBreak tie_break = TieBreak::kSplit;  // destination exactly half a ring away
  std::vector<TwistConfig> twists;        // twisted wraparounds, at most one per dimension

  // --- custom ---
  int64_t num_chips = 0;  // chips 0 .. num_chips-1
  std::vector<EdgeConfig> edges;
  RouteMetric route_by = RouteMetric::kHops;

  // --- every kind ---
  int64_t cores_per_chip = 1;         // cores (partitions) per chip, >= 1
  double link_bandwidth = 1e11;       // ICI, bytes/s per link per direction, > 0
  double hop_latency_us = 1.0;        // ICI, microseconds per hop, > 0
  double on_chip_bandwidth = 4.5e11;  // between two cores of a chip, bytes/s per direction, > 0
  double on_chip_latency_us = 0.1;    // between two cores of a chip, microseconds, > 0
  // The chip generation's device preset (sim/device/presets/NAME.json) that a simulation on
  // this pod uses unless it is given another; empty: none named (the simulator's default).
  std::string device;
  // Comment keys of the JSON object ("_notes", "_assumptions"...), kept for Describe().
  nlohmann::json comments = nlohmann::json::object();

  // Reads an object (unknown keys and bad values are ConfigErrors naming `path`.key) and
  // validates it.
  static TopologyConfig FromJson(const nlohmann::json& json, const std::string& path);
  // Every field written out, so FromJson(ToJson()) gives the same config.
  nlohmann::json ToJson() const;
  // Semantic checks (ranges, lengths, custom graph connected); throws ConfigError naming
  // `path`.field. FromJson calls it; so do the topology constructors.
  void Validate(const std::string& path) const;

  bool is_grid() const { return kind == "torus" || kind == "mesh"; }
  // wraparound with the kind's default filled in (one entry per dimension).
  std::vector<bool> ResolvedWraparound() const;
  // Chips x cores per chip of a validated config (bounded by Validate, no overflow).
  int64_t NumCores() const;
  // name, or the derived name when empty.
  std::string ResolvedName() const;
};

const char* TieBreakName(TieBreak t);  // "positive", "split", "alternate"

// Picoseconds in `us` microseconds, at least 1.
int64_t MicrosToPs(double us);

}  // namespace podsim::topo
