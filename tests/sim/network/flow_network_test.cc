#include "sim/network/flow_network.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "base/error.h"
#include "sim/network/network_util.h"
#include "tests/sim/network/network_test_util.h"
#include "topologies/torus.h"

namespace podsim::sim {
namespace {

using testing::HandTopology;
using testing::kPsPerMicro;
using testing::kPsPerSecond;
using testing::NearPs;
using testing::RunToCompletion;

TEST_CASE("flow: two flows share a link, a third on another link is unaffected") {
  // Links 0 (chip 0 -> 1) and 1 (chip 2 -> 3), 100 B/s each, no latency.
  // Flows a, b: 100 B each over link 0: 50 B/s each, both end at 2 s.
  // Flow c: 100 B alone on link 1: 100 B/s, ends at 1 s.
  HandTopology topo(4);
  topo.SetRoute(0, 1, {topo.AddLink(0, 1, 100, 0)});
  topo.SetRoute(2, 3, {topo.AddLink(2, 3, 100, 0)});
  FlowNetwork net(topo);
  net.Start(1, 0, 1, Bytes{100}, Time());
  net.Start(2, 0, 1, Bytes{100}, Time());
  net.Start(3, 2, 3, Bytes{100}, Time());
  CHECK(net.LinkRates() == std::vector<double>{100, 100});
  const auto done = RunToCompletion(net);
  CHECK(done.at(1).picos() == 2 * kPsPerSecond);
  CHECK(done.at(2).picos() == 2 * kPsPerSecond);
  CHECK(done.at(3).picos() == 1 * kPsPerSecond);
  // Every byte crossed its link exactly once.
  CHECK(net.LinkBytes() == std::vector<double>{200, 100});
  // a and b have one path and one size: one weighted class.
  CHECK(net.stats().flows == 3);
  CHECK(net.stats().classes == 2);
}

TEST_CASE("flow: max-min with a 3-flow bottleneck and a 2-flow link") {
  // Link A (0 -> 1) 90 B/s carries f1, f2, f3; link B (1 -> 2) 100 B/s carries f3, f4.
  // Fair shares: A 90/3 = 30, B 100/2 = 50. A is the bottleneck: f1 = f2 = f3 = 30 B/s.
  // B gives f4 what f3 leaves: 100 - 30 = 70 B/s (not 50: max-min, not equal split).
  // Sizes: f1, f2, f3 = 60 B -> end at 2 s. f4 = 240 B: 140 B by 2 s, then alone on B at
  // 100 B/s: 100 B more in 1 s -> ends at 3 s.
  HandTopology topo(3);
  const int64_t a = topo.AddLink(0, 1, 90, 0);
  const int64_t b = topo.AddLink(1, 2, 100, 0);
  topo.SetRoute(0, 1, {a});
  topo.SetRoute(0, 2, {a, b});
  topo.SetRoute(1, 2, {b});
  FlowNetwork net(topo, FlowOptions{.aggregate = false});
  net.Start(1, 0, 1, Bytes{60}, Time());
  net.Start(2, 0, 1, Bytes{60}, Time());
  net.Start(3, 0, 2, Bytes{60}, Time());
  net.Start(4, 1, 2, Bytes{240}, Time());
  CHECK(net.LinkRates() == std::vector<double>{90, 100});
  const auto done = RunToCompletion(net);
  CHECK(NearPs(done.at(1), 2 * kPsPerSecond));
  CHECK(NearPs(done.at(2), 2 * kPsPerSecond));
  CHECK(NearPs(done.at(3), 2 * kPsPerSecond));
  CHECK(NearPs(done.at(4), 3 * kPsPerSecond));
  CHECK(net.stats().classes == 4);
}

TEST_CASE("flow: staggered sizes on one link re-share as flows leave") {
  // One 100 B/s link, flows of 50, 150, 300 B. Three at 33.3 B/s: the 50 B one ends at 1.5 s
  // (each has sent 50 B). Two at 50 B/s: the 150 B one has 100 B left -> 2 s more -> 3.5 s. The
  // last has 300 - 50 - 100 = 150 B left at 100 B/s -> 1.5 s more -> 5 s (= 500 B / 100 B/s).
  HandTopology topo(2);
  topo.SetRoute(0, 1, {topo.AddLink(0, 1, 100, 0)});
  FlowNetwork net(topo);
  net.Start(7, 0, 1, Bytes{300}, Time());
  net.Start(5, 0, 1, Bytes{50}, Time());
  net.Start(6, 0, 1, Bytes{150}, Time());
  const auto done = RunToCompletion(net);
  CHECK(NearPs(done.at(5), 1'500'000'000'000));
  CHECK(NearPs(done.at(6), 3'500'000'000'000));
  CHECK(NearPs(done.at(7), 5 * kPsPerSecond));
  CHECK(net.stats().partial_fillings == 2);  // after 5 leaves, after 6 leaves
}

TEST_CASE("flow: latency is the last byte's flight time after the rate phase") {
  // Links 0 (chip 0 -> 1) and 1 (chip 1 -> 2): 100 B/s, 0.5 s latency each.
  // A: 100 B over both links; B: 100 B over link 1. Both share link 1 from t = 0 at 50 B/s, so
  // both send their last byte at 2 s. A lands after 2 hops: 2 + 1 = 3 s; B after one: 2.5 s.
  // C alone over both links, 100 B: 1 s + 1 s = 2 s = alpha-beta (sum of latencies + bytes/bw).
  HandTopology topo(3);
  const int64_t l0 = topo.AddLink(0, 1, 100, kPsPerSecond / 2);
  const int64_t l1 = topo.AddLink(1, 2, 100, kPsPerSecond / 2);
  topo.SetRoute(0, 2, {l0, l1});
  topo.SetRoute(1, 2, {l1});
  {
    FlowNetwork net(topo);
    net.Start(1, 0, 2, Bytes{100}, Time());
    net.Start(2, 1, 2, Bytes{100}, Time());
    const auto done = RunToCompletion(net);
    CHECK(done.at(1).picos() == 3 * kPsPerSecond);
    CHECK(done.at(2).picos() == 2'500'000'000'000);
  }
  {
    FlowNetwork net(topo);
    net.Start(3, 0, 2, Bytes{100}, Time());
    CHECK(net.NextEventTime().picos() == 1 * kPsPerSecond);  // data ends: nothing completes yet
    CHECK(net.Advance(Time::Picos(kPsPerSecond)).empty());
    CHECK(net.NextEventTime().picos() == 2 * kPsPerSecond);
    CHECK(net.Advance(Time::Picos(2 * kPsPerSecond)) == std::vector<TransferId>{3});
    CHECK(net.NextEventTime() == Time::Max());
  }
}

TEST_CASE("flow: a flow starting later takes its share from then on") {
  // 100 B/s link. f1 = 100 B at 0 s: 50 B sent by 0.5 s. f2 = 100 B at 0.5 s: both at 50 B/s;
  // f1's last 50 B take 1 s -> 1.5 s. f2 has sent 50 B by then, the rest at 100 B/s -> 2 s.
  HandTopology topo(2);
  topo.SetRoute(0, 1, {topo.AddLink(0, 1, 100, 0)});
  FlowNetwork net(topo);
  net.Start(1, 0, 1, Bytes{100}, Time());
  CHECK(net.NextEventTime().picos() == kPsPerSecond);
  net.Start(2, 0, 1, Bytes{100}, Time::Picos(kPsPerSecond / 2));
  const auto done = RunToCompletion(net);
  CHECK(NearPs(done.at(1), 1'500'000'000'000));
  CHECK(NearPs(done.at(2), 2 * kPsPerSecond));
  // Starting in the past, or past a pending event, is a caller error.
  CHECK_THROWS_AS(net.Start(3, 0, 1, Bytes{1}, Time()), Error);
}

TEST_CASE("flow: split paths, same core, zero bytes, bad input") {
  // 200 B split 50/50 over two disjoint 100 B/s paths of 1 us latency each: 100 B per path,
  // 1 s + 1 us for both, so the transfer completes at 1 s + 1 us.
  HandTopology topo(3);
  const int64_t direct = topo.AddLink(0, 2, 100, kPsPerMicro);
  const int64_t via = topo.AddLink(0, 1, 100, kPsPerMicro / 2);
  const int64_t via2 = topo.AddLink(1, 2, 100, kPsPerMicro / 2);
  topo.SetSplitRoute(0, 2, {{{direct}, 0.5}, {{via, via2}, 0.5}});
  topo.SetRoute(0, 1, {via});
  FlowNetwork net(topo);
  net.Start(1, 0, 2, Bytes{200}, Time());
  net.Start(2, 1, 1, Bytes{500}, Time());  // same core: done at once
  net.Start(3, 0, 1, Bytes{0}, Time());    // nothing to send: the hop latency only
  CHECK(net.Advance(Time()) == std::vector<TransferId>{2});
  const auto done = RunToCompletion(net);
  CHECK(done.at(1).picos() == kPsPerSecond + kPsPerMicro);
  CHECK(done.at(3).picos() == kPsPerMicro / 2);
  CHECK(net.LinkBytes() == std::vector<double>{100, 100, 100});
  CHECK_THROWS_AS(net.Start(4, 0, 3, Bytes{1}, net.NextEventTime()), Error);  // no core 3
  CHECK_THROWS_AS(net.Start(4, 0, 1, Bytes{-1}, Time::Picos(kPsPerSecond * 2)), Error);
  CHECK_THROWS_AS(net.Advance(Time()), Error);  // before the model time
}

TEST_CASE("flow: Advance may not skip an event") {
  HandTopology topo(2);
  topo.SetRoute(0, 1, {topo.AddLink(0, 1, 100, 0)});
  FlowNetwork net(topo);
  net.Start(1, 0, 1, Bytes{100}, Time());
  CHECK_THROWS_AS(net.Advance(Time::Picos(2 * kPsPerSecond)), Error);
  CHECK(net.Advance(Time::Picos(kPsPerSecond / 4)).empty());  // an idle step before the event is fine
  CHECK(net.Advance(Time::Picos(kPsPerSecond)) == std::vector<TransferId>{1});
}

// Reference fluid simulation: max-min rates recomputed from scratch by naive progressive
// filling at every event, in double seconds. Returns completion times in seconds.
struct RefFlow {
  std::vector<int64_t> links;
  double bytes;
  double start;
  double latency;  // s
  int64_t transfer;
};
std::map<int64_t, double> ReferenceFluid(const std::vector<double>& capacity, std::vector<RefFlow> flows) {
  std::map<int64_t, double> done;
  std::vector<double> remaining;
  for (const RefFlow& f : flows) remaining.push_back(f.bytes);
  std::vector<bool> finished(flows.size(), false);
  for (size_t i = 0; i < flows.size(); ++i) {
    if (flows[i].links.empty() || flows[i].bytes == 0) {  // nothing crosses a link
      finished[i] = true;
      done[flows[i].transfer] = std::max(done[flows[i].transfer], flows[i].start + flows[i].latency);
    }
  }
  double t = 0;
  while (true) {
    std::vector<size_t> active;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (!finished[i] && flows[i].start <= t) active.push_back(i);
    }
    double next_start = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < flows.size(); ++i) {
      if (!finished[i] && flows[i].start > t) next_start = std::min(next_start, flows[i].start);
    }
    if (active.empty() && std::isinf(next_start)) break;
    // Naive progressive filling.
    std::vector<double> rate(flows.size(), 0), cap = capacity;
    std::vector<bool> frozen(flows.size(), false);
    size_t left = active.size();
    while (left > 0) {
      std::vector<int> count(capacity.size(), 0);
      for (size_t i : active) {
        if (!frozen[i]) for (int64_t l : flows[i].links) ++count[l];
      }
      double best = std::numeric_limits<double>::infinity();
      int64_t best_link = -1;
      for (size_t l = 0; l < capacity.size(); ++l) {
        if (count[l] > 0 && cap[l] / count[l] < best) best = cap[l] / count[l], best_link = static_cast<int64_t>(l);
      }
      for (size_t i : active) {
        if (frozen[i] || std::find(flows[i].links.begin(), flows[i].links.end(), best_link) == flows[i].links.end()) continue;
        frozen[i] = true;
        rate[i] = best;
        --left;
        for (int64_t l : flows[i].links) cap[l] -= best;
      }
    }
    double dt = next_start - t;
    for (size_t i : active) dt = std::min(dt, remaining[i] / rate[i]);
    t += dt;
    for (size_t i : active) {
      remaining[i] -= rate[i] * dt;
      if (remaining[i] <= 1e-9 * flows[i].bytes) {
        finished[i] = true;
        done[flows[i].transfer] = std::max(done[flows[i].transfer], t + flows[i].latency);
      }
    }
  }
  return done;
}

TEST_CASE("flow: random traffic on a 4x4 torus matches a from-scratch max-min reference") {
  // 4x4 torus, 2 cores per chip, split ties (half-ring destinations use both directions).
  // Three waves of random transfers (sizes 1 kB .. 1 MB) at 0, 3 us and 7 us; the reference
  // recomputes every rate from scratch at every event, the model refills incrementally.
  // Tolerance: the model rounds each data end up to a picosecond, at most one rounding per
  // event on a transfer's history: 1 ns is far above that and far below the ~10 us times.
  topo::TopologyConfig config;
  config.dims = {4, 4};
  config.cores_per_chip = 2;
  config.link_bandwidth = 1e11;
  config.hop_latency_us = 0.5;
  const topo::TorusTopology torus(config);
  std::vector<double> capacity;
  for (const topo::Link& l : torus.links()) capacity.push_back(l.bandwidth.value);

  for (bool aggregate : {true, false}) {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int64_t> core(0, torus.num_cores() - 1);
    std::uniform_int_distribution<int64_t> size(1'000, 1'000'000);
    FlowNetwork net(torus, FlowOptions{.aggregate = aggregate});
    std::vector<RefFlow> ref;
    std::map<TransferId, Time> done;
    TransferId id = 0;
    for (int64_t wave_ps : {int64_t{0}, 3 * kPsPerMicro, 7 * kPsPerMicro}) {
      while (net.NextEventTime().picos() < wave_ps) {
        const Time t = net.NextEventTime();
        for (TransferId finished : net.Advance(t)) done[finished] = t;
      }
      for (int i = 0; i < 60; ++i) {
        const int64_t src = core(rng);
        const int64_t dst = i % 10 == 0 ? src : core(rng);
        // Some repeated sizes so that aggregation has identical flows to merge.
        const int64_t bytes = i % 3 == 0 ? 250'000 : size(rng);
        net.Start(id, src, dst, Bytes{bytes}, Time::Picos(wave_ps));
        const auto paths = torus.RouteSplit(src, dst);
        const auto parts = internal::SplitBytes(bytes, paths);
        for (size_t p = 0; p < paths.size(); ++p) {
          ref.push_back(RefFlow{paths[p].links, static_cast<double>(parts[p]), wave_ps * 1e-12,
                                internal::PathLatencyPs(torus, paths[p].links) * 1e-12, id});
        }
        ++id;
      }
    }
    done.merge(RunToCompletion(net));
    const auto expected = ReferenceFluid(capacity, ref);
    REQUIRE(done.size() == expected.size());
    for (const auto& [tid, t] : expected) {
      INFO("transfer " << tid << " aggregate " << aggregate);
      CHECK(std::abs(done.at(tid).seconds() - t) < 1e-9);
    }
    if (aggregate) CHECK(net.stats().classes < net.stats().flows);
    // Random traffic has many distinct levels: both filling methods ran against the reference.
    CHECK(net.stats().filling_rounds > 0);
    CHECK(net.stats().heap_fillings > 0);
    CHECK(net.stats().partial_fillings > 0);
  }
}

TEST_CASE("flow: many small independent groups, staggered, match the from-scratch reference") {
  // Refills limited to a connected component (see flow_network.h) against the reference that
  // recomputes every rate at every event. An 8x8 torus; each wave starts a few transfers to a
  // neighbour or two hops away (paths of 1-2 links, so components stay small) at its own
  // time, while earlier waves are still in flight; some waves reuse a link so that components
  // merge, and some start as others end. Tolerance as in the test above.
  topo::TopologyConfig config;
  config.dims = {8, 8};
  config.cores_per_chip = 1;
  config.link_bandwidth = 1e11;
  config.hop_latency_us = 0.5;
  const topo::TorusTopology torus(config);
  std::vector<double> capacity;
  for (const topo::Link& l : torus.links()) capacity.push_back(l.bandwidth.value);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> chip(0, 63);
  std::uniform_int_distribution<int64_t> size(10'000, 400'000);
  std::uniform_int_distribution<int> step(0, 3);
  FlowNetwork net(torus);
  std::vector<RefFlow> ref;
  std::map<TransferId, Time> done;
  TransferId id = 0;
  for (int wave = 0; wave < 60; ++wave) {
    const int64_t wave_ps = wave * 300'000;  // 0.3 us apart; a 400 kB transfer alone takes 4 us
    while (net.NextEventTime().picos() < wave_ps) {
      const Time t = net.NextEventTime();
      for (TransferId finished : net.Advance(t)) done[finished] = t;
    }
    const int count = wave == 0 ? 150 : 3;  // a large first batch, then small ones
    for (int i = 0; i < count; ++i) {
      const int64_t src = chip(rng);
      const int64_t x = src % 8, y = src / 8;
      const int s = step(rng);
      const int64_t dst = s == 0 ? (x + 1) % 8 + 8 * y : s == 1 ? x + 8 * ((y + 1) % 8)
                        : s == 2 ? (x + 2) % 8 + 8 * y : (x + 1) % 8 + 8 * ((y + 1) % 8);
      const int64_t bytes = size(rng);
      net.Start(id, src, dst, Bytes{bytes}, Time::Picos(wave_ps));
      const auto paths = torus.RouteSplit(src, dst);
      const auto parts = internal::SplitBytes(bytes, paths);
      for (size_t p = 0; p < paths.size(); ++p) {
        ref.push_back(RefFlow{paths[p].links, static_cast<double>(parts[p]), wave_ps * 1e-12,
                              internal::PathLatencyPs(torus, paths[p].links) * 1e-12, id});
      }
      ++id;
    }
  }
  done.merge(RunToCompletion(net));
  const auto expected = ReferenceFluid(capacity, ref);
  REQUIRE(done.size() == expected.size());
  for (const auto& [tid, t] : expected) {
    INFO("transfer " << tid);
    CHECK(std::abs(done.at(tid).seconds() - t) < 1e-9);
  }
  // The component path ran, on starts (59 small batches) and on ends (the rest of the count).
  CHECK(net.stats().component_fillings > 70);
}

TEST_CASE("flow: AllToAll on a 4x4 torus with 2 cores per chip; aggregation is exact") {
  // Direct AllToAll, 64 KiB per pair. Cores of one chip have one path to cores of another chip:
  // with aggregation, 4 core pairs per chip pair share a class (plus the on-chip pairs).
  topo::TopologyConfig config;
  config.dims = {4, 4};
  config.cores_per_chip = 2;
  const topo::TorusTopology torus(config);
  std::map<TransferId, Time> results[2];
  FlowNetwork::Stats stats[2];
  for (int aggregate = 0; aggregate < 2; ++aggregate) {
    FlowNetwork net(torus, FlowOptions{.aggregate = aggregate == 1});
    const int64_t n = torus.num_cores();
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t d = 0; d < n; ++d) net.Start(s * n + d, s, d, Bytes{65536}, Time());
    }
    results[aggregate] = RunToCompletion(net);
    stats[aggregate] = net.stats();
    // Bytes are conserved: every flow's bytes crossed every link of its path.
    double sum = 0;
    for (double b : net.LinkBytes()) sum += b;
    double expected = 0;
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t d = 0; d < n; ++d) {
        for (const auto& path : torus.RouteSplit(s, d)) expected += 65536.0 * path.fraction * path.links.size();
      }
    }
    CHECK(sum == doctest::Approx(expected).epsilon(1e-12));
  }
  CHECK(results[0].size() == 32 * 32);
  for (const auto& [id, t] : results[0]) CHECK(NearPs(results[1].at(id), t.picos(), 2));
  CHECK(stats[1].classes * 3 < stats[0].classes);
}

}  // namespace
}  // namespace podsim::sim
