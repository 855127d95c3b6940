// Double binary tree all-reduce: times derived by hand where every tree edge is one hop, its
// pipelining, and its limits. (Its results equal the reference in functional_test.cc.)

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

double TreeUs(const topo::Topology& t, int64_t bytes, const std::string& model) {
  const Schedule s = testing::Build(t, CollectiveKind::kAllReduce, bytes / 4, "tree");
  auto net = MakeNetworkModel(model, t, NetworkOptions{});
  return RunTiming(s, t, *net).total.micros();
}

// Every pair of `chips` chips joined by one link each way (1e11 B/s, 1 us).
std::unique_ptr<topo::Topology> Complete(int64_t chips) {
  nlohmann::json edges = nlohmann::json::array();
  for (int64_t a = 0; a < chips; ++a) {
    for (int64_t b = a + 1; b < chips; ++b) edges.push_back({a, b});
  }
  return topo::LoadTopology(nlohmann::json{{"kind", "custom"},
                                           {"num_chips", chips},
                                           {"edges", edges},
                                           {"link_bandwidth", 1e11},
                                           {"hop_latency_us", 1.0}},
                            "topology");
}

TEST_CASE("tree on 4 fully connected chips: four one-hop phases, the trees on distinct links") {
  // g = 4, m = 2. Tree A (node = member): 1 -> 2 <- 3, 2 -> 0 (the top). Tree B (node x is
  // member x - 1, node 0 member 3): 0 -> 1 <- 2, 1 -> 3. Up the leaves, up the roots, down to
  // the roots, down to the leaves: in each phase every transfer has its own link. 4 KiB is
  // small enough for one chunk per half (sqrt(3 x 4096 / (2 x 1e11 x 1e-6)) = 0.25 -> 1), so
  // each phase moves D / 2 = 2 KiB: 4 x (1 us + 2048 B / 1e11 B/s).
  const auto complete = Complete(4);
  const double expected = 4 * (1.0 + 2048 / 1e11 * 1e6);
  for (const std::string model : {"analytic", "flow", "packet"}) {
    CAPTURE(model);
    CHECK(TreeUs(*complete, 4096, model) == doctest::Approx(expected).epsilon(1e-6));
  }
  // Two chips: each tree is one edge, A up 1 -> 0 while B goes up 0 -> 1, then both down:
  // 2 x (1 us + 2048 B / 1e11 B/s).
  CHECK(TreeUs(*Complete(2), 4096, "flow") == doctest::Approx(2 * (1.0 + 2048 / 1e11 * 1e6)));
}

TEST_CASE("tree chunks pipeline through the levels") {
  // 16 fully connected chips, 8 MiB: one chunk per half would take the 2m = 8 phases one after
  // the other, 8 x (1 us + 4 MiB / 1e11 B/s) = 343.6 us; with the chunks pipelined the levels
  // overlap and the time falls to a fraction of that (the analytic model: about D / B plus one
  // latency per pipeline stage, under 110 us).
  const auto k16 = Complete(16);
  const double unpipelined = 8 * (1.0 + (4 << 20) / 1e11 * 1e6);
  const double t = TreeUs(*k16, 8 << 20, "analytic");
  CHECK(t < 0.35 * unpipelined);
  CHECK(t >= (8 << 20) / 1e11 * 1e6 * 0.5);  // each tree moves D / 2 through every member
}

TEST_CASE("tree needs an all-reduce over groups of a power-of-two size") {
  const auto torus = testing::Grid({3, 2}, {true, true});
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.elements = 64;
  AlgorithmOptions options;
  options.algorithm = "tree";
  CHECK_THROWS_WITH_AS(BuildSchedule(spec, *torus, options),
                       doctest::Contains("replica_groups[0]: algorithm 'tree' needs a group of a "
                                         "power-of-two size, got 6 members"),
                       Error);
  spec.kind = CollectiveKind::kAllGather;
  CHECK_THROWS_WITH_AS(BuildSchedule(spec, *torus, options),
                       doctest::Contains("'tree' does not apply to all-gather"), Error);
}

}  // namespace
}  // namespace podsim::sim
