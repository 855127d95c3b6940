// Closed-form estimates: hand values, and agreement with the flow model where the algorithm
// causes no contention (rings, torus phases) or a known bottleneck (direct all-to-all).

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/closed_form.h"
#include "sim/collectives/timing.h"
#include "sim/network/flow_network.h"
#include "tests/sim/collectives/collectives_test_util.h"

namespace podsim::sim {
namespace {

using testing::Grid;

AnalyticAxis Axis(int64_t size, bool wrap) {
  AnalyticAxis a;
  a.size = size;
  a.wraparound = wrap;
  a.bandwidth = 1e11;
  a.hop_latency_s = 1e-6;
  return a;
}

AnalyticInput Input(CollectiveKind kind, const std::string& algorithm,
                    std::vector<AnalyticAxis> axes, double bytes) {
  AnalyticInput in;
  in.kind = kind;
  in.algorithm = algorithm;
  in.axes = std::move(axes);
  in.bytes = bytes;
  return in;
}

// Alpha-beta / scaling-book estimates in microseconds.
double AlphaBetaUs(const AnalyticInput& in) { return EstimateAlphaBeta(in).seconds * 1e6; }
double BookUs(const AnalyticInput& in) { return EstimateScalingBook(in).seconds * 1e6; }

TEST_CASE("torus rotations share the data by speed: a rotation starting on a line gets less") {
  // 4x4 with dim 0 a ring and dim 1 a line, B = 1e11, per byte of D: rotation A (ring first):
  // 3/4 / (2B) + (3/4) / 4 / B = 0.5625 / B; rotation B (line first): 3/4 / B + (3/4) / 4 /
  // (2B) = 0.84375 / B. Speeds 16/9 and 32/27: shares 0.6 and 0.4. The bandwidth term is then
  // D / (16/9 + 32/27) = 27/80 D / B for both (equal parts: the slower one's 0.421875 D / B).
  const std::vector<AnalyticAxis> axes = {Axis(4, true), Axis(4, false)};
  const std::vector<double> shares = TorusRotationShares({{axes[0], axes[1]}, {axes[1], axes[0]}});
  REQUIRE(shares.size() == 2);
  CHECK(shares[0] == doctest::Approx(0.6));
  CHECK(shares[1] == doctest::Approx(0.4));
  // Reduce-scatter, S = 16e6 B (D = S): bandwidth 27/80 x 16e6 / 1e11 s = 54 us. Latency of the
  // slower-latency rotation: the line's 3 steps + 2 closing-hop latencies + the ring's 3 = 8 us.
  const AnalyticEstimate e =
      EstimateAlphaBeta(Input(CollectiveKind::kReduceScatter, "torus", axes, 16e6));
  CHECK(e.bandwidth_s * 1e6 == doctest::Approx(54));
  CHECK(e.latency_s * 1e6 == doctest::Approx(8));
  // On a torus with equal axes the shares are equal.
  const std::vector<double> square =
      TorusRotationShares({{Axis(4, true), Axis(4, true)}, {Axis(4, true), Axis(4, true)}});
  CHECK(square[0] == doctest::Approx(0.5));
  CHECK(square[1] == doctest::Approx(0.5));
}

TEST_CASE("alpha-beta hand values") {
  // Bidirectional ring all-gather on an 8-ring, S = 1e6 B: D = 8e6 B, 7 steps of
  // (1 us + 8e6 / (2 * 8) B / 1e11 B/s = 5 us) = 42 us.
  CHECK(AlphaBetaUs(Input(CollectiveKind::kAllGather, "ring-bidir", {Axis(8, true)}, 1e6)) ==
        doctest::Approx(42));
  // Unidirectional ring all-reduce: 14 steps of (1 us + 1e6 / 8 / 1e11 = 1.25 us) = 31.5 us.
  CHECK(AlphaBetaUs(Input(CollectiveKind::kAllReduce, "ring", {Axis(8, true)}, 1e6)) ==
        doctest::Approx(31.5));
  // On a line of 8 the reverse ring gains nothing, and each piece crosses the 7-hop closing hop
  // once per phase: 14 x (1 us + 1.25 us) + 2 x 6 us = 43.5 us for ring-bidir.
  CHECK(AlphaBetaUs(Input(CollectiveKind::kAllReduce, "ring-bidir", {Axis(8, false)}, 1e6)) ==
        doctest::Approx(43.5));
  // Torus all-reduce on 4x4, S = 16e6 B, cut into 2 rotations of D = 8e6 B running at once on
  // different axes. Per rotation: phase 1: 3 x (1 us + 8e6 / 4 / 2e11 = 10 us) = 33 us; phase 2
  // on 2e6 B: 3 x (1 + 2.5) = 10.5 us; reduce-scatter 43.5 us, all-reduce 87 us (one rotation
  // over all 16e6 B, one axis at a time, would take 162 us).
  const AnalyticEstimate torus = EstimateAlphaBeta(
      Input(CollectiveKind::kAllReduce, "torus", {Axis(4, true), Axis(4, true)}, 16e6));
  CHECK(torus.seconds * 1e6 == doctest::Approx(87));
  CHECK(torus.latency_s * 1e6 == doctest::Approx(12));
  // Direct all-to-all on an 8-ring, S = 8e6 B: the busiest link carries 1 + 2 + 3 + 8/4 = 8
  // messages of 1e6 B = 80 us, plus 4 hops of latency: 84 us.
  CHECK(AlphaBetaUs(Input(CollectiveKind::kAllToAll, "direct", {Axis(8, true)}, 8e6)) ==
        doctest::Approx(84));
  // Direct all-to-all on 4x4, S = 16e6 B: per axis load 1 + 4/4 = 2 messages x 16^2 / (4 * 16)
  // = 8 messages of 1e6 B = 80 us; latency 2 + 2 hops: 84 us.
  CHECK(AlphaBetaUs(Input(CollectiveKind::kAllToAll, "direct", {Axis(4, true), Axis(4, true)},
                          16e6)) == doctest::Approx(84));
  // Dim-staged on 4x4: per stage 2 x 4e6 B = 80 us + 2 hops: 2 x 82 = 164 us.
  CHECK(AlphaBetaUs(Input(CollectiveKind::kAllToAll, "dim-staged", {Axis(4, true), Axis(4, true)},
                          16e6)) == doctest::Approx(164));
  // A mesh line of 8: the middle link carries 4 * 4 = 16 messages.
  CHECK(EstimateAlphaBeta(Input(CollectiveKind::kAllToAll, "direct", {Axis(8, false)}, 8e6))
                .bandwidth_s *
            1e6 ==
        doctest::Approx(160));
}

TEST_CASE("scaling-book hand values") {
  // All-gather on an 8-ring, S = 1e6: V = 8e6, W = 2e11: max(1 us * 8 / 2, 40 us) = 40 us.
  CHECK(BookUs(Input(CollectiveKind::kAllGather, "", {Axis(8, true)}, 1e6)) == doctest::Approx(40));
  // All-reduce, V = S = 1e6: 2 x max(4 us, 5 us) = 10 us; no wraparound doubles it.
  CHECK(BookUs(Input(CollectiveKind::kAllReduce, "", {Axis(8, true)}, 1e6)) == doctest::Approx(10));
  CHECK(BookUs(Input(CollectiveKind::kAllReduce, "", {Axis(8, false)}, 1e6)) ==
        doctest::Approx(20));
  // All-to-all = all-gather / 4: 10 us.
  CHECK(BookUs(Input(CollectiveKind::kAllToAll, "", {Axis(8, true)}, 1e6)) == doctest::Approx(10));
  // Two axes: max(1 us * (4 + 4) / 2, V / (2 W)) with V = 16e6: 40 us.
  CHECK(BookUs(Input(CollectiveKind::kAllGather, "", {Axis(4, true), Axis(4, true)}, 1e6)) ==
        doctest::Approx(40));
}

TEST_CASE("analytic input from a topology") {
  auto pod = Grid({8, 4}, {true, false}, 2, 5e10, 2.0);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.elements = 1000;
  const AnalyticInput torus = AnalyticInputFor(spec, *pod, "torus");
  REQUIRE(torus.axes.size() == 3);
  CHECK(torus.axes[0].core_axis);  // all-reduce: cores first, then the larger dim 0, dim 1
  CHECK(torus.axes[1].size == 8);
  CHECK(torus.axes[1].wraparound);
  CHECK(torus.axes[2].size == 4);
  CHECK_FALSE(torus.axes[2].wraparound);
  CHECK(torus.axes[1].bandwidth == doctest::Approx(5e10));
  CHECK(torus.axes[1].hop_latency_s * 1e6 == doctest::Approx(2));
  CHECK(torus.bytes == doctest::Approx(4000));
  spec.kind = CollectiveKind::kAllGather;
  const AnalyticInput ring = AnalyticInputFor(spec, *pod, "ring");
  CHECK(ring.axes.back().core_axis);  // otherwise dims first, cores last
}

// Flow-model time of the schedule, in microseconds.
double FlowMicros(const topo::Topology& topology, const CollectiveSpec& spec,
                  const std::string& algorithm) {
  AlgorithmOptions options;
  options.algorithm = algorithm;
  const Schedule s = BuildSchedule(spec, topology, options);
  FlowNetwork flow(topology);
  return RunTiming(s, topology, flow).total.micros();
}

TEST_CASE("alpha-beta agrees with the flow model on rings and torus phases") {
  // Rings whose edges are single hops on distinct links (tori, and the comb on a mesh), and
  // torus phases on wrapped axes (lines use disjoint links), see no contention: the flow model
  // must match the closed form up to picosecond rounding (0.1%). So must a unidirectional ring
  // on a line (its closing hop runs on the links the ring does not use). Upper estimates that
  // the flow model undercuts by at most 15%: bidirectional rings on a line (the closed form
  // counts full contention on the shared closing path) and rings through the cores of a chip
  // (the closed form runs every step at the slowest link's pace and latency, while each ICI
  // edge's send queue sends its chunks back to back and the dependency chain crosses an ICI hop
  // only every other step), and torus phases after the core phase (half of a piece may be
  // complete, and start, before the previous phase ends).
  // Near (within 10% either way): the torus algorithm on a mesh. Its two rotations run the same
  // phases on the other axis; on lines their closing paths make the rings' steps drift, so one
  // rotation's second phase can overlap the other's first phase on the same links, contention the
  // closed form does not count. The overlap is at most the closing-hop slack of one phase: 2 hop
  // latencies of a 4-line phase of ~3 steps x (1 us + 3 us), under 10% of the total.
  struct Case {
    std::unique_ptr<topo::Topology> topology;
    std::vector<std::string> exact, upper, near;
  };
  std::vector<Case> cases;
  cases.push_back({Grid({8}, {true}), {"ring", "ring-bidir", "torus"}, {}, {}});
  cases.push_back({Grid({4, 4}, {true, true}), {"ring", "ring-bidir", "torus"}, {}, {}});
  cases.push_back({Grid({4, 4}, {true, true}, 2), {}, {"ring", "ring-bidir", "torus"}, {}});
  cases.push_back({Grid({4, 4}, {false, false}), {"ring", "ring-bidir"}, {}, {"torus"}});
  cases.push_back({Grid({8}, {false}), {"ring"}, {"ring-bidir", "torus"}, {}});
  // A ring axis beside a line: the rotations' shares balance their own phases, but the line
  // rotation's big first phase and the ring rotation's second phase share the line's links, which
  // the closed form does not count: the flow model is up to 25% slower; it can be a little
  // faster (all-reduce: its rotations' all-gathers start as soon as each one's reduce-scatter
  // ends, where the closed form adds the slowest rotation's latency twice).
  {
    const std::unique_ptr<topo::Topology> mixed = Grid({4, 4}, {true, false});
    for (CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      CollectiveSpec spec;
      spec.kind = kind;
      spec.elements = 1 << 18;
      INFO(CollectiveKindName(kind));
      const double closed =
          EstimateAlphaBeta(AnalyticInputFor(spec, *mixed, "torus")).seconds * 1e6;
      const double flow = FlowMicros(*mixed, spec, "torus");
      CHECK(flow >= closed * 0.95);
      CHECK(flow <= closed * 1.25);
    }
  }
  for (const Case& c : cases) {
    for (CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      CollectiveSpec spec;
      spec.kind = kind;
      spec.elements = 1 << 18;
      for (const std::string& algorithm : c.exact) {
        INFO(c.topology->name() << " " << CollectiveKindName(kind) << " " << algorithm);
        const double expected =
            EstimateAlphaBeta(AnalyticInputFor(spec, *c.topology, algorithm)).seconds * 1e6;
        CHECK(FlowMicros(*c.topology, spec, algorithm) == doctest::Approx(expected).epsilon(1e-3));
      }
      for (const std::string& algorithm : c.upper) {
        INFO(c.topology->name() << " " << CollectiveKindName(kind) << " " << algorithm);
        const double expected =
            EstimateAlphaBeta(AnalyticInputFor(spec, *c.topology, algorithm)).seconds * 1e6;
        const double flow = FlowMicros(*c.topology, spec, algorithm);
        CHECK(flow <= expected * 1.001);
        CHECK(flow >= expected * 0.85);
      }
      for (const std::string& algorithm : c.near) {
        INFO(c.topology->name() << " " << CollectiveKindName(kind) << " " << algorithm);
        const double expected =
            EstimateAlphaBeta(AnalyticInputFor(spec, *c.topology, algorithm)).seconds * 1e6;
        CHECK(FlowMicros(*c.topology, spec, algorithm) == doctest::Approx(expected).epsilon(0.1));
      }
    }
  }
}

TEST_CASE(
    "direct all-to-all: the flow model lies between the busiest-link bound and the estimate") {
  // With every pair at once the busiest link sets the time: the flow model needs at least its
  // bytes / bandwidth. The estimate adds the latency of the longest route (the diameter), an
  // upper bound: the flows that finish last cross the busiest link but not always the diameter.
  for (const auto& topology :
       {Grid({8}, {true}), Grid({4, 4}, {true, true}), Grid({4, 4}, {true, true}, 2)}) {
    CollectiveSpec spec;
    spec.kind = CollectiveKind::kAllToAll;
    spec.elements = 1 << 20;
    INFO(topology->name());
    const AnalyticEstimate e = EstimateAlphaBeta(AnalyticInputFor(spec, *topology, "direct"));
    const double flow = FlowMicros(*topology, spec, "direct");
    CHECK(flow >= e.bandwidth_s * 1e6);
    CHECK(flow <= 1.02 * e.seconds * 1e6);
  }
}

}  // namespace
}  // namespace podsim::sim
