#pragma once
// The GShard annotation API (paper section 3.2): a model written for one device marks a few
// tensors with how they are laid out over devices; propagation infers the rest.
//
//   auto* inputs = Split(b.Parameter(0, Shape(F32, {G, S, M}), "inputs"), 0, D);
//   auto* wg = Replicate(b.Parameter(1, Shape(F32, {M, E}), "wg"));
//   Shard(w, {2, 2}, {0, 2, 1, 3});   // 2x2 tiles, column-major device order
//
// Each call sets x->sharding and returns x. Annotating an instruction that already carries a
// different sharding is a contradiction and throws podsim::Error naming the instruction;
// repeating the same annotation is allowed. Checks that need the device count (devices that do
// not exist, more parts than devices) are ValidateShardings', which PropagateShardings runs
// first.
//
// Manual partitioning (paper 3.2): AutoToManual / ManualToAuto bracket per-partition code that
// the partitioner leaves as written (ir/instruction.h has the ops' semantics):
//
//   auto* local = AutoToManual(b, x, Sharding::TiledIota({4, 1}));    // x's shard: [G/4, M]
//   auto* y = ... per-partition code on local, collectives allowed ...
//   auto* out = ManualToAuto(b, y, Sharding::TiledIota({4, 1}), {G, M});
//
// Every instruction computed from an auto-to-manual result (up to a manual-to-auto) is in the
// manual region and gets {manual}; auto values it reads are made whole (replicated) first.

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "ir/builder.h"

#include "ir/instruction.h"
#include "ir/module.h"
#include "partitioner/sharding_util.h"

namespace podsim::partitioner {

// Tiles x along `dim` into n parts over devices 0..n-1 (every other tile dim 1). Uneven dims are
// allowed: 15 split 2 ways gives shards of 8 (the last one padded). n >= 1.
ir::Instruction* Split(ir::Instruction* x, int64_t dim, int64_t n);

// Marks x replicated: every device holds all of it.
ir::Instruction* Replicate(ir::Instruction* x);

// Tiles x by `tile_dims` (one per dim of x, plus a trailing replicated dim when
// last_tile_dim_replicate) with `devices` the tile assignment in row-major order: any order, no
// repeats, product(tile_dims) entries. devices=[2,1,2]0,1,2,3 with last_tile_dim_replicate
// splits dim 0 in two, tile 0 held by {0,1} and tile 1 by {2,3}.
ir::Instruction* Shard(ir::Instruction* x, std::vector<int64_t> tile_dims,
                       std::vector<int64_t> devices, bool last_tile_dim_replicate = false);

// Sets x's sharding to `s` after the same checks as Shard (any kind but manual).
ir::Instruction* Annotate(ir::Instruction* x, const ir::Sharding& s);

// Enters a manual region: x's shard under `tiling` (tiled over all devices, or replicated).
ir::Instruction* AutoToManual(ir::Builder& b, ir::Instruction* x, const ir::Sharding& tiling);
// Leaves it: the tensor of `full_dims` tiled by the per-partition values `y`.
ir::Instruction* ManualToAuto(ir::Builder& b, ir::Instruction* y, const ir::Sharding& tiling,
                              std::vector<int64_t> full_dims);

// The instructions of the module's manual regions: auto-to-manual results and everything
// computed from them up to (not including) manual-to-auto, with the whole body of a loop that
// carries a manual value, plus the values only the region reads (e.g. its partition-id
// arithmetic; outside a region partition-id is 0, the program being written for one device).
std::unordered_set<const ir::Instruction*> ManualRegion(const ir::Module& module);

// Makes partition-id mean the same to a manual region whatever else reads it: inside a region
// it is the partition's id, outside it is 0 (the auto program is written for one device), so a
// value computed from partition-id alone (no parameter) that both the region and the auto
// program read is cloned for the region (right after the original), and the region reads the
// clone. Without this, adding an unrelated outside use would move the shared value out of the
// region (ManualRegion keeps only values the region alone reads) and change what the region
// computes. PropagateShardings runs it first; returns whether anything was cloned.
bool IsolateRegionPartitionIds(ir::Module& module);

// Checks every sharding in the module against a mesh of `num_devices` devices (>= 1), before
// anything else runs: tile rank matches the shape; tile dims >= 1 and their product equals the
// device count listed; no dim (and no sharding) split into more parts than devices; devices
// unique and in [0, num_devices); maximal names an existing device; tuple-shaped instructions
// carry only {replicated} (or {manual}); {manual} only inside a manual region, and nothing else
// there; a manual region's tilings span exactly the mesh. Throws podsim::Error naming the
// computation and instruction.
void ValidateShardings(const ir::Module& module, int64_t num_devices);
void ValidateShardings(const ir::Module& module, const DeviceMesh& mesh);

}  // namespace podsim::partitioner
