// --chunks: a ring's pieces cut into k sub-chunks, each forwarded as soon as it has arrived.
// Each edge's send queue sends its sub-chunks one after another (schedule.h), so on every
// network model the sub-chunks of consecutive steps overlap: the classic pipelined ring.

#include <doctest/doctest.h>

#include <string>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

double RingAllReduceUs(const topo::Topology& t, const std::string& network, int chunks) {
  const Schedule s = testing::Build(t, CollectiveKind::kAllReduce, (1 << 20) / 4, "ring", chunks);
  auto net = MakeNetworkModel(network, t, NetworkOptions{});
  return RunTiming(s, t, *net).total.micros();
}

TEST_CASE("pipelined ring all-reduce: S L + (S + k - 1) P / (k B), derived by hand") {
  // torus-4x4: 16 partitions on one ring of one-hop edges, B = 1e11 B/s, L = 1 us. 1 MiB per
  // partition: pieces P = 64 KiB, S = 2 (16 - 1) = 30 steps. Sub-chunk j of step s leaves when
  // sub-chunk j of step s - 1 has arrived; its send queue sends sub-chunks in turn, each in
  // tau = P / (k B). While k tau <= tau + L (here up to k = 8: 0.66 us <= 1.08 us) the latency
  // chain sets the pace: sub-chunk j of step s is sent in [s (tau + L) + j tau, .. + tau], so the
  // last one (s = S - 1, j = k - 1) arrives at (S - 1)(tau + L) + k tau + L = S L + (S + k - 1)
  // tau.
  const auto torus = topo::LoadTopology("torus-4x4");
  const double L = 1.0, S = 30, P = 65536, B = 1e11;
  for (int k : {1, 2, 4, 8}) {
    CAPTURE(k);
    const double expected = S * L + (S + k - 1) * P / (k * B) * 1e6;
    CHECK(RingAllReduceUs(*torus, "analytic", k) == doctest::Approx(expected).epsilon(1e-6));
    // The flow model: one flow per link at a time, at full bandwidth.
    CHECK(RingAllReduceUs(*torus, "flow", k) == doctest::Approx(expected).epsilon(1e-6));
    // Packets (8 KiB) pipeline inside each sub-chunk too: within 3%.
    CHECK(RingAllReduceUs(*torus, "packet", k) == doctest::Approx(expected).epsilon(0.03));
  }
  // k = 8 saves 16.6 us of the unpipelined 49.66 us.
  CHECK(RingAllReduceUs(*torus, "analytic", 8) < 0.7 * RingAllReduceUs(*torus, "analytic", 1));
}

}  // namespace
}  // namespace podsim::sim
