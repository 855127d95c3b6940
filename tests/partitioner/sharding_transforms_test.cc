// Sharding arithmetic used by propagation: moving tile dims, reshaping, merging. Expected device
// lists are worked out by hand from the row-major tile arrays in the comments.

#include <doctest/doctest.h>

#include "partitioner/sharding_transforms.h"

namespace podsim::partitioner {
namespace {

Sharding T(std::vector<int64_t> tiles, std::vector<int64_t> devices, bool rep = false) {
  return Sharding::Tiled(std::move(tiles), std::move(devices), rep);
}

TEST_CASE("PartitionedTiles counts data tiles, not replicas") {
  CHECK(PartitionedTiles(Sharding::Replicated()) == 1);
  CHECK(PartitionedTiles(Sharding::Maximal(3)) == 1);
  CHECK(PartitionedTiles(T({2, 2}, {0, 1, 2, 3})) == 4);
  CHECK(PartitionedTiles(T({2, 1, 2}, {0, 1, 2, 3}, true)) == 2);
}

TEST_CASE("Canonicalize: nothing cut is replicated; a trailing replication of 1 goes") {
  CHECK(Canonicalize(T({1, 1, 4}, {0, 1, 2, 3}, true), 2) == Sharding::Replicated());
  CHECK(Canonicalize(T({2, 1}, {0, 1}), 2) == T({2, 1}, {0, 1}));
  CHECK(Canonicalize(T({2, 1, 1}, {0, 1}, true), 2) == T({2, 1}, {0, 1}));
}

TEST_CASE("MapTileDims transposes the tile array and drops unmapped dims into replication") {
  // [2,4] array rows {0,1,2,3},{4,5,6,7}; transposed: rows {0,4},{1,5},{2,6},{3,7}.
  const Sharding s = T({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(MapTileDims(s, 2, {1, 0}) == T({4, 2}, {0, 4, 1, 5, 2, 6, 3, 7}));
  // Dropping dim 1: each row's devices become one replica group.
  CHECK(MapTileDims(s, 2, {0}) == T({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}, true));
  // Dropping dim 0: column j is held by {j, j+4}: axes (dim1, dim0) -> 0,4,1,5,...
  CHECK(MapTileDims(s, 2, {1}) == T({4, 2}, {0, 4, 1, 5, 2, 6, 3, 7}, true));
  // Adding a dim (broadcast): [4] over 0..3 into dim 1 of a rank-2 tensor.
  CHECK(MapTileDims(T({4}, {0, 1, 2, 3}), 1, {-1, 0}) == T({1, 4}, {0, 1, 2, 3}));
  CHECK(MapTileDims(Sharding::Replicated(), 2, {0}) == Sharding::Replicated());
}

TEST_CASE("ReshapeSharding: the sharded dim must be the major part") {
  // [8,6] -> [48], dim 0 split 2: rows 0-3 are flat 0-23, one contiguous half.
  CHECK(ReshapeSharding(T({2, 1}, {0, 1}), {8, 6}, {48}) == T({2}, {0, 1}));
  // Back: [48] split 2 -> [8,6] splits the major dim.
  CHECK(ReshapeSharding(T({2}, {0, 1}), {48}, {8, 6}) == T({2, 1}, {0, 1}));
  // [48] split 16 -> [8,6]: dim 0 fully split (8), dim 1 split the remaining 2.
  std::vector<int64_t> d16(16);
  for (int64_t k = 0; k < 16; ++k) d16[k] = k;
  CHECK(ReshapeSharding(T({16}, d16), {48}, {8, 6}) == T({8, 2}, d16));
  // The minor dim split: [4,6] dim 1 split 2 -> [24] is not contiguous; replicated.
  CHECK(ReshapeSharding(T({1, 2}, {0, 1}), {4, 6}, {24}) == Sharding::Replicated());
  // Both dims split with the major one fully split: [2,6] tiles [2,3] -> [12] tiles 6.
  CHECK(ReshapeSharding(T({2, 3}, {5, 4, 3, 2, 1, 0}), {2, 6}, {12}) ==
        T({6}, {5, 4, 3, 2, 1, 0}));
  // [48] split 4 -> [6,8]: 4 does not divide 6 and 6 does not divide 4; replicated.
  CHECK(ReshapeSharding(T({4}, {0, 1, 2, 3}), {48}, {6, 8}) == Sharding::Replicated());
  // Size-1 dims come and go; 1:1 dims keep uneven tiles (15 split 2).
  CHECK(ReshapeSharding(T({2, 1}, {0, 1}), {15, 4}, {15, 1, 4}) == T({2, 1, 1}, {0, 1}));
  // Uneven major dim of a merge: [15,4] split 2 -> [60] would misalign; replicated.
  CHECK(ReshapeSharding(T({2, 1}, {0, 1}), {15, 4}, {60}) == Sharding::Replicated());
  // Independent groups: [4,6] -> [4,2,3], dim 0 (1:1) and dim 1 (split 2 -> major of [2,3]).
  CHECK(ReshapeSharding(T({2, 2}, {0, 1, 2, 3}), {4, 6}, {4, 2, 3}) ==
        T({2, 2, 1}, {0, 1, 2, 3}));
  // [4,6] tiles [2,2] -> [24]: dim 0 (4, split 2) is the major part and stays; dim 1's split
  // is not fully split-then-contiguous, so its 2 becomes replication.
  CHECK(ReshapeSharding(T({2, 2}, {0, 1, 2, 3}), {4, 6}, {24}) ==
        T({2, 2}, {0, 1, 2, 3}, true));
}

TEST_CASE("MergeShardings combines cuts of different dims over the same devices") {
  // Rows over {0,1}|{2,3} and columns over {0,2}|{1,3}: device d has (row d/2, col d%2).
  const Sharding rows = T({2, 1, 2}, {0, 1, 2, 3}, true);
  const Sharding cols = T({1, 2, 2}, {0, 2, 1, 3}, true);
  CHECK(MergeShardings(rows, cols, 2) == T({2, 2}, {0, 1, 2, 3}));
  CHECK(MergeShardings(cols, rows, 2) == T({2, 2}, {0, 1, 2, 3}));
  // Same cut, same groups: unchanged; replicated merges into anything.
  CHECK(MergeShardings(rows, rows, 2) == rows);
  CHECK(MergeShardings(Sharding::Replicated(), rows, 2) == rows);
  // Conflicts: one dim cut two ways; more cuts than devices; different device sets.
  CHECK(!MergeShardings(T({2, 1}, {0, 1}), T({4, 1}, {0, 1, 2, 3}), 2));
  CHECK(!MergeShardings(T({4, 1}, {0, 1, 2, 3}), T({1, 4}, {0, 1, 2, 3}), 2));
  CHECK(!MergeShardings(T({2, 1}, {0, 1}), T({2, 1}, {2, 3}), 2));
  // Rows cut alike but over different device groups: no common refinement.
  CHECK(!MergeShardings(T({2, 1, 2}, {0, 1, 2, 3}, true), T({2, 1, 2}, {0, 2, 1, 3}, true), 2));
  // Maximal does not merge with anything else.
  CHECK(!MergeShardings(Sharding::Maximal(0), rows, 2));
}

TEST_CASE("CanonicalLess is a strict order") {
  const Sharding a = T({1, 4}, {0, 1, 2, 3});
  const Sharding b = T({4, 1}, {0, 1, 2, 3});
  CHECK(CanonicalLess(a, b));
  CHECK(!CanonicalLess(b, a));
  CHECK(!CanonicalLess(a, a));
  CHECK(CanonicalLess(Sharding::Replicated(), a));
}

}  // namespace
}  // namespace podsim::partitioner
