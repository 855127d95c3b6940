// Rings on custom graphs follow the graph, not the order a group is listed in.

#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/group_geometry.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

// A binary tree of 7 chips: 0 - {1, 2}, 1 - {3, 4}, 2 - {5, 6}.
std::unique_ptr<topo::Topology> Tree() {
  return topo::LoadTopology(
      nlohmann::json{{"kind", "custom"}, {"name", "tree-7"}, {"num_chips", 7},
                     {"edges", {{0, 1}, {0, 2}, {1, 3}, {1, 4}, {2, 5}, {2, 6}}}},
      "topology");
}

double RingTimeUs(const topo::Topology& t, std::vector<int64_t> group) {
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.elements = 1 << 18;
  spec.replica_groups = {std::move(group)};
  return testing::FlowMicros(spec, t, "ring");
}

TEST_CASE("a custom graph's ring is a nearest-neighbour tour, whatever the listing") {
  const auto tree = Tree();
  // From 0, always the nearest unvisited chip (ties: lowest id): 1 (1 hop; 2 ties, higher id),
  // 3 (1 hop), 4 (2 hops, via 1; 2 is 3 hops), 2 (3 hops; 5 and 6 are 4), 5 (1 hop), 6 (2
  // hops); 6 closes to 0 in 2 hops.
  const RingOrder order = ChooseRingOrder(*tree, {6, 5, 4, 3, 2, 1, 0});
  CHECK(order.members == std::vector<int64_t>{0, 1, 3, 4, 2, 5, 6});
  CHECK_FALSE(order.single_hops);  // a tree has no Hamiltonian cycle
  // The same members in three listings: the same schedule, so the same time.
  const double sorted = RingTimeUs(*tree, {0, 1, 2, 3, 4, 5, 6});
  CHECK(RingTimeUs(*tree, {6, 5, 4, 3, 2, 1, 0}) == sorted);
  CHECK(RingTimeUs(*tree, {3, 0, 5, 1, 6, 2, 4}) == sorted);
}

TEST_CASE("on a hypercube the tour uses its edges") {
  const auto cube = topo::LoadTopology("hypercube-16");
  std::vector<int64_t> all(16);
  for (int64_t i = 0; i < 16; ++i) all[static_cast<size_t>(i)] = 15 - i;
  const RingOrder order = ChooseRingOrder(*cube, all);
  // Every step of the tour but the closing one moves to a neighbour (one bit flips).
  for (size_t i = 0; i + 1 < order.members.size(); ++i) {
    CHECK(cube->Hops(order.members[i], order.members[i + 1]) == 1);
  }
}

}  // namespace
}  // namespace podsim::sim
