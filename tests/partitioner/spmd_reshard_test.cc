// Reshard: each case is a parameter laid out as `from` feeding a negate declared as `to`, so the
// SPMD program is one reshard plus the negate. Structure (which collectives) and numbers (the
// harness, with NaN in every padding) are both checked.

#include <doctest/doctest.h>

#include "ir/builder.h"
#include "partitioner/tile_layout.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Shape;
using testing::CollectiveCounts;
using testing::Split;
using testing::Tiles;
using testing::TotalCollectives;
using testing::With;

std::unique_ptr<ir::Module> ReshardModule(const Shape& shape, const ir::Sharding& from,
                                          const ir::Sharding& to) {
  auto m = std::make_unique<ir::Module>("reshard");
  ir::Builder b(m->AddComputation("main", true));
  auto* x = With(b.Parameter(0, shape, "x"), from);
  With(b.Neg(x), to);
  return m;
}

// Partitions and checks numbers; returns collective counts.
std::map<std::string, int64_t> Run(const Shape& shape, const ir::Sharding& from,
                                   const ir::Sharding& to, int64_t d) {
  auto m = ReshardModule(shape, from, to);
  PartitionResult r = testing::Partition(*m, d);
  testing::CheckNumerics(*m, r);
  return CollectiveCounts(*r.module);
}

TEST_CASE("reshard: identity and replicated -> tiled move nothing") {
  const Shape s(DType::kF32, {8, 6});
  CHECK(Run(s, Split(2, 0, 4), Split(2, 0, 4), 4).empty());
  CHECK(Run(s, ir::Sharding::Replicated(), Split(2, 1, 4), 4).empty());
  CHECK(Run(s, ir::Sharding::Replicated(), Tiles({2, 2}), 4).empty());
  // Uneven: 7 rows over 4 partitions are shards of 2, the last one half padding.
  CHECK(Run(Shape(DType::kF32, {7, 5}), ir::Sharding::Replicated(), Tiles({4, 1}), 4).empty());
  // A finer split of the same dim is a local slice too: [2,1] -> [4,1] with 0,1 | 2,3 nested.
  CHECK(Run(s, Tiles({2, 1}, 2), Tiles({4, 1}), 4).empty());
}

TEST_CASE("reshard: tiled -> replicated is an all-gather per split dim") {
  const Shape s(DType::kF32, {8, 6});
  CHECK(Run(s, Split(2, 0, 4), ir::Sharding::Replicated(), 4) ==
        std::map<std::string, int64_t>{{"all-gather", 1}});
  CHECK(Run(s, Tiles({2, 2}), ir::Sharding::Replicated(), 4) ==
        std::map<std::string, int64_t>{{"all-gather", 2}});
  // Uneven: 7 over 4 and 5 over 2, padding sliced off after gathering.
  CHECK(Run(Shape(DType::kF32, {7, 5}), Tiles({4, 2}), ir::Sharding::Replicated(), 8) ==
        std::map<std::string, int64_t>{{"all-gather", 2}});
}

TEST_CASE("reshard: to partial replication gathers only over the replica groups") {
  const Shape s(DType::kF32, {8, 6});
  auto m = ReshardModule(s, Tiles({2, 2}), Tiles({2, 1}, 2));
  PartitionResult r = testing::Partition(*m, 4);
  testing::CheckNumerics(*m, r);
  REQUIRE(CollectiveCounts(*r.module) == std::map<std::string, int64_t>{{"all-gather", 1}});
  for (const auto& i : r.module->entry()->instructions()) {
    if (i->opcode != ir::Opcode::kAllGather) continue;
    // Partitions 0,1 hold row-tile 0 and 2,3 row-tile 1: gather columns within each pair.
    CHECK(i->replica_groups == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}});
    CHECK(i->dimensions == std::vector<int64_t>{1});
  }
}

TEST_CASE("reshard: moving the split to another dim is one all-to-all") {
  CHECK(Run(Shape(DType::kF32, {8, 12}), Split(2, 0, 4), Split(2, 1, 4), 4) ==
        std::map<std::string, int64_t>{{"all-to-all", 1}});
  // Uneven on both sides: 6 over 4 (shards of 2) to 5 over 4 (shards of 2).
  CHECK(Run(Shape(DType::kF32, {6, 5}), Split(2, 0, 4), Split(2, 1, 4), 4) ==
        std::map<std::string, int64_t>{{"all-to-all", 1}});
  CHECK(Run(Shape(DType::kF32, {3, 4, 10}), Split(3, 2, 8), Split(3, 0, 8), 8) ==
        std::map<std::string, int64_t>{{"all-to-all", 1}});
}

TEST_CASE("reshard: moving a factor of a split is one all-to-all within the factor's groups") {
  // Rows over 4 partitions (row tile = p) -> rows over 2 and columns over 2, device 2i + j at
  // (i, j): row tile p / 2, column tile p % 2. Partitions 2i and 2i + 1 held the two quarters of
  // row half i; each sends the other the column half it needs: AllToAll within {0,1}, {2,3}.
  // And back. Under the paper's MoE layout on a data x expert mesh this is dispatch (groups
  // over data x expert -> groups over data, experts over expert) and combine.
  const Shape s(DType::kF32, {8, 6});
  for (const auto& [from, to] :
       {std::pair{Split(2, 0, 4), Tiles({2, 2})}, std::pair{Tiles({2, 2}), Split(2, 0, 4)},
        std::pair{Tiles({2, 2}, 2), Tiles({4, 1}, 2)}}) {
    CAPTURE(from.ToString());
    CAPTURE(to.ToString());
    auto m = ReshardModule(s, from, to);
    PartitionResult r = testing::Partition(*m, from.devices.size());
    testing::CheckNumerics(*m, r);
    REQUIRE(CollectiveCounts(*r.module) == std::map<std::string, int64_t>{{"all-to-all", 1}});
    for (const auto& i : r.module->entry()->instructions()) {
      if (i->opcode != ir::Opcode::kAllToAll) continue;
      const int64_t n = from.devices.size();
      // Pairs of consecutive partitions; with a replica digit (minor) pairs 2 apart.
      const std::vector<std::vector<int64_t>> want =
          n == 4 ? std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}
                 : std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}};
      CHECK(ir::ReplicaGroupsOf(*i) == want);
    }
  }
}

TEST_CASE("reshard: same tiles in another device order is one collective-permute") {
  const Shape s(DType::kF32, {8, 6});
  CHECK(Run(s, Split(2, 0, 4), Tiles({4, 1}, 1, {3, 2, 1, 0}), 4) ==
        std::map<std::string, int64_t>{{"collective-permute", 1}});
  CHECK(Run(Shape(DType::kF32, {7, 6}), Tiles({2, 2}), Tiles({2, 2}, 1, {0, 2, 1, 3}), 4) ==
        std::map<std::string, int64_t>{{"collective-permute", 1}});
}

TEST_CASE("reshard: combinations") {
  // Rows split 4 ways to columns split 2 ways: all-to-all needs matching counts, so the plan
  // gathers and slices, or all-to-alls and then gathers; either way the numbers hold.
  auto counts = Run(Shape(DType::kF32, {8, 6}), Split(2, 0, 4), Tiles({1, 2}, 2), 4);
  CHECK(!counts.empty());
  // 2x2 tiles to 4 rows: gather the columns, slice the rows finer.
  Run(Shape(DType::kF32, {8, 6}), Tiles({2, 2}), Tiles({4, 1}), 4);
  // Transposed 2x2 mesh.
  Run(Shape(DType::kF32, {5, 7}), Tiles({2, 2}), Tiles({2, 2}, 1, {3, 1, 2, 0}), 4);
  // Replicated over pairs to split 4 ways in another order.
  Run(Shape(DType::kF32, {9, 3}), Tiles({2, 1}, 2, {0, 2, 1, 3}), Tiles({4, 1}, 1, {1, 0, 3, 2}),
      4);
  // 8 partitions, 3 dims.
  Run(Shape(DType::kF32, {4, 6, 5}), Tiles({2, 2, 2}),
      Tiles({1, 4, 2}, 1, {7, 6, 5, 4, 3, 2, 1, 0}), 8);
  Run(Shape(DType::kF32, {4, 6, 5}), Tiles({2, 1, 2}, 2), Tiles({1, 8, 1}), 8);
  // A sharding over fewer partitions than there are: the others hold replicas.
  Run(Shape(DType::kF32, {4, 6}), Split(2, 0, 2), Split(2, 1, 4), 4);
}

TEST_CASE("reshard: tile layouts") {
  TileLayout l = TileLayout::FromSharding(Tiles({2, 1}, 2, {0, 2, 1, 3}), 2, 4);
  CHECK(l.tiles() == std::vector<int64_t>{2, 1});
  CHECK(l.replicas() == 2);
  // Tile 0 is held by 0 and 2, tile 1 by 1 and 3.
  CHECK(l.Coord(0, 0) == 0);
  CHECK(l.Coord(2, 0) == 0);
  CHECK(l.Coord(1, 0) == 1);
  CHECK(l.GroupsAlong(0) == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}});
  CHECK(l.Gathered(0).IsReplicated());
  CHECK(l.ToSharding() == Tiles({2, 1}, 2, {0, 2, 1, 3}));
  // Split over 2 of 4 partitions: 2 and 3 copy 0 and 1.
  TileLayout half = TileLayout::FromSharding(Split(2, 0, 2), 2, 4);
  CHECK(half.replicas() == 2);
  CHECK(half.Coord(2, 0) == 0);
  CHECK(half.Coord(3, 0) == 1);
  CHECK_THROWS_WITH_AS(TileLayout::FromSharding(Split(2, 0, 3), 2, 4),
                       doctest::Contains("does not divide"), podsim::Error);
  CHECK(TileLayout::FromSharding(Split(2, 0, 4), 2, 4)
            .Projected({0, -1}, {}, ir::ReduceKind::kAdd)
            .Equivalent(TileLayout::FromSharding(Split(2, 0, 4), 2, 4)));
}

TEST_CASE("reshard: provenance names the user and the mismatch") {
  auto m = ReshardModule(Shape(DType::kF32, {8, 6}), Split(2, 0, 4), ir::Sharding::Replicated());
  PartitionResult r = testing::Partition(*m, 4);
  REQUIRE(r.provenance.size() == 1);
  const CollectiveProvenance& p = r.provenance[0];
  CHECK(p.user == "negate");
  CHECK(p.from == "{devices=[4,1]0,1,2,3}");
  CHECK(p.to == "{replicated}");
  CHECK(ExplainProvenance(r).find("all-gather") == 0);
  CHECK(ExplainProvenance(r).find("<- %negate") != std::string::npos);
}

}  // namespace
}  // namespace podsim::partitioner

namespace podsim::partitioner {
namespace {

TEST_CASE("harness: ShardOf pads with the fill value and Reassemble inverts it") {
  const Shape s(ir::DType::kF32, {5, 3});
  ir::Literal x(s, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  const ir::Sharding sh = Tiles({2, 2}, 1, {3, 2, 1, 0});
  std::vector<ir::Literal> shards;
  for (int64_t p = 0; p < 4; ++p) shards.push_back(ShardOf(x, sh, p, 4, -1));
  // Partition 3 holds tile (0,0): rows 0-2, cols 0-1. Partition 0 holds tile (1,1): rows 3-4
  // (plus one padding row), col 2 (plus one padding col).
  CHECK(shards[3].values == std::vector<double>{0, 1, 3, 4, 6, 7});
  CHECK(shards[0].shape == Shape(ir::DType::kF32, {3, 2}));
  CHECK(shards[0].values == std::vector<double>{11, -1, 14, -1, -1, -1});
  CHECK(Reassemble(shards, sh, s) == x);
}

}  // namespace
}  // namespace podsim::partitioner
