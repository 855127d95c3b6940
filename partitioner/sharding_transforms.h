#pragma once
// Shardings re-expressed across ops: moving tile dims between tensor dims, dropping them into
// partial replication, reshaping them, merging two compatible partial shardings into a finer
// one, and the "more specific" order that sharding propagation uses.

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/sharding.h"

namespace podsim::partitioner {

using ir::Sharding;

// Number of tiles the data is cut into: product of the tensor tile dims (the trailing replicated
// tile dim excluded). 1 for replicated, maximal and manual.
int64_t PartitionedTiles(const Sharding& s);

// Canonical form of a sharding for a tensor of `rank` dims: a tiled sharding that cuts nothing
// (all tensor tile dims 1) becomes replicated; a trailing replicated dim of size 1 is dropped.
Sharding Canonicalize(Sharding s, int64_t rank);

// Re-expresses a sharding of a rank-`in_rank` tensor for a rank-`out_rank` tensor
// (out_rank == source_of_out_dim.size()): output dim j gets input dim source_of_out_dim[j]'s
// tiles (-1: output dim j is not cut). Input dims no output dim takes, and the old replicated
// dim, become the trailing replicated dim. Each input dim is taken at most once. Not tiled:
// returned unchanged (replicated stays replicated). Result is canonical.
Sharding MapTileDims(const Sharding& s, int64_t in_rank,
                     const std::vector<int64_t>& source_of_out_dim);

// Sharding of reshape(x: in_dims -> out_dims) given x's sharding `s` (use with the dims swapped
// for the reverse direction). Dims are grouped into the smallest runs whose element counts match
// (e.g. [8,6] -> [48] is one group). Within a group the tiles survive when the cut dims are the
// major part: a merge keeps them if every cut dim before the last is fully split (size == tiles)
// and the last cut dim divides evenly; a split assigns the tiles to the major output dims
// ([48] split 2 -> [8,6] gives [2,1]). A 1:1 group keeps any tiling, uneven included. Tiles
// that cannot be mapped become replication. Result is canonical.
Sharding ReshapeSharding(const Sharding& s, const std::vector<int64_t>& in_dims,
                         const std::vector<int64_t>& out_dims);

// The coarsest sharding that refines both `a` and `b` (each device's tile lies inside its
// tiles under `a` and under `b`), or nullopt when there is none: they cut one dim into
// different counts or different device groups, span different device sets, or are maximal or
// manual. Replicated merges with anything tiled. E.g. devices=[2,1,2]0,1,2,3 (rows over
// {0,1}|{2,3}) and devices=[1,2,2]0,2,1,3 (cols over {0,2}|{1,3}) merge into [2,2]0,1,2,3.
std::optional<Sharding> MergeShardings(const Sharding& a, const Sharding& b, int64_t rank);

// Total order used to break ties between equally specific shardings deterministically:
// kind, then tile dims, then devices, then the replicate flag, lexicographically.
bool CanonicalLess(const Sharding& a, const Sharding& b);

}  // namespace podsim::partitioner
