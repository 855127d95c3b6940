// Torus and mesh topologies: numbering, link counts, dimension-order routes, tie rules.

#include "topologies/torus.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "tests/topologies/test_util.h"
#include "topologies/config.h"

namespace podsim::topo {
namespace {

using testing::TorusJson;

TorusTopology MakeTorus(nlohmann::json j) {
  return TorusTopology(TopologyConfig::FromJson(j, "topology"));
}

int64_t CountKind(const Topology& t, LinkKind kind) {
  return std::count_if(t.links().begin(), t.links().end(),
                       [kind](const Link& l) { return l.kind == kind; });
}

// Checks that `route` is a chain of links from src_chip to dst_chip.
void TorusCheckChain(const Topology& t, const std::vector<int64_t>& route, int64_t src_chip,
                     int64_t dst_chip) {
  int64_t cur = src_chip;
  for (int64_t id : route) {
    REQUIRE(id >= 0);
    REQUIRE(id < static_cast<int64_t>(t.links().size()));
    const Link& l = t.links()[id];
    CHECK(l.id == id);
    CHECK(l.src_chip == cur);
    cur = l.dst_chip;
  }
  CHECK(cur == dst_chip);
}

// Ring distance, computed independently of the library: min(|d|, n - |d|) with wraparound.
int64_t RingDistance(int64_t a, int64_t b, int64_t n, bool wrap) {
  const int64_t d = std::abs(a - b);
  return wrap ? std::min(d, n - d) : d;
}

TEST_CASE("torus 4x4: chips are numbered row-major, last coordinate fastest") {
  const TorusTopology t = MakeTorus(TorusJson({4, 4}));
  CHECK(t.num_chips() == 16);
  CHECK(t.num_cores() == 16);
  // chip = x0 * 4 + x1: (1, 2) -> 6, (3, 0) -> 12.
  CHECK(t.ChipCoords(6) == std::vector<int64_t>{1, 2});
  CHECK(t.ChipCoords(12) == std::vector<int64_t>{3, 0});
  CHECK(t.ChipAt({1, 2}) == 6);
  CHECK(t.ChipAt({3, 3}) == 15);
  CHECK(t.name() == "torus-4x4");
}

TEST_CASE("torus 4x4 with wraparound has 16 chips x 4 directions = 64 directed ICI links") {
  const TorusTopology t = MakeTorus(TorusJson({4, 4}));
  CHECK(CountKind(t, LinkKind::kIci) == 64);
  CHECK(CountKind(t, LinkKind::kOnChip) == 0);
  for (size_t i = 0; i < t.links().size(); ++i) CHECK(t.links()[i].id == static_cast<int64_t>(i));
  // Chip 0's + link along dim 1 goes to chip 1; its - link wraps to chip 3 (0, 3).
  CHECK(t.links()[t.NeighborLink(0, 1, +1)].dst_chip == 1);
  CHECK(t.links()[t.NeighborLink(0, 1, -1)].dst_chip == 3);
  // Along dim 0 the - link of chip 0 wraps to chip 12 (3, 0).
  CHECK(t.links()[t.NeighborLink(0, 0, -1)].dst_chip == 12);
  const Link& l = t.links()[t.NeighborLink(5, 0, +1)];
  CHECK(l.dim == 0);
  CHECK(l.direction == +1);
  CHECK(l.dst_chip == 9);
  CHECK(l.bandwidth.value == 1e11);
  CHECK(l.latency.picos() == 1'000'000);  // 1 us
}

TEST_CASE("mesh 4x4 has 2 dims x 4 lines x 3 neighbour pairs x 2 directions = 48 links") {
  nlohmann::json j = TorusJson({4, 4});
  j["kind"] = "mesh";
  const TorusTopology t = MakeTorus(j);
  CHECK(CountKind(t, LinkKind::kIci) == 48);
  CHECK(t.grid()->wraparound == std::vector<bool>{false, false});
  CHECK(t.NeighborLink(0, 1, -1) == -1);  // no link past the edge
  CHECK(t.NeighborLink(3, 1, +1) == -1);
  // (0,0) -> (0,3) goes straight: 3 hops through chips 1, 2, 3; and back the same way.
  const std::vector<int64_t> r = t.Route(0, 3);
  REQUIRE(r.size() == 3);
  CHECK(t.links()[r[0]].dst_chip == 1);
  CHECK(t.links()[r[1]].dst_chip == 2);
  CHECK(t.links()[r[2]].dst_chip == 3);
  const std::vector<int64_t> back = t.Route(3, 0);
  REQUIRE(back.size() == 3);
  for (int64_t id : back) CHECK(t.links()[id].direction == -1);
  // Corner to corner: 3 + 3 hops; the diameter of a 4x4 mesh is 6.
  CHECK(t.Hops(0, 15) == 6);
  CHECK(t.Diameter() == 6);
}

TEST_CASE("mixed wraparound: a ring dimension and a line dimension") {
  nlohmann::json j = TorusJson({4, 8});
  j["wraparound"] = {false, true};
  const TorusTopology t = MakeTorus(j);
  // dim 0 line: 8 lines x 3 pairs x 2 = 48; dim 1 ring: 32 chips x 2 = 64.
  CHECK(CountKind(t, LinkKind::kIci) == 112);
  // (0,0) -> (3,7): dim 0 straight 3 hops, dim 1 one hop backwards around the ring.
  CHECK(t.Hops(0, t.ChipAt({3, 7})) == 4);
  CHECK(t.Diameter() == 3 + 4);
}

TEST_CASE("torus routes: dimension order, shortest way round, hop count = sum of ring distances") {
  const TorusTopology t = MakeTorus(TorusJson({4, 4}));
  // (0,0) -> (1,1): dim 0 first (chip 0 -> 4), then dim 1 (4 -> 5).
  const std::vector<int64_t> r = t.Route(0, 5);
  REQUIRE(r.size() == 2);
  CHECK(t.links()[r[0]].dim == 0);
  CHECK(t.links()[r[0]].dst_chip == 4);
  CHECK(t.links()[r[1]].dim == 1);
  CHECK(t.links()[r[1]].dst_chip == 5);
  // (0,0) -> (0,3): one hop backwards through the wraparound.
  const std::vector<int64_t> w = t.Route(0, 3);
  REQUIRE(w.size() == 1);
  CHECK(t.links()[w[0]].direction == -1);
  CHECK(t.Route(7, 7).empty());
  // Every pair: a valid chain whose length is the sum of the ring distances.
  for (int64_t s = 0; s < 16; ++s) {
    for (int64_t d = 0; d < 16; ++d) {
      const std::vector<int64_t> route = t.Route(s, d);
      TorusCheckChain(t, route, s, d);
      const int64_t expected =
          RingDistance(s / 4, d / 4, 4, true) + RingDistance(s % 4, d % 4, 4, true);
      CHECK(static_cast<int64_t>(route.size()) == expected);
      CHECK(t.Hops(s, d) == expected);
    }
  }
  // Diameter 2 + 2. Mean: a ring of 4 has distances 0,1,2,1 (sum 4) from each chip, so per
  // dimension 16 * 16 * 4 / 4 = 256 hop-sum over ordered pairs; 512 / (16 * 15) = 2.1333.
  CHECK(t.Diameter() == 4);
  CHECK(t.MeanHops() == doctest::Approx(512.0 / 240.0));
}

TEST_CASE("3D torus and 8x8 torus: routes are valid chains of the expected length") {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{4, 4, 4}, std::vector<int64_t>{8, 8}, std::vector<int64_t>{3, 5}}) {
    const TorusTopology t = MakeTorus(TorusJson(dims));
    for (int64_t s = 0; s < t.num_chips(); s += 3) {
      for (int64_t d = 0; d < t.num_chips(); ++d) {
        const std::vector<int64_t> route = t.Route(s, d);
        TorusCheckChain(t, route, s, d);
        int64_t expected = 0;
        const std::vector<int64_t> a = t.ChipCoords(s), b = t.ChipCoords(d);
        for (size_t k = 0; k < dims.size(); ++k) {
          expected += RingDistance(a[k], b[k], dims[k], true);
        }
        CHECK(static_cast<int64_t>(route.size()) == expected);
      }
    }
  }
}

TEST_CASE("RouteSplitInto equals RouteSplit, reusing one buffer across calls") {
  // Every ordered core pair of a 4x4 torus with 2 cores per chip, for each tie rule: 1, 2 or 4
  // paths per pair (no tie, a tie on one or both dimensions), so the buffer grows and is then
  // reused with fewer paths; entries past the returned count must not matter.
  for (const char* tie : {"positive", "split", "alternate"}) {
    nlohmann::json j = TorusJson({4, 4});
    j["cores_per_chip"] = 2;
    j["tie_break"] = tie;
    const TorusTopology t = MakeTorus(j);
    std::vector<Topology::WeightedPath> buffer;
    for (int64_t src = 0; src < t.num_cores(); ++src) {
      for (int64_t dst = 0; dst < t.num_cores(); ++dst) {
        CAPTURE(tie);
        CAPTURE(src);
        CAPTURE(dst);
        const std::vector<Topology::WeightedPath> expected = t.RouteSplit(src, dst);
        const size_t n = t.RouteSplitInto(src, dst, buffer);
        REQUIRE(n == expected.size());
        REQUIRE(buffer.size() >= n);
        for (size_t i = 0; i < n; ++i) {
          CHECK(buffer[i].links == expected[i].links);
          CHECK(buffer[i].fraction == expected[i].fraction);
        }
      }
    }
  }
}

TEST_CASE("tie (exactly half a ring): positive, split, alternate") {
  nlohmann::json j = TorusJson({4, 4});
  SUBCASE("positive: always the + direction") {
    j["tie_break"] = "positive";
    const TorusTopology t = MakeTorus(j);
    // (0,0) -> (0,2): 0 -> 1 -> 2.
    const std::vector<int64_t> r = t.Route(0, 2);
    REQUIRE(r.size() == 2);
    CHECK(t.links()[r[0]].dst_chip == 1);
    CHECK(t.RouteSplit(0, 2).size() == 1);
    // Source (0,1) also goes +: 1 -> 2 -> 3.
    CHECK(t.links()[t.Route(1, 3)[0]].direction == +1);
  }
  SUBCASE("split: Route gives the + half, RouteSplit both at 0.5") {
    j["tie_break"] = "split";
    const TorusTopology t = MakeTorus(j);
    CHECK(t.links()[t.Route(0, 2)[0]].direction == +1);
    const std::vector<Topology::WeightedPath> paths = t.RouteSplit(0, 2);
    REQUIRE(paths.size() == 2);
    CHECK(paths[0].fraction == 0.5);
    CHECK(paths[1].fraction == 0.5);
    // + half: 0 -> 1 -> 2; - half: 0 -> 3 -> 2.
    TorusCheckChain(t, paths[0].links, 0, 2);
    TorusCheckChain(t, paths[1].links, 0, 2);
    CHECK(t.links()[paths[0].links[0]].dst_chip == 1);
    CHECK(t.links()[paths[1].links[0]].dst_chip == 3);
    // No tie: one path with fraction 1.
    const std::vector<Topology::WeightedPath> one = t.RouteSplit(0, 1);
    REQUIRE(one.size() == 1);
    CHECK(one[0].fraction == 1.0);
    // Ties on both dimensions, (0,0) -> (2,2): 2 x 2 = 4 distinct paths of 4 hops, 0.25 each.
    const std::vector<Topology::WeightedPath> four = t.RouteSplit(0, 10);
    REQUIRE(four.size() == 4);
    std::set<std::vector<int64_t>> distinct;
    for (const Topology::WeightedPath& p : four) {
      CHECK(p.fraction == 0.25);
      CHECK(p.links.size() == 4);
      TorusCheckChain(t, p.links, 0, 10);
      distinct.insert(p.links);
    }
    CHECK(distinct.size() == 4);
  }
  SUBCASE("alternate: + from an even coordinate on the tied dimension, - from an odd one") {
    j["tie_break"] = "alternate";
    const TorusTopology t = MakeTorus(j);
    // Source (0,0), coordinate 0 on dim 1: +, 0 -> 1 -> 2.
    CHECK(t.links()[t.Route(0, 2)[0]].dst_chip == 1);
    // Source (0,1), coordinate 1: -, 1 -> 0 -> 3.
    const std::vector<int64_t> r = t.Route(1, 3);
    REQUIRE(r.size() == 2);
    CHECK(t.links()[r[0]].dst_chip == 0);
    CHECK(t.links()[r[1]].dst_chip == 3);
    CHECK(t.RouteSplit(1, 3).size() == 1);
  }
}

TEST_CASE("alternate tie with 2 cores per chip: the local core index flips the direction") {
  nlohmann::json j = TorusJson({4});
  j["tie_break"] = "alternate";
  j["cores_per_chip"] = 2;
  const TorusTopology t = MakeTorus(j);
  // Cores 0 and 1 are on chip 0; chip 2 holds cores 4 and 5; a ring of 4: a tie.
  CHECK(t.links()[t.Route(0, 4)[0]].direction == +1);  // coordinate 0 + local 0: even
  CHECK(t.links()[t.Route(1, 4)[0]].direction == -1);  // coordinate 0 + local 1: odd
}

TEST_CASE("ring of size 2 with wraparound: two distinct links each way, a tie at distance 1") {
  nlohmann::json j = TorusJson({2});
  const TorusTopology t = MakeTorus(j);
  // 2 chips x 2 directions = 4 links; chip 0's + and - links both reach chip 1.
  CHECK(CountKind(t, LinkKind::kIci) == 4);
  const int64_t plus = t.NeighborLink(0, 0, +1);
  const int64_t minus = t.NeighborLink(0, 0, -1);
  CHECK(plus != minus);
  CHECK(t.links()[plus].dst_chip == 1);
  CHECK(t.links()[minus].dst_chip == 1);
  // Distance 1 is half the ring: split uses both links, half the bytes each.
  const std::vector<Topology::WeightedPath> paths = t.RouteSplit(0, 1);
  REQUIRE(paths.size() == 2);
  CHECK(paths[0].links == std::vector<int64_t>{plus});
  CHECK(paths[1].links == std::vector<int64_t>{minus});
  // Without wraparound: one link each way.
  j["wraparound"] = false;
  CHECK(CountKind(MakeTorus(j), LinkKind::kIci) == 2);
}

TEST_CASE("a dimension of size 1 has no links") {
  const TorusTopology t = MakeTorus(TorusJson({1, 4}));
  CHECK(CountKind(t, LinkKind::kIci) == 8);  // only the ring of 4: 4 chips x 2
  CHECK(t.NeighborLink(0, 0, +1) == -1);
  CHECK(t.Diameter() == 2);
}

TEST_CASE("cores per chip: on-chip links, and cores share their chip's ICI links") {
  nlohmann::json j = TorusJson({2, 2});
  j["kind"] = "mesh";
  j["cores_per_chip"] = 2;
  j["on_chip_bandwidth"] = 5e11;
  j["on_chip_latency_us"] = 0.25;
  const TorusTopology t = MakeTorus(j);
  CHECK(t.num_cores() == 8);
  CHECK(t.ChipOfCore(5) == 2);
  CHECK(t.LocalCore(5) == 1);
  // ICI: 2 dims x 2 lines x 1 pair x 2 directions = 8. On-chip: 4 chips x 2 ordered pairs = 8.
  CHECK(CountKind(t, LinkKind::kIci) == 8);
  CHECK(CountKind(t, LinkKind::kOnChip) == 8);
  // Core 0 -> core 1: the on-chip link of chip 0.
  const std::vector<int64_t> on_chip = t.Route(0, 1);
  REQUIRE(on_chip.size() == 1);
  const Link& l = t.links()[on_chip[0]];
  CHECK(l.kind == LinkKind::kOnChip);
  CHECK(l.src_core == 0);
  CHECK(l.dst_core == 1);
  CHECK(l.src_chip == 0);
  CHECK(l.bandwidth.value == 5e11);
  CHECK(l.latency.picos() == 250'000);
  CHECK(t.links()[t.Route(1, 0)[0]].src_core == 1);
  CHECK(t.links()[t.Route(7, 6)[0]].src_chip == 3);
  // Core 0 -> core 2 (chip 1) and core 1 -> core 3: the same ICI link.
  CHECK(t.Route(0, 2) == t.Route(1, 3));
  CHECK(t.links()[t.Route(0, 2)[0]].kind == LinkKind::kIci);
  CHECK(t.Hops(0, 1) == 1);
  CHECK(t.Hops(0, 0) == 0);
}

TEST_CASE("links_per_neighbor: one link of n x the bandwidth") {
  nlohmann::json j = TorusJson({4, 4});
  j["links_per_neighbor"] = 2;
  j["link_bandwidth"] = 5e10;
  const TorusTopology t = MakeTorus(j);
  CHECK(CountKind(t, LinkKind::kIci) == 64);
  CHECK(t.links()[0].bandwidth.value == 1e11);
  CHECK(t.links()[0].parallel_links == 2);
}

TEST_CASE("TPU v3 pod scale: 32x32 torus, 2 cores per chip") {
  nlohmann::json j = TorusJson({32, 32});
  j["cores_per_chip"] = 2;
  j["tie_break"] = "split";
  const TorusTopology t = MakeTorus(j);
  CHECK(t.num_cores() == 2048);
  CHECK(CountKind(t, LinkKind::kIci) == 4096);  // 1024 chips x 4
  // Core 2047 is on chip 1023 = (31,31): one hop back on each dimension.
  CHECK(t.Hops(0, 2047) == 2);
  // Chip (16,16) = 528 (cores 1056, 1057): half of both rings, 32 hops, 4 split paths.
  CHECK(t.Hops(0, 1056) == 32);
  CHECK(t.RouteSplit(0, 1056).size() == 4);
  for (int64_t s = 0; s < 2048; s += 97) {
    for (int64_t d = 0; d < 2048; d += 13) TorusCheckChain(t, t.Route(s, d), s / 2, d / 2);
  }
  CHECK(t.Diameter() == 32);
}

TEST_CASE("AppendRoute appends the same links as Route") {
  const TorusTopology t = MakeTorus(TorusJson({4, 4}));
  std::vector<int64_t> flat = {-7};
  t.AppendRoute(0, 5, flat);
  t.AppendRoute(0, 0, flat);  // same core: nothing
  t.AppendRoute(5, 0, flat);
  std::vector<int64_t> expected = {-7};
  for (int64_t id : t.Route(0, 5)) expected.push_back(id);
  for (int64_t id : t.Route(5, 0)) expected.push_back(id);
  CHECK(flat == expected);
  CHECK(flat.size() == 5);  // 2 + 2 hops after the sentinel
}

TEST_CASE("a core out of range is an exception, not a crash") {
  const TorusTopology t = MakeTorus(TorusJson({4, 4}));
  CHECK_THROWS_AS(t.Route(0, 16), std::out_of_range);
  CHECK_THROWS_AS(t.Route(-1, 0), std::out_of_range);
  CHECK_THROWS_AS(t.Hops(0, 99), std::out_of_range);
  CHECK_THROWS_AS(t.RouteSplit(0, 16), std::out_of_range);
}

}  // namespace
}  // namespace podsim::topo
