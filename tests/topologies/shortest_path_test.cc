// Topologies routed by shortest paths: twisted tori and custom edge lists (Boost.Graph).

#include <doctest/doctest.h>

#include <bit>

#include "tests/topologies/test_util.h"
#include "topologies/config.h"
#include "topologies/custom.h"
#include "topologies/shortest_paths.h"
#include "topologies/torus.h"

namespace podsim::topo {
namespace {

using testing::TorusJson;

void CheckChain(const Topology& t, const std::vector<int64_t>& route, int64_t src_chip,
                int64_t dst_chip) {
  int64_t cur = src_chip;
  for (int64_t id : route) {
    REQUIRE(id >= 0);
    REQUIRE(id < static_cast<int64_t>(t.links().size()));
    CHECK(t.links()[id].src_chip == cur);
    cur = t.links()[id].dst_chip;
  }
  CHECK(cur == dst_chip);
}

TorusTopology Twisted(std::vector<int64_t> offsets) {
  nlohmann::json j = TorusJson({4, 4, 8});
  j["twist"] = {{"dim", 2}, {"offsets", offsets}};
  return TorusTopology(TopologyConfig::FromJson(j, "topology"));
}

// TPU v4's k x k x 2k wiring: both short axes' wraps move k along the long axis.
TorusTopology TwistedV4(const std::string& tie_break) {
  nlohmann::json j = TorusJson({4, 4, 8});
  j["twist"] = {{{"dim", 0}, {"offsets", {0, 0, 4}}}, {{"dim", 1}, {"offsets", {0, 0, 4}}}};
  j["tie_break"] = tie_break;
  return TorusTopology(TopologyConfig::FromJson(j, "topology"));
}

// Hop counts by BFS over the links themselves (Boost.Graph), independent of the torus's routing.
ShortestPathRouter Bfs(const Topology& t) {
  return ShortestPathRouter(t.num_chips(), t.links(), RouteMetric::kHops);
}

TEST_CASE("twisted 4x4x8: wrap links of the long dimension shift x and y by 2") {
  const TorusTopology t = Twisted({2, 2, 0});
  CHECK(t.twisted());
  CHECK(t.links().size() == 128 * 6);  // every chip still has 6 links
  // (0,0,7) = chip 7; crossing dim 2's wraparound (+) lands on (2,2,0) = 2*32 + 2*8 = 80.
  CHECK(t.links()[t.NeighborLink(7, 2, +1)].dst_chip == 80);
  // ... and the - direction from (2,2,0) comes back to (0,0,7).
  CHECK(t.links()[t.NeighborLink(80, 2, -1)].dst_chip == 7);
  // (3,1,7) = 3*32 + 8 + 7 = 111 -> (1,3,0) = 32 + 24 = 56.
  CHECK(t.links()[t.NeighborLink(111, 2, +1)].dst_chip == 56);
  // Links inside the dimension, and the other dimensions' wraps, are plain.
  CHECK(t.links()[t.NeighborLink(0, 2, +1)].dst_chip == 1);
  CHECK(t.links()[t.NeighborLink(0, 0, -1)].dst_chip == 96);  // (3,0,0)
}

TEST_CASE("twisted torus diameter is smaller than the plain torus's") {
  // Plain 4x4x8: 2 + 2 + 4 = 8. Twisted: 6 (an independent BFS over the same wiring, in
  // Python, gives 6 and a mean of 3.875 over all 128^2 ordered pairs, self pairs included).
  const TorusTopology plain(TopologyConfig::FromJson(TorusJson({4, 4, 8}), "topology"));
  const TorusTopology twisted = Twisted({2, 2, 0});
  CHECK(plain.Diameter() == 8);
  CHECK(twisted.Diameter() == 6);
  CHECK(twisted.MeanHops() == doctest::Approx(3.875 * 128 / 127));
  CHECK(plain.MeanHops() == doctest::Approx(4.0 * 128 / 127));
}

TEST_CASE("twisted routes are valid shortest chains; zero twist routes like the plain torus") {
  const TorusTopology twisted = Twisted({2, 2, 0});
  for (int64_t s = 0; s < 128; s += 5) {
    for (int64_t d = 0; d < 128; ++d) {
      const std::vector<int64_t> r = twisted.Route(s, d);
      CheckChain(twisted, r, s, d);
      CHECK(static_cast<int64_t>(r.size()) == twisted.Hops(s, d));
      CHECK(twisted.Route(s, d) == r);  // deterministic
    }
  }
  // A twist of (0,0,0) is the plain torus: same hop counts as dimension order.
  const TorusTopology zero = Twisted({0, 0, 0});
  const TorusTopology plain(TopologyConfig::FromJson(TorusJson({4, 4, 8}), "topology"));
  for (int64_t s = 0; s < 128; s += 7) {
    for (int64_t d = 0; d < 128; ++d) CHECK(zero.Hops(s, d) == plain.Hops(s, d));
  }
}

TEST_CASE("twisted routes are shortest: equal to BFS over the links on several wirings") {
  // The v4 wiring, the long-axis twist, a 2D twist by 3 on a 5x6, a 3D twist of two axes by
  // different amounts, and a twisted dim beside a mesh dim.
  std::vector<nlohmann::json> configs;
  auto add = [&](std::vector<int64_t> dims, nlohmann::json twist, nlohmann::json wrap = true) {
    nlohmann::json j = TorusJson(dims);
    j["twist"] = twist;
    j["wraparound"] = wrap;
    configs.push_back(j);
  };
  add({4, 4, 8}, {{{"dim", 0}, {"offsets", {0, 0, 4}}}, {{"dim", 1}, {"offsets", {0, 0, 4}}}});
  add({4, 4, 8}, {{"dim", 2}, {"offsets", {2, 2, 0}}});
  add({5, 6}, {{"dim", 0}, {"offsets", {0, 3}}});
  add({3, 4, 7}, {{{"dim", 0}, {"offsets", {0, 0, 2}}}, {{"dim", 1}, {"offsets", {0, 0, 5}}}});
  add({4, 6, 3}, {{"dim", 0}, {"offsets", {0, 2, 0}}}, {true, true, false});
  for (const nlohmann::json& j : configs) {
    CAPTURE(j.dump());
    const TorusTopology t(TopologyConfig::FromJson(j, "topology"));
    const ShortestPathRouter bfs = Bfs(t);
    for (int64_t s = 0; s < t.num_chips(); ++s) {
      for (int64_t d = 0; d < t.num_chips(); ++d) {
        const std::vector<int64_t> r = t.Route(s, d);
        CheckChain(t, r, s, d);
        REQUIRE(static_cast<int64_t>(r.size()) == bfs.Hops(s, d));
        CHECK(t.Hops(s, d) == bfs.Hops(s, d));
      }
    }
    CHECK(t.Diameter() == bfs.Diameter());
    CHECK(t.MeanHops() == doctest::Approx(bfs.MeanHops()));
  }
}

TEST_CASE("v4 twist: split spreads a transfer over every equally short wrap choice") {
  // BFS in Python over this wiring: diameter 6, mean 3.4646 over ordered distinct pairs
  // (440 hops summed from each chip / 127); the plain 4x4x8 has 8 and 4.0315.
  const TorusTopology split = TwistedV4("split");
  CHECK(split.Diameter() == 6);
  CHECK(split.MeanHops() == doctest::Approx(440.0 / 127));
  // (0,0,0) -> (2,0,4) = chip 2*32 + 4 = 68: the plain way is 2 + 4 = 6 hops; two steps - along
  // dim 0 cross its wrap, which moves 4 along dim 2: 2 hops, one way only.
  CHECK(split.RouteSplit(0, 68).size() == 1);
  CHECK(split.Hops(0, 68) == 2);
  // (0,0,0) -> (2,0,2) = chip 66: plain, 2 + 2 hops; or 2 - along dim 0 (crossing the wrap: -4
  // along dim 2), then 2 - along dim 2: 4 hops too. Split: both, half each.
  const std::vector<Topology::WeightedPath> paths = split.RouteSplit(0, 66);
  REQUIRE(paths.size() == 2);
  for (const Topology::WeightedPath& p : paths) {
    CHECK(p.links.size() == 4);
    CHECK(p.fraction == 0.5);
    CheckChain(split, p.links, 0, 66);
  }
  CHECK(paths[0].links != paths[1].links);
  // Every split is a set of distinct shortest chains whose fractions sum to 1.
  const ShortestPathRouter bfs = Bfs(split);
  for (int64_t s = 0; s < 128; s += 3) {
    for (int64_t d = 0; d < 128; ++d) {
      if (s == d) continue;
      double sum = 0;
      const std::vector<Topology::WeightedPath> split_paths = split.RouteSplit(s, d);
      for (size_t i = 0; i < split_paths.size(); ++i) {
        CheckChain(split, split_paths[i].links, s, d);
        CHECK(static_cast<int64_t>(split_paths[i].links.size()) == bfs.Hops(s, d));
        for (size_t k = 0; k < i; ++k) CHECK(split_paths[k].links != split_paths[i].links);
        sum += split_paths[i].fraction;
      }
      CHECK(sum == doctest::Approx(1.0));
    }
  }
  // positive takes one of them.
  CHECK(TwistedV4("positive").RouteSplit(0, 66).size() == 1);
}

nlohmann::json CustomJson(int64_t chips, nlohmann::json edges) {
  return {{"kind", "custom"}, {"num_chips", chips}, {"edges", edges}};
}

CustomTopology MakeCustom(const nlohmann::json& j) {
  return CustomTopology(TopologyConfig::FromJson(j, "topology"));
}

TEST_CASE("custom ring of 4: edge i is links 2i (a->b) and 2i+1 (b->a); ties to the lowest id") {
  const CustomTopology t = MakeCustom(CustomJson(4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  REQUIRE(t.links().size() == 8);
  CHECK(t.links()[2].src_chip == 1);
  CHECK(t.links()[2].dst_chip == 2);
  CHECK(t.links()[3].src_chip == 2);
  CHECK(t.links()[3].dst_chip == 1);
  // 0 -> 1: link 0. 0 -> 3: link 7 (edge 3 reversed).
  CHECK(t.Route(0, 1) == std::vector<int64_t>{0});
  CHECK(t.Route(0, 3) == std::vector<int64_t>{7});
  // 0 -> 2: via 1 (first link 0) or via 3 (first link 7): the lowest id wins, then 1 -> 2 is 2.
  CHECK(t.Route(0, 2) == std::vector<int64_t>{0, 2});
  // 2 -> 0: via 1 (link 3) or via 3 (link 4): link 3, then 1 -> 0 is link 1.
  CHECK(t.Route(2, 0) == std::vector<int64_t>{3, 1});
  CHECK(t.Diameter() == 2);
  CHECK(t.name() == "custom-4");
}

TEST_CASE("custom routes by hops or by latency (Dijkstra)") {
  // Triangle: 0-1 and 1-2 at 1 us, 0-2 at 5 us (links 4 and 5).
  nlohmann::json j = CustomJson(3, {{0, 1}, {1, 2}, {{"chips", {0, 2}}, {"hop_latency_us", 5.0}}});
  CHECK(MakeCustom(j).Route(0, 2) == std::vector<int64_t>{4});  // 1 hop
  j["route_by"] = "latency";
  const CustomTopology by_latency = MakeCustom(j);
  CHECK(by_latency.Route(0, 2) == std::vector<int64_t>{0, 2});  // 2 us instead of 5 us
  CHECK(by_latency.links()[4].latency.picos() == 5'000'000);
  CHECK(by_latency.Hops(0, 2) == 2);
}

TEST_CASE("latency-weighted routes cannot overflow: hop latencies are at most 1 s") {
  // A chain of 4096 chips at the largest hop latency, 1e6 us = 1e12 ps: the route from one end
  // to the other costs 4095e12 ps, exactly; the limit (262,144 chips x 1e12 ps = 2.6e17) is far
  // below int64's 9.2e18, so no path sum wraps (a route's latency once printed negative).
  nlohmann::json edges = nlohmann::json::array();
  for (int64_t k = 0; k + 1 < 4096; ++k) edges.push_back({k, k + 1});
  nlohmann::json j = CustomJson(4096, edges);
  j["route_by"] = "latency";
  j["hop_latency_us"] = 1e6;
  const CustomTopology chain = MakeCustom(j);
  const std::vector<int64_t> route = chain.Route(0, 4095);
  REQUIRE(route.size() == 4095);
  int64_t total_ps = 0;
  for (int64_t l : route) total_ps += chain.links()[static_cast<size_t>(l)].latency.picos();
  CHECK(total_ps == int64_t{4095} * 1'000'000'000'000);
  j["hop_latency_us"] = 1e13;  // 1e19 ps: refused, not converted to a wrapped value
  CHECK_THROWS_WITH_AS(MakeCustom(j), doctest::Contains("hop_latency_us: must be <= 1e6 (1 s)"),
                       ConfigError);
}

TEST_CASE("custom per-edge bandwidth and cores per chip") {
  nlohmann::json j = CustomJson(2, {{{"chips", {0, 1}}, {"link_bandwidth", 3e10}}});
  j["cores_per_chip"] = 2;
  const CustomTopology t = MakeCustom(j);
  // 2 ICI links, then 2 chips x 2 ordered core pairs = 4 on-chip links (ids 2..5).
  REQUIRE(t.links().size() == 6);
  CHECK(t.links()[0].bandwidth.value == 3e10);
  CHECK(t.links()[1].bandwidth.value == 3e10);
  // Core 0 -> core 1: the first on-chip link, id 2.
  CHECK(t.Route(0, 1) == std::vector<int64_t>{2});
  CHECK(t.links()[2].kind == LinkKind::kOnChip);
  CHECK(t.Route(3, 2) == std::vector<int64_t>{5});  // chip 1: 2->3 is id 4, 3->2 is id 5
  // Core 1 -> core 2 crosses the edge: link 0.
  CHECK(t.Route(1, 2) == std::vector<int64_t>{0});
  CHECK_THROWS_AS(t.Route(0, 4), std::out_of_range);
}

TEST_CASE("hypercube preset: hop count = number of differing bits") {
  const std::unique_ptr<Topology> t = LoadTopology("hypercube-16");
  REQUIRE(t->num_chips() == 16);
  CHECK(t->links().size() == 64);  // 16 chips x 4 neighbours
  for (int64_t a = 0; a < 16; ++a) {
    for (int64_t b = 0; b < 16; ++b) {
      const std::vector<int64_t> r = t->Route(a, b);
      CheckChain(*t, r, a, b);
      CHECK(static_cast<int>(r.size()) == std::popcount(static_cast<unsigned>(a ^ b)));
    }
  }
  CHECK(dynamic_cast<const CustomTopology&>(*t).Diameter() == 4);
}

}  // namespace
}  // namespace podsim::topo
