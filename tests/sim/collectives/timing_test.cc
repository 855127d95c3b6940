// The timing run on real network models, against times derived by hand on tiny rings.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/explain.h"
#include "sim/collectives/timing.h"
#include "sim/network/analytic_network.h"
#include "sim/network/flow_network.h"
#include "tests/sim/collectives/collectives_test_util.h"

namespace podsim::sim {
namespace {

using testing::Grid;

constexpr int64_t kTimingUs = 1'000'000;  // picoseconds

using testing::Build;

// A 4-chip ring with wraparound, 1e9 B/s per link per direction, 1 us per hop.
std::unique_ptr<topo::Topology> TinyRing() { return Grid({4}, {true}, 1, 1e9, 1.0); }

TEST_CASE("unidirectional ring all-reduce on 4: 6 steps of (1 us + 4000 B / 1e9 B/s)") {
  auto ring = TinyRing();
  // n = 4000 floats = 16000 B; pieces of 4000 B. Every step each chip sends one piece to its +
  // neighbour over its own link: 1 us latency + 4 us = 5 us; 2(4-1) = 6 dependent steps = 30 us.
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 4000, "ring");
  FlowNetwork flow(*ring);
  TimingOptions options;
  options.record_transfers = true;
  const TimingResult r = RunTiming(s, *ring, flow, options);
  CHECK(r.total.picos() == 30 * kTimingUs);
  REQUIRE(r.steps.size() == 6);
  for (int step = 0; step < 6; ++step) {
    CHECK(r.steps[static_cast<size_t>(step)].start.picos() == 5 * step * kTimingUs);
    CHECK(r.steps[static_cast<size_t>(step)].end.picos() == 5 * (step + 1) * kTimingUs);
    CHECK(r.steps[static_cast<size_t>(step)].transfers == 4);
    CHECK(r.steps[static_cast<size_t>(step)].bytes == 16000);
  }
  CHECK(r.network_transfers == 24);
  CHECK(r.network_bytes == 24 * 4000);
  CHECK(r.local_bytes == 4 * 16000);  // the initial input -> output copies
  // Each + link carries 6 pieces = 24000 B over 30 us at 1e9 B/s: utilisation 0.8; - links 0.
  CHECK(r.busiest_link_bytes == doctest::Approx(24000));
  CHECK(r.busiest_link_utilization == doctest::Approx(0.8));
  CHECK(r.max_link_utilization == doctest::Approx(0.8));
  CHECK(std::accumulate(r.link_bytes.begin(), r.link_bytes.end(), 0.0) ==
        doctest::Approx(4 * 24000));
  REQUIRE(r.transfer_end.size() == s.transfers.size());
  // The analytic (contention-free) network gives the same: nothing is shared.
  AnalyticNetwork analytic(*ring);
  CHECK(RunTiming(s, *ring, analytic).total.picos() == 30 * kTimingUs);
}

TEST_CASE("bidirectional ring all-reduce on 4: 6 steps of (1 us + 2000 B / 1e9 B/s)") {
  auto ring = TinyRing();
  // Halves of 2000 B go + and - on separate links: 3 us per step, 18 us; every link 12000 B.
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 4000, "ring-bidir");
  FlowNetwork flow(*ring);
  const TimingResult r = RunTiming(s, *ring, flow);
  CHECK(r.total.picos() == 18 * kTimingUs);
  CHECK(r.busiest_link_bytes == doctest::Approx(12000));
  CHECK(r.max_link_utilization == doctest::Approx(12000.0 / (1e9 * 18e-6)));
}

TEST_CASE("fixed overhead and local copy bandwidth") {
  auto ring = TinyRing();
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 4000, "ring");
  {
    // 5 us overhead first: 35 us; the first step starts at 5 us.
    FlowNetwork flow(*ring);
    TimingOptions options;
    options.fixed_overhead = Time::Picos(5 * kTimingUs);
    const TimingResult r = RunTiming(s, *ring, flow, options);
    CHECK(r.total.picos() == 35 * kTimingUs);
    CHECK(r.steps[0].start.picos() == 5 * kTimingUs);
    CHECK(r.busiest_link_utilization == doctest::Approx(24000.0 / (1e9 * 35e-6)));
  }
  {
    // The input -> output copy of 16000 B at 16e9 B/s takes 1 us before the ring starts: 31 us.
    FlowNetwork flow(*ring);
    TimingOptions options;
    options.local_copy_bandwidth = 16e9;
    CHECK(RunTiming(s, *ring, flow, options).total.picos() == 31 * kTimingUs);
  }
}

TEST_CASE("direct all-reduce on a 4-ring: each round is bound by the busiest link") {
  auto ring = TinyRing();
  // Round 1: every chip sends a 4000 B block to each other chip. A + link carries its 1-hop
  // block and two halves (2000 B each) of the 2-hop blocks (ties split both ways): three flows
  // at 1e9/3 B/s; the halves finish sending at 6 us (+2 us latency: 8 us); the 1-hop flow then
  // sends its last 2000 B at full rate by 8 us, +1 us latency: 9 us. Round 2 (the gather) is the
  // same pattern after the joins: 18 us.
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 4000, "direct");
  FlowNetwork flow(*ring);
  const TimingResult r = RunTiming(s, *ring, flow);
  // Rates of 1e9/3 B/s round to whole picoseconds: a few ps of slack.
  CHECK(std::llabs(r.total.picos() - 18 * kTimingUs) <= 4);
  REQUIRE(r.steps.size() == 2);
  CHECK(std::llabs(r.steps[0].end.picos() - 9 * kTimingUs) <= 4);
  CHECK(std::llabs(r.steps[1].start.picos() - 9 * kTimingUs) <= 4);
}

TEST_CASE("link bytes add up to bytes x hops; a mid-size all-to-all runs") {
  auto pod = Grid({8, 8}, {true, true}, 2, 1e11, 1.0);
  const Schedule s = Build(*pod, CollectiveKind::kAllToAll, 128 * 64, "direct");
  FlowNetwork flow(*pod);
  const TimingResult r = RunTiming(s, *pod, flow);
  double expected = 0;
  for (const ChunkTransfer& t : s.transfers) {
    if (!t.local()) expected += static_cast<double>(s.Bytes(t) * pod->Hops(t.src, t.dst));
  }
  CHECK(std::accumulate(r.link_bytes.begin(), r.link_bytes.end(), 0.0) ==
        doctest::Approx(expected));
  CHECK(r.network_transfers == 128 * 127);
  CHECK(r.total.picos() > 0);
  CHECK(r.max_link_utilization <= 1.0 + 1e-9);
}

TEST_CASE("explain: steps, messages, links and their utilisation") {
  auto ring = TinyRing();
  const Schedule s = Build(*ring, CollectiveKind::kAllReduce, 4000, "ring");
  FlowNetwork flow(*ring);
  const TimingResult r = RunTiming(s, *ring, flow);
  const std::string text = ExplainSchedule(s, *ring, &r);
  INFO(text);
  // Step 0: 4 pieces of 4000 B in 0..5 us; each + link carries 4000 B in 5 us at 1e9 B/s: 80%.
  CHECK(text.find("step 0: 4 messages, 16000 B, 0.000 .. 5.000 us") != std::string::npos);
  CHECK(text.find("p0 -> p1: output[3000, +1000) added to output[3000, +1000), 4000 B, 1 hop(s)") !=
        std::string::npos);
  CHECK(text.find("link 0 (chip 0 -> chip 1, dim 0 +): 4000 B, utilisation 80.0%") !=
        std::string::npos);
  CHECK(text.find("step 5: 4 messages") != std::string::npos);
  CHECK(StepLinkBytes(s, *ring)[5][0] == doctest::Approx(4000));
}

TEST_CASE("bus bandwidth factors (nccl-tests)") {
  CHECK(BusBandwidthFactor(CollectiveKind::kAllReduce, 8) == doctest::Approx(1.75));
  CHECK(BusBandwidthFactor(CollectiveKind::kAllGather, 4) == doctest::Approx(0.75));
  CHECK(BusBandwidthFactor(CollectiveKind::kAllToAll, 2) == doctest::Approx(0.5));
  CHECK(BusBandwidthFactor(CollectiveKind::kCollectivePermute, 2) == doctest::Approx(1));
  // One partition: no bytes cross a link, whatever the kind.
  CHECK(BusBandwidthFactor(CollectiveKind::kCollectivePermute, 1) == 0);
  CHECK(BusBandwidthFactor(CollectiveKind::kAllReduce, 1) == 0);
}

TEST_CASE("an empty schedule takes the fixed overhead only") {
  auto ring = TinyRing();
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kCollectivePermute;
  spec.elements = 10;
  const Schedule s = BuildSchedule(spec, *ring);
  FlowNetwork flow(*ring);
  TimingOptions options;
  options.fixed_overhead = Time::Picos(3 * kTimingUs);
  const TimingResult r = RunTiming(s, *ring, flow, options);
  CHECK(r.total.picos() == 3 * kTimingUs);
  CHECK(r.busiest_link == -1);
}

}  // namespace
}  // namespace podsim::sim
