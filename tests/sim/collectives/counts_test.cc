// Structure of the schedules, with counts derived by hand: steps, transfers, bytes per
// partition, dependency depth, ring orders that follow the torus.

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/group_geometry.h"
#include "tests/sim/collectives/collectives_test_util.h"

namespace podsim::sim {
namespace {

using testing::BytesSent;
using testing::Grid;
using testing::NetworkTransfers;

using testing::Build;

// Longest chain of network transfers through the deps (local transfers count 0).
int LongestNetworkChain(const Schedule& s) {
  std::vector<int> depth(s.transfers.size(), 0);
  int longest = 0;
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    int d = 0;
    for (int64_t dep : Deps(s, i)) d = std::max(d, depth[static_cast<size_t>(dep)]);
    depth[i] = d + (s.transfers[i].local() ? 0 : 1);
    longest = std::max(longest, depth[i]);
  }
  return longest;
}

void CheckAllSend(const Schedule& s, int64_t bytes) {
  for (int64_t sent : BytesSent(s)) CHECK(sent == bytes);
}

TEST_CASE("ring all-reduce on 8: 2(N-1) steps, each partition sends 2(N-1)/N of the data") {
  auto ring = Grid({8}, {true});
  // n = 800 floats: V = 3200 B, pieces of 100 floats = 400 B. 14 steps, one piece per partition
  // per step: 8 * 14 = 112 transfers, 14 * 400 = 5600 B = 2 * 7/8 * 3200 per partition.
  const Schedule uni = Build(*ring, CollectiveKind::kAllReduce, 800, "ring");
  CHECK(uni.num_steps == 14);
  CHECK(NetworkTransfers(uni) == 112);
  CheckAllSend(uni, 5600);
  CHECK(LongestNetworkChain(uni) == 14);
  // Bidirectional: each piece halved, one half each way: twice the transfers, the same bytes.
  const Schedule bidir = Build(*ring, CollectiveKind::kAllReduce, 800, "ring-bidir");
  CHECK(bidir.num_steps == 14);
  CHECK(NetworkTransfers(bidir) == 224);
  CheckAllSend(bidir, 5600);
  // Pipelining depth 4: four sub-chunks per piece, still 14 steps deep.
  const Schedule piped = Build(*ring, CollectiveKind::kAllReduce, 800, "ring", 4);
  CHECK(NetworkTransfers(piped) == 448);
  CheckAllSend(piped, 5600);
  CHECK(LongestNetworkChain(piped) == 14);
}

TEST_CASE("ring all-gather and reduce-scatter on 8: N-1 steps") {
  auto ring = Grid({8}, {true});
  // All-gather of 50 floats: 7 steps, each partition forwards 7 shards of 200 B.
  const Schedule ag = Build(*ring, CollectiveKind::kAllGather, 50, "ring");
  CHECK(ag.num_steps == 7);
  CHECK(NetworkTransfers(ag) == 56);
  CheckAllSend(ag, 7 * 200);
  // Reduce-scatter of 400 floats: 7 steps of 50-float pieces = 7 * 200 B.
  const Schedule rs = Build(*ring, CollectiveKind::kReduceScatter, 400, "ring-bidir");
  CHECK(rs.num_steps == 7);
  CheckAllSend(rs, 7 * 200);
}

TEST_CASE("torus all-reduce on 4x4: 2 x (3 + 3) steps, the same bytes as a ring") {
  auto torus = Grid({4, 4}, {true, true});
  // n = 1600 floats, V = 6400 B. Reduce-scatter along the first axis sends 3/4 V, along the
  // second 3/4 of the remaining V/4; all-gather the same again: 2 * (3/4 + 3/16) * 6400 = 12000
  // B = 2 * 15/16 * V. The data is cut into 2 rotations (dim1 then dim0, and dim0 then dim1) that
  // run at once on the same step labels, each moving half of those bytes: per rotation and phase
  // a member sends 3 steps x 2 directions = 6 transfers; 4 phases x 2 rotations = 48.
  const Schedule s = Build(*torus, CollectiveKind::kAllReduce, 1600, "torus");
  CHECK(s.num_steps == 12);
  CHECK(NetworkTransfers(s) == 16 * 48);
  CheckAllSend(s, 12000);
  CHECK(LongestNetworkChain(s) == 12);
  // Every transfer goes between neighbours (one hop).
  for (const ChunkTransfer& t : s.transfers) {
    if (!t.local()) CHECK(torus->Hops(t.src, t.dst) == 1);
  }
}

TEST_CASE("torus all-reduce on 4x4 chips x 2 cores: the core axis first") {
  auto torus = Grid({4, 4}, {true, true}, 2);
  // Axes cores(2), dim1(4), dim0(4): 2 * (1 + 3 + 3) = 14 steps; bytes 2 * 31/32 * V with
  // V = 3200 floats = 12800 B: 24800 B.
  const Schedule s = Build(*torus, CollectiveKind::kAllReduce, 3200, "torus");
  CHECK(s.num_steps == 14);
  CheckAllSend(s, 24800);
  // The first reduce-scatter step (step 0) is on chip: half the data per core over the on-chip
  // link (two quarters, one each way round the 2-ring).
  for (const ChunkTransfer& t : s.transfers) {
    if (!t.local() && t.step == 0) CHECK(torus->ChipOfCore(t.src) == torus->ChipOfCore(t.dst));
  }
}

TEST_CASE("direct and dim-staged all-to-all on 4x4") {
  auto torus = Grid({4, 4}, {true, true});
  // Direct: 16 * 15 messages of one block (S / 16), 1 step; each partition sends 15/16 S.
  const Schedule direct = Build(*torus, CollectiveKind::kAllToAll, 1600, "direct");
  CHECK(direct.num_steps == 1);
  CHECK(NetworkTransfers(direct) == 240);
  CheckAllSend(direct, 15 * 400);
  // Dim-staged: 2 stages, 3 aggregated messages of 4 blocks (S / 4) per partition per stage:
  // 96 messages, each partition sends 2 * 3/4 S = 2 * 3 * 1600 B; messages are one hop.
  const Schedule staged = Build(*torus, CollectiveKind::kAllToAll, 1600, "dim-staged");
  CHECK(staged.num_steps == 2);
  CHECK(NetworkTransfers(staged) == 96);
  CheckAllSend(staged, 2 * 3 * 1600);
  for (const ChunkTransfer& t : staged.transfers) {
    if (t.local()) continue;
    CHECK(t.elements == 400);
    // Stage 0 (dim 0) reads 4 contiguous blocks; stage 1 writes 4 blocks strided by 4 slots.
    CHECK(std::max<int32_t>(t.num_segments, 1) <= 4);
    const auto a = torus->ChipCoords(t.src), b = torus->ChipCoords(t.dst);
    CHECK(a[static_cast<size_t>(1 - t.step)] ==
          b[static_cast<size_t>(1 - t.step)]);  // along one axis
  }
}

TEST_CASE("direct all-reduce: 2 steps, a join per member") {
  auto ring = Grid({4}, {true});
  // 4 * 3 reduce messages + 4 * 3 gather messages of 100 floats; each sends 2 * 3 * 400 B.
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 400, "direct");
  CHECK(s.num_steps == 2);
  CHECK(NetworkTransfers(s) == 24);
  CheckAllSend(s, 2400);
  CHECK(LongestNetworkChain(s) == 2);
}

// Every ring edge, the closing one included, is one hop (the on-chip link between cores).
void CheckRingIsNeighbours(const topo::Topology& topology, const std::vector<int64_t>& group) {
  const RingOrder ring = ChooseRingOrder(topology, group);
  CHECK(ring.single_hops);
  REQUIRE(ring.members.size() == group.size());
  CHECK(std::set<int64_t>(ring.members.begin(), ring.members.end()) ==
        std::set<int64_t>(group.begin(), group.end()));
  for (size_t i = 0; i < ring.members.size(); ++i) {
    const int64_t a = ring.members[i], b = ring.members[(i + 1) % ring.members.size()];
    INFO(ring.how << ": " << a << " -> " << b);
    CHECK(topology.Hops(a, b) == 1);
  }
}

std::vector<int64_t> All(const topo::Topology& t) {
  std::vector<int64_t> all;
  for (int64_t p = 0; p < t.num_cores(); ++p) all.push_back(p);
  return all;
}

TEST_CASE("ring orders follow the torus: Hamiltonian cycles of neighbours") {
  for (const auto& topology :
       {Grid({4, 4}, {true, true}), Grid({4, 4}, {false, false}), Grid({2, 3}, {false, false}),
        Grid({3, 4}, {false, false}, 2), Grid({4, 2, 2}, {true, true, true}),
        Grid({8, 8}, {false, false}, 2), Grid({6}, {true}), Grid({2}, {false}, 2)}) {
    CheckRingIsNeighbours(*topology, All(*topology));
  }
  // A sub-block of a mesh and one row of a torus.
  auto mesh = Grid({4, 4}, {false, false});
  CheckRingIsNeighbours(*mesh, {5, 6, 9, 10});
  auto torus = Grid({4, 4}, {true, true});
  CheckRingIsNeighbours(*torus, {4, 5, 6, 7});
}

TEST_CASE("the documented 4x4 comb order") {
  auto torus = Grid({4, 4}, {true, true});
  // (x0, x1) chip coordinates, chip = 4 x0 + x1: (0,0) (1,0) (2,0) (3,0) (3,1) (2,1) (1,1) (1,2)
  // (2,2) (3,2) (3,3) (2,3) (1,3) (0,3) (0,2) (0,1).
  const RingOrder ring = ChooseRingOrder(*torus, All(*torus));
  CHECK(ring.members == std::vector<int64_t>{0, 4, 8, 12, 13, 9, 5, 6, 10, 14, 15, 11, 7, 3, 2, 1});
}

TEST_CASE("a line without wraparound: ring in coordinate order, the closing hop goes back") {
  auto line = Grid({5}, {false});
  const RingOrder ring = ChooseRingOrder(*line, All(*line));
  CHECK(ring.members == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK_FALSE(ring.single_hops);
}

TEST_CASE("box analysis") {
  auto torus = Grid({4, 4}, {true, true}, 2);
  // Partition = chip * 2 + core, chip = 4 x0 + x1. Row x0 = 1, core 0: chips 4..7.
  const auto row = AnalyzeBox(*torus, {8, 10, 12, 14});
  REQUIRE(row.has_value());
  REQUIRE(row->axes.size() == 1);
  CHECK(row->axes[0].dim == 1);
  CHECK(row->axes[0].closed);
  // Both cores of chips 0 and 1: cores x dim1[0..2) (a line of 2 chips: still neighbours).
  const auto block = AnalyzeBox(*torus, {0, 1, 2, 3});
  REQUIRE(block.has_value());
  CHECK(block->axes.size() == 2);
  CHECK(block->Describe() == "cores[0..2) x dim1[0..2) (ring)");
  CHECK_FALSE(AnalyzeBox(*torus, {0, 2, 6}).has_value());
  auto mesh = Grid({4, 4}, {false, false});
  const auto partial = AnalyzeBox(*mesh, {1, 2, 3});
  REQUIRE(partial.has_value());
  CHECK_FALSE(partial->axes[0].closed);
}

}  // namespace
}  // namespace podsim::sim
