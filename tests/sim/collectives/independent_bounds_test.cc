// Every network model against lower bounds computed here, independently of
// sim/collectives/bounds.h: random small grids (meshes, tori, partly wrapped, 1 or 2 cores per
// chip) and random connected graphs with uneven links, random replica groups, payloads and
// algorithms. The bounds follow from what each collective must move, not from any schedule:
//
//  - cut: for a set S of chips, the bytes that must cross from S to the rest (and back) over the
//    bandwidth of the links that cross. Per replica group with a members on S's chips and b on
//    the others (a, b > 0), from S to the rest: all-gather a x B (each of S's inputs reaches the
//    other side at least once); reduce-scatter b x B / G (the partial sums over S of the other
//    side's blocks); all-reduce B (the other side needs the sum of S's inputs); all-to-all
//    a x b x B / G. Groups are independent data, so their bytes add. Every cut when the graph
//    has at most 12 chips (all 2^n - 2), else 4,000 random ones; a single chip's cut is its
//    injection bound.
//  - latency: a member's data must reach every other member of its group, so no collective
//    ends before the longest of the shortest paths (by hop latency, Dijkstra) between two of
//    its members on different chips.
//
// A model that undercounts contention, drops a latency or loses bytes on some shape falls
// below one of them.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

// Seconds no run of `kind` over `groups` (B bytes per member) can beat on `pod`.
struct Bounds {
  double cut_s = 0;
  double latency_s = 0;
  double Max() const { return std::max(cut_s, latency_s); }
};

double CrossingBytes(CollectiveKind kind, double bytes, int64_t g, int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const double per_member = bytes / static_cast<double>(g);
  switch (kind) {
    case CollectiveKind::kAllGather:
      return static_cast<double>(a) * bytes;
    case CollectiveKind::kReduceScatter:
      return static_cast<double>(b) * per_member;
    case CollectiveKind::kAllReduce:
      return bytes;
    case CollectiveKind::kAllToAll:
      return static_cast<double>(a * b) * per_member;
    default:
      return 0;
  }
}

Bounds IndependentBounds(const topo::Topology& pod, CollectiveKind kind, double bytes,
                         const std::vector<std::vector<int64_t>>& groups, std::mt19937_64& rng) {
  const int64_t chips = pod.num_chips();
  std::vector<const topo::Link*> ici;
  for (const topo::Link& l : pod.links()) {
    if (l.src_chip != l.dst_chip) ici.push_back(&l);
  }
  Bounds bounds;
  // Cuts, as bit masks over the chips (chips <= 63 here).
  auto cut_seconds = [&](uint64_t in_s) {
    auto inside = [&](int64_t chip) { return ((in_s >> chip) & 1) != 0; };
    double out_bw = 0, in_bw = 0;
    for (const topo::Link* l : ici) {
      if (inside(l->src_chip) && !inside(l->dst_chip)) out_bw += l->bandwidth.value;
      if (!inside(l->src_chip) && inside(l->dst_chip)) in_bw += l->bandwidth.value;
    }
    double out_bytes = 0, in_bytes = 0;
    for (const auto& group : groups) {
      int64_t a = 0;
      for (int64_t p : group) a += inside(pod.ChipOfCore(p)) ? 1 : 0;
      const auto g = static_cast<int64_t>(group.size());
      out_bytes += CrossingBytes(kind, bytes, g, a, g - a);
      in_bytes += CrossingBytes(kind, bytes, g, g - a, a);
    }
    double s = 0;
    if (out_bytes > 0) s = std::max(s, out_bw > 0 ? out_bytes / out_bw : 1e300);
    if (in_bytes > 0) s = std::max(s, in_bw > 0 ? in_bytes / in_bw : 1e300);
    return s;
  };
  REQUIRE(chips <= 63);
  if (chips <= 12) {
    for (uint64_t m = 1; m + 1 < (uint64_t{1} << chips); ++m) {
      bounds.cut_s = std::max(bounds.cut_s, cut_seconds(m));
    }
  } else {
    std::uniform_int_distribution<uint64_t> bits;
    const uint64_t all = (uint64_t{1} << chips) - 1;
    for (int k = 0; k < 4000; ++k) {
      const uint64_t m = bits(rng) & all;
      if (m != 0 && m != all) bounds.cut_s = std::max(bounds.cut_s, cut_seconds(m));
    }
    for (int64_t c = 0; c < chips; ++c) {
      bounds.cut_s = std::max(bounds.cut_s, cut_seconds(uint64_t{1} << c));
    }
  }
  // Shortest hop latency between chips: Dijkstra from every chip.
  std::vector<std::vector<double>> dist(static_cast<size_t>(chips));
  for (int64_t s = 0; s < chips; ++s) {
    std::vector<double>& d = dist[static_cast<size_t>(s)];
    d.assign(static_cast<size_t>(chips), std::numeric_limits<double>::infinity());
    using Item = std::pair<double, int64_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
    d[static_cast<size_t>(s)] = 0;
    queue.push({0, s});
    while (!queue.empty()) {
      const auto [du, u] = queue.top();
      queue.pop();
      if (du > d[static_cast<size_t>(u)]) continue;
      for (const topo::Link* l : ici) {
        if (l->src_chip != u) continue;
        const double dv = du + l->latency.seconds();
        if (dv < d[static_cast<size_t>(l->dst_chip)]) {
          d[static_cast<size_t>(l->dst_chip)] = dv;
          queue.push({dv, l->dst_chip});
        }
      }
    }
  }
  for (const auto& group : groups) {
    for (int64_t p : group) {
      for (int64_t q : group) {
        const double d =
            dist[static_cast<size_t>(pod.ChipOfCore(p))][static_cast<size_t>(pod.ChipOfCore(q))];
        bounds.latency_s = std::max(bounds.latency_s, d);
      }
    }
  }
  return bounds;
}

// A random grid of 2..4 chips per axis (2 or 3 axes), each axis wrapped or not, 1 or 2 cores
// per chip, at most 32 partitions; or a random connected graph of 4..10 chips (a random
// spanning tree plus extra edges) with link bandwidths of 2e10..1e11 B/s and latencies of
// 0.5..2 us.
std::unique_ptr<topo::Topology> RandomPod(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> coin(0, 1);
  if (coin(rng) == 0) {
    std::uniform_int_distribution<int> ndims(2, 3), size(2, 4);
    std::vector<int64_t> dims;
    std::vector<bool> wrap;
    int64_t cores = 1;
    do {
      dims.assign(static_cast<size_t>(ndims(rng)), 0);
      wrap.clear();
      for (int64_t& d : dims) {
        d = size(rng);
        wrap.push_back(coin(rng) == 1);
      }
      cores = coin(rng) + 1;
    } while (cores * std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>()) >
             32);
    return testing::Grid(dims, wrap, cores);
  }
  std::uniform_int_distribution<int64_t> nchips(4, 10);
  const int64_t n = nchips(rng);
  std::uniform_real_distribution<double> bw(2e10, 1e11), lat(0.5, 2.0);
  nlohmann::json edges = nlohmann::json::array();
  std::vector<std::pair<int64_t, int64_t>> seen;
  auto add = [&](int64_t a, int64_t b) {
    if (a == b) return;
    const auto e = std::minmax(a, b);
    if (std::find(seen.begin(), seen.end(), std::pair<int64_t, int64_t>(e)) != seen.end()) return;
    seen.emplace_back(e);
    edges.push_back({{"chips", {a, b}}, {"link_bandwidth", bw(rng)}, {"hop_latency_us", lat(rng)}});
  };
  for (int64_t c = 1; c < n; ++c) {
    add(c, std::uniform_int_distribution<int64_t>(0, c - 1)(rng));
  }
  for (int64_t k = 0; k < n / 2; ++k) {
    std::uniform_int_distribution<int64_t> chip(0, n - 1);
    add(chip(rng), chip(rng));
  }
  return topo::LoadTopology(nlohmann::json{{"kind", "custom"}, {"num_chips", n}, {"edges", edges}},
                            "topology");
}

// Every partition in one group, or the partitions shuffled into equal groups of 2 or more.
std::vector<std::vector<int64_t>> RandomGroups(int64_t partitions, std::mt19937_64& rng) {
  std::vector<int64_t> sizes;
  for (int64_t g = 2; g < partitions; ++g) {
    if (partitions % g == 0) sizes.push_back(g);
  }
  if (sizes.empty() || std::uniform_int_distribution<int>(0, 2)(rng) == 0) return {};
  const int64_t g = sizes[std::uniform_int_distribution<size_t>(0, sizes.size() - 1)(rng)];
  std::vector<int64_t> order(static_cast<size_t>(partitions));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<int64_t>> groups;
  for (int64_t k = 0; k < partitions; k += g) {
    groups.emplace_back(order.begin() + k, order.begin() + k + g);
    std::sort(groups.back().begin(), groups.back().end());
  }
  return groups;
}

TEST_CASE("every model and algorithm respects independently computed cut and latency bounds") {
  std::mt19937_64 rng(20261206);
  int runs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const auto pod = RandomPod(rng);
    const int64_t partitions = pod->num_cores();
    const std::vector<std::vector<int64_t>> groups = RandomGroups(partitions, rng);
    std::vector<std::vector<int64_t>> resolved = groups;
    if (resolved.empty()) {
      resolved.emplace_back(static_cast<size_t>(partitions));
      std::iota(resolved[0].begin(), resolved[0].end(), 0);
    }
    const auto g = static_cast<int64_t>(resolved[0].size());
    // Whole elements per member block: a multiple of g elements of 4 bytes.
    const int64_t elements = g * std::uniform_int_distribution<int64_t>(16, 65536)(rng);
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
      CollectiveSpec spec;
      spec.kind = kind;
      spec.element_bytes = 4;
      spec.elements = kind == CollectiveKind::kAllGather ? elements / g : elements;
      spec.replica_groups = groups;
      const double bytes = static_cast<double>(spec.elements * 4);
      const Bounds bound = IndependentBounds(*pod, kind, bytes, resolved, rng);
      for (const std::string& algorithm : AlgorithmNames(kind)) {
        AlgorithmOptions options;
        options.algorithm = algorithm;
        std::unique_ptr<Schedule> schedule;
        try {
          schedule = std::make_unique<Schedule>(BuildSchedule(spec, *pod, options));
        } catch (const Error&) {
          continue;  // the algorithm does not apply to these groups on this topology
        }
        for (const char* model : {"analytic", "flow", "packet"}) {
          CAPTURE(trial);
          CAPTURE(pod->name());
          CAPTURE(partitions);
          CAPTURE(g);
          CAPTURE(CollectiveKindName(kind));
          CAPTURE(algorithm);
          CAPTURE(model);
          CAPTURE(bytes);
          auto network = MakeNetworkModel(model, *pod, NetworkOptions{});
          const double t = RunTiming(*schedule, *pod, *network).total.seconds();
          CAPTURE(t);
          CAPTURE(bound.cut_s);
          CAPTURE(bound.latency_s);
          CHECK(t >= bound.Max() * (1 - 1e-9));
          ++runs;
        }
      }
    }
  }
  // (Runs come within 5% of the latency bound and 15% of a cut bound, so both bite.)
  CHECK(runs >= 700);
}

}  // namespace
}  // namespace podsim::sim
