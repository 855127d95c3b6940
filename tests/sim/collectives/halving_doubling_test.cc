// Recursive halving-doubling: times derived by hand on a hypercube, and its limits.

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

double HalvingDoublingUs(const topo::Topology& t, CollectiveKind kind, int64_t bytes) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.elements = bytes / 4;
  return testing::FlowMicros(spec, t, "halving-doubling");
}

TEST_CASE("halving-doubling on a hypercube: every exchange one hop, all links busy") {
  // hypercube-16: 4 bits, 4 links per chip (1e11 B/s each way, 1 us). The data is cut into 4
  // parts with the bit order rotated, so in each step the parts use the 4 links of a chip at
  // once, one message each. B = 8 MiB, part D = B / 4:
  //  - reduce-scatter: step k sends D / 2^(k+1): 4 x 1 us + D (1/2 + 1/4 + 1/8 + 1/16) / 1e11;
  //  - all-gather (each member's input B, its part D): step k sends D 2^k: 4 us + 15 D / 1e11;
  //  - all-reduce: the reduce-scatter twice over (halving, then doubling back).
  const auto cube = topo::LoadTopology("hypercube-16");
  const double B = 8 << 20, D = B / 4, L = 1.0, bw = 1e11;
  const double rs = 4 * L + D * (15.0 / 16) / bw * 1e6;
  CHECK(HalvingDoublingUs(*cube, CollectiveKind::kReduceScatter, 8 << 20) ==
        doctest::Approx(rs).epsilon(1e-6));
  CHECK(HalvingDoublingUs(*cube, CollectiveKind::kAllReduce, 8 << 20) ==
        doctest::Approx(2 * rs).epsilon(1e-6));
  CHECK(HalvingDoublingUs(*cube, CollectiveKind::kAllGather, 8 << 20) ==
        doctest::Approx(4 * L + 15 * D / bw * 1e6).epsilon(1e-6));
}

TEST_CASE("halving-doubling needs groups of a power-of-two size") {
  const auto torus = testing::Grid({2, 3}, {true, true});  // 6 partitions
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.elements = 64;
  AlgorithmOptions options;
  options.algorithm = "halving-doubling";
  CHECK_THROWS_WITH_AS(BuildSchedule(spec, *torus, options),
                       doctest::Contains("replica_groups[0]: algorithm 'halving-doubling' needs a "
                                         "group of a power-of-two size, got 6 members"),
                       Error);
  spec.replica_groups = {{0, 1, 2, 3}};
  CHECK(BuildSchedule(spec, *torus, options).num_steps == 4);  // 2 halving + 2 doubling
}

}  // namespace
}  // namespace podsim::sim
