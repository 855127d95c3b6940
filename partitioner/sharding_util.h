#pragma once
// Arithmetic on ir::Sharding: tile counts, per-shard shapes (ceil division, so uneven dims get
// padded shards), which tile a device holds and where it starts.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "ir/sharding.h"

namespace podsim::partitioner {

using ir::Shape;
using ir::Sharding;

// Devices the sharding spreads over (tiled: product of tile dims; others: 1).
int64_t NumTiles(const Sharding& s);
// Tile dims that partition tensor dims (drops the trailing replicated dim); all 1s when not
// tiled. Size == shape rank.
std::vector<int64_t> TensorTileDims(const Sharding& s, int64_t rank);
// Number of replicas of each tile (trailing replicated tile dim, else 1).
int64_t ReplicationFactor(const Sharding& s);
// Per-partition shape: ceil(dim / tiles) per dim.
Shape ShardShape(const Shape& global, const Sharding& s);
// Devices holding the same tile as `device` (replica group within a partially replicated
// sharding); {device} when not replicated.
std::vector<int64_t> ReplicaGroupOf(const Sharding& s, int64_t device);

// A logical device mesh with named axes, e.g. {x=4, y=2}: device id = row-major index over
// axis coordinates (last axis fastest).
struct DeviceMesh {
  std::vector<std::string> axis_names;
  std::vector<int64_t> axis_sizes;

  int64_t num_devices() const;
  // Parses "4x2" (axes named x, y, z, w) or "x=4,y=2"; throws podsim::Error on bad text.
  static DeviceMesh Parse(const std::string& text);
  std::vector<int64_t> Coordinates(int64_t device) const;
  int64_t DeviceAt(const std::vector<int64_t>& coords) const;
  std::string ToString() const;  // "x=4,y=2"
};

}  // namespace podsim::partitioner
