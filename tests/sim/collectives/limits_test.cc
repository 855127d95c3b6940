// Collectives too large for this machine or for the picosecond clock: clear errors before any
// allocation or arithmetic goes wrong (issue: 262,144-chip pods ended in std::bad_alloc; a
// 1 GiB transfer at 1 B/s took 12 us in the analytic model).

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/timing.h"
#include "sim/network/analytic_network.h"
#include "sim/network/flow_network.h"
#include "sim/network/packet_network.h"
#include "tests/sim/collectives/collectives_test_util.h"

namespace podsim::sim {
namespace {

using testing::Grid;

using testing::Build;

TEST_CASE("a schedule that cannot fit in memory is refused before it is built") {
  // 64x64x64 = 262,144 chips. A direct all-to-all has 262,144^2 = 6.87e10 transfers of at
  // least 64 B each: about 8.8 TB with the executor's state, beyond any machine this runs on.
  const auto pod = Grid({64, 64, 64}, {true, true, true});
  CHECK_THROWS_WITH_AS(
      Build(*pod, CollectiveKind::kAllToAll, 262144, "direct"),
      doctest::Contains("the direct all-to-all over 1 group(s) of up to 262144 partitions (an "
                        "estimated 6.87e+10 transfers, simulated one by one) needs "),
      Error);
  // Ring: 262,144 x 4 x 262,143 ~ 2.75e11 transfers.
  CHECK_THROWS_WITH_AS(Build(*pod, CollectiveKind::kAllReduce, 262144, "ring"),
                       doctest::Contains("an estimated 2.75e+11 transfers"), Error);
  CHECK_THROWS_WITH_AS(Build(*pod, CollectiveKind::kAllToAll, 262144, "dim-staged"),
                       doctest::Contains("this machine allows"), Error);
}

TEST_CASE("a transfer that outlasts the picosecond clock is an error in every network model") {
  // 1 GiB per partition at 1 B/s per link: each ring step moves 256 MiB, 2.7e8 s, far past the
  // clock's 1e7 s.
  const auto ring = Grid({4}, {true}, 1, /*bandwidth=*/1.0);
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 1 << 28, "ring");
  FlowNetwork flow(*ring);
  CHECK_THROWS_WITH_AS(RunTiming(s, *ring, flow),
                       doctest::Contains("beyond the picosecond clock's range"), Error);
  AnalyticNetwork analytic(*ring);
  CHECK_THROWS_WITH_AS(RunTiming(s, *ring, analytic),
                       doctest::Contains("out of the picosecond clock's range"), Error);
  PacketNetwork packet(*ring);
  CHECK_THROWS_WITH_AS(RunTiming(s, *ring, packet), doctest::Contains("range"), Error);
}

}  // namespace
}  // namespace podsim::sim
