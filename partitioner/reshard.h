#pragma once
// Reshard: the only place in the SPMD lowering that emits collectives. A handler asks for the
// layout it needs; Reshard plans the cheapest sequence of steps from the value's layout to it
// and emits them, recording for every collective which instruction needed it and why.
//
// Steps (each a single, D-independent number of instructions):
//   local slice      the target tiles are inside the tiles each partition already holds
//                    (replicated -> tiled, coarse -> fine): pad if needed, dynamic-slice at a
//                    per-partition offset (partition-id arithmetic for compact layouts,
//                    an s32[D] table indexed by partition-id for layouts in the tables form).
//   all-gather       one tiled dim becomes whole: AllGather over the partitions along that tile
//                    dim, then slice off padding.
//   all-to-all       the split moves from dim a to dim b (MoE dispatch/combine): pad b to a
//                    multiple of the tile count, AllToAll(split=b, concat=a), slice a's padding.
//   permute          same tiles on other partitions: CollectivePermute.
//   all-reduce       a partial value (dot or reduce over a sharded dim) becomes whole.
//   reduce-scatter   a partial value becomes whole and split over the partial partitions along
//                    a dim the target tiles.
// Shift (the halo exchange of partitioner/halo.h) is the other entry point: a CollectivePermute
// of a slab to the neighbouring tile along one dim, logged like the steps above.
// Planning tries, in order: identity; local slice; permute (same tile counts); for a partial
// source, reduce-scatter into each dim or all-reduce, then the rest; all-to-all for each dim
// pair whose split moves; all-gather of the dims whose tiling differs, then local slice; permute
// to a coarsening of the target then local slice. It returns the plan of least cost (bytes each
// partition sends, plus a fixed latency per collective; see ReshardCostModel), first found on
// ties. Padding (past the global extent of uneven shards) is never read as data: all-gather and
// all-to-all slice it off, local slices only read it into padding.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/instruction.h"
#include "partitioner/spmd_builder.h"
#include "partitioner/tile_layout.h"

namespace podsim::partitioner {

// Why a collective is in the SPMD program.
struct CollectiveProvenance {
  std::string collective;  // its name in the SPMD module, e.g. "all-gather.3"
  std::string user;        // the input-module instruction that needed it, e.g. "dot.2"
  std::string use;         // "operand 1", "result", ...
  std::string from, to;    // the layouts it converts between (TileLayout::ToString)
  std::string note;        // "" or more detail, e.g. "fallback: slice needs dims {0} whole"

  // "all-gather.3 <- %dot.2 operand 1: {devices=[1,4]0,1,2,3} -> {replicated} (note)".
  std::string ToString() const;
};

// What a reshard is for; copied into the provenance of the collectives it emits.
struct ReshardReason {
  std::string user;
  std::string use;
  std::string note;
};

// Estimated cost of communication: per-partition bytes sent, plus `collective_latency_bytes`
// per collective so that of two plans moving the same bytes the one with fewer collectives wins.
struct ReshardCostModel {
  double collective_latency_bytes = 4096;
};

// A value of the SPMD program: its local (per-partition) instruction, the global shape it is a
// shard of, and how the shards are laid out. local->shape == layout.ShardShape(global).
struct ShardedValue {
  ir::Instruction* local = nullptr;
  ir::Shape global;
  TileLayout layout = TileLayout::Replicated(0, 1);
};

class Resharder {
 public:
  Resharder(ReshardCostModel cost_model, std::vector<CollectiveProvenance>* log)
      : cost_model_(cost_model), log_(log) {}

  // Estimated cost of Reshard(v, to) for a value of shape `global` laid out as `from`.
  double Cost(const ir::Shape& global, const TileLayout& from, const TileLayout& to) const;
  // `v` laid out as `to`, emitted into `sb`'s computation. Collectives are logged with `why`.
  ShardedValue Reshard(SpmdBuilder& sb, const ShardedValue& v, const TileLayout& to,
                       const ReshardReason& why) const;
  // Halo exchange step (partitioner/halo.h): every partition sends `piece` (any local value,
  // typically a slab cut from its tile of a value laid out as `layout`) to the partition whose
  // tile coordinate along layout dim `dim` is its own plus `shift`, with the same other
  // coordinates, partial index and replica index. A partition with no such source receives
  // zeros. One CollectivePermute, logged with `why` (the note says which halo it carries);
  // `piece` itself when `shift` moves nothing.
  ir::Instruction* Shift(SpmdBuilder& sb, ir::Instruction* piece, const TileLayout& layout,
                         int64_t dim, int64_t shift, const ReshardReason& why) const;

 private:
  ReshardCostModel cost_model_;
  std::vector<CollectiveProvenance>* log_;
};

}  // namespace podsim::partitioner
