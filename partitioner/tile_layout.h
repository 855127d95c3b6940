#pragma once
// TileLayout: the SPMD lowering's working form of a sharding. Every partition p of D holds one
// tile of a tensor: a tile coordinate per tensor dim, plus
//   - a partial index: when partial() > 1 the tensor is the reduction (partial_kind) of the
//     values held by the partial() partitions that differ only in this index (a dot or reduce
//     over a sharded dim before its AllReduce);
//   - a replica index: partitions that differ only in it hold the same data.
// Unlike ir::Sharding it can say "partial", it always covers exactly D partitions, and replica
// order carries no meaning (two layouts that put the same data on every partition are
// Equivalent). Shard geometry follows partitioner/sharding_util.h: a dim of extent G split t
// ways has shards of ceil(G / t), tile i starting at i * ceil(G / t); the part of a shard past
// G is padding whose contents are unspecified.
//
// Two forms, with the same answers:
//   - compact: the partition id p is cut into mixed-radix digits (ir::StridedMode) and each axis
//     (tile dim, partial, replica) owns some of them, major first: its coordinate is the value
//     of those digits. Layouts from iota shardings (ir/iota.h) are compact, and every operation
//     below keeps them compact (Rotated excepted) in O(rank), whatever D is; SpmdBuilder turns a
//     coordinate into a few divides of partition-id and IotaGroupsAlong gives the collectives'
//     replica groups in the iota form.
//   - tables: one entry per partition (explicit device lists, rotations, FromCoords).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/iota.h"
#include "ir/opcode.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace podsim::partitioner {

// ceil(global / tiles): the per-partition extent of a dim of `global` elements split `tiles` ways.
int64_t ShardExtent(int64_t global, int64_t tiles);

class TileLayout {
 public:
  // Everything replicated on `num_devices` partitions.
  static TileLayout Replicated(int64_t rank, int64_t num_devices);
  // The layout of `s` for a tensor of `rank` dims on `num_devices` partitions. Maximal is
  // treated as replicated (every partition computes the value). A tiled sharding that lists
  // fewer partitions than num_devices (Split(x, d, n) with n < D) keeps its tiles on the listed
  // partitions; the others hold extra replicas (the j-th unlisted one that of assignment slot
  // j mod listed). Throws podsim::Error when the listed count does not divide num_devices, a
  // partition is listed twice or does not exist, or the tile rank does not match; manual is
  // rejected (the caller handles it).
  static TileLayout FromSharding(const ir::Sharding& s, int64_t rank, int64_t num_devices);
  // A layout over `num_devices` partitions from each one's tile coordinates
  // (coords[p * tiles.size() + d] < tiles[d]) and partial index (< partial; empty = all 0).
  // Replica indices are assigned in partition order. nullopt when the partitions are not spread
  // evenly over the tiles (some tile/partial slot held by more partitions than another, or by
  // none).
  static std::optional<TileLayout> FromCoords(int64_t num_devices, std::vector<int64_t> tiles,
                                              int64_t partial, ir::ReduceKind partial_kind,
                                              const std::vector<int64_t>& coords,
                                              const std::vector<int64_t>& partial_index);
  // The layout whose dim i has the tiling (coordinates) of dim picks[i].second of
  // *picks[i].first, untiled when that is null; replicas in partition order. nullopt when the
  // picked dims do not spread the partitions evenly (FromCoords' rule). Compact when the picked
  // layouts are.
  static std::optional<TileLayout> FromPicks(
      const std::vector<std::pair<const TileLayout*, int64_t>>& picks, int64_t num_devices);

  int64_t rank() const { return static_cast<int64_t>(tiles_.size()); }
  int64_t num_devices() const { return num_devices_; }
  const std::vector<int64_t>& tiles() const { return tiles_; }
  int64_t tiles(int64_t d) const { return tiles_[d]; }
  int64_t partial() const { return partial_; }
  ir::ReduceKind partial_kind() const { return partial_kind_; }
  int64_t replicas() const { return replicas_; }
  int64_t Coord(int64_t device, int64_t dim) const {
    return t_ ? t_->coords[device * rank() + dim] : ir::ModesValue(axes_[dim], device);
  }
  std::vector<int64_t> Coords(int64_t device) const;
  int64_t PartialIndex(int64_t device) const {
    return t_ ? t_->partial_index[device] : ir::ModesValue(axes_[rank()], device);
  }
  int64_t ReplicaIndex(int64_t device) const {
    return t_ ? t_->replica[device] : ir::ModesValue(axes_[rank() + 1], device);
  }
  // The compact form's digits of dim d (or of the partial axis, d == kPartialAxis); requires
  // compact().
  bool compact() const { return t_ == nullptr; }
  const std::vector<ir::StridedMode>& Modes(int64_t d) const {
    return axes_[d == kPartialAxis ? rank() : d];
  }
  // Product of the tile counts.
  int64_t NumTiles() const;
  bool IsReplicated() const { return NumTiles() == 1 && partial_ == 1; }

  // Every partition holds the same data under both layouts (replica order may differ).
  bool Equivalent(const TileLayout& o) const;
  // Partition groups that differ only in the coordinate along tile dim `d` (or along the
  // partial axis, d == kPartialAxis), each ordered by that coordinate; groups ordered by their
  // first member.
  static constexpr int64_t kPartialAxis = -1;
  std::vector<std::vector<int64_t>> GroupsAlong(int64_t d) const;
  // The same groups in the iota form (O(rank)); nullopt unless compact().
  std::optional<ir::IotaReplicaGroupList> IotaGroupsAlong(int64_t d) const;

  // After an AllGather along dim d: d untiled, its partitions join the replicas.
  TileLayout Gathered(int64_t d) const;
  // After an AllReduce over the partial axis: the partial partitions join the replicas.
  TileLayout AllReduced() const;
  // After a ReduceScatter over the partial axis into dim d: tile i of d becomes tiles
  // i * partial() + j, j = partial index.
  TileLayout Scattered(int64_t d) const;
  // After an AllToAll that moves the split of dim a (tiled) to dim b (untiled): b takes a's
  // tile coordinates, a becomes untiled.
  TileLayout Swapped(int64_t a, int64_t b) const;
  // After an AllToAll among the partitions that differ only in the minor factor k of dim a's
  // coordinate (a = i * k + j, k dividing tiles(a)): a keeps i and j becomes the minor factor
  // of b's coordinate (b -> b * k + j). The AllToAll's groups are the result's
  // GroupsAlongMinor(b, k). Swapped(a, b) is k = tiles(a) with b untiled.
  TileLayout MovedFactor(int64_t a, int64_t b, int64_t k) const;
  // Partition groups that differ only in the minor factor k of their coordinate along tile dim
  // d (coordinate mod k; k divides tiles(d)), each ordered by it; groups ordered by their first
  // member. GroupsAlong(d) is k = tiles(d).
  std::vector<std::vector<int64_t>> GroupsAlongMinor(int64_t d, int64_t k) const;
  std::optional<ir::IotaReplicaGroupList> IotaGroupsAlongMinor(int64_t d, int64_t k) const;
  // Tile coordinate along d advanced by `shift` (mod tiles(d)) on every partition: the layout
  // after each partition passes its tile to the partition that held the previous one. Always
  // in the tables form.
  TileLayout Rotated(int64_t d, int64_t shift) const;
  // A layout of rank dim_map.size(): new dim i takes the tiling of dim dim_map[i] (-1 = untiled).
  // Dims in `partial_dims` become (part of) the partial axis with `kind`; every other dim's
  // partitions join the replicas.
  TileLayout Projected(const std::vector<int64_t>& dim_map,
                       const std::vector<int64_t>& partial_dims = {},
                       ir::ReduceKind kind = ir::ReduceKind::kAdd) const;

  // Requires partial() == 1. All tiles 1 gives {replicated}.
  ir::Sharding ToSharding() const;
  // ToSharding's text; a partial layout prints as its AllReduced() sharding plus what is
  // pending, e.g. "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate partial add over 2}".
  std::string ToString() const;

  // Start of `device`'s tile in dim d of a tensor of `global` extents.
  int64_t ShardStart(const ir::Shape& global, int64_t device, int64_t d) const;
  // Per-partition shape: ShardExtent per dim.
  ir::Shape ShardShape(const ir::Shape& global) const;

 private:
  // Per-partition tables; immutable once built, so copies of a layout share them.
  struct Tables {
    std::vector<int32_t> coords;         // [device * rank + dim]
    std::vector<int32_t> partial_index;  // [device]
    std::vector<int32_t> replica;        // [device]
  };

  // The tables of a compact layout.
  std::shared_ptr<const Tables> MakeTables() const;
  // This layout in the tables form.
  TileLayout WithTables() const;

  std::vector<int64_t> tiles_;
  int64_t partial_ = 1;
  ir::ReduceKind partial_kind_ = ir::ReduceKind::kAdd;
  int64_t replicas_ = 1;
  int64_t num_devices_ = 1;
  // Compact form (t_ null): digits of tile dims 0..rank-1, then of the partial axis, then of
  // the replica axis; together they cover 0..num_devices-1 once.
  std::vector<std::vector<ir::StridedMode>> axes_;
  std::shared_ptr<const Tables> t_;
};

}  // namespace podsim::partitioner
