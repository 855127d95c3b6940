// TileLayout's compact form (digits of the partition id, from iota shardings) against its tables
// form (one entry per partition, from the same shardings with the devices listed): random
// shardings over 1 to 16 partitions, random chains of layout operations, and every answer
// compared partition by partition: coordinates, replica groups, shardings, equivalence, reshard
// costs (which plan the lowering picks), and the partition-id arithmetic SpmdBuilder emits for a
// coordinate, run through the interpreter. Seeds are printed on failure.

#include "partitioner/tile_layout.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "partitioner/reshard.h"
#include "partitioner/spmd_builder.h"

namespace podsim::partitioner {
namespace {

class TileLayoutGen {
 public:
  explicit TileLayoutGen(uint64_t seed) : rng_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // A random factorization of n into `parts` factors >= 1.
  std::vector<int64_t> Factors(int64_t n, int64_t parts) {
    std::vector<int64_t> f(parts, 1);
    for (int64_t p = 2; n > 1;) {
      if (n % p != 0) {
        ++p;
        continue;
      }
      f[Int(0, parts - 1)] *= p;
      n /= p;
    }
    return f;
  }

  // A random iota order of n devices: n factored, the factors permuted.
  ir::IotaDevices Order(int64_t n) {
    std::vector<int64_t> dims = Factors(n, Int(1, 3));
    std::vector<int64_t> perm(dims.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
    std::shuffle(perm.begin(), perm.end(), rng_);
    return ir::IotaDevices::Create(dims, perm);
  }

  // A tiled sharding of a rank-`rank` tensor over n devices (maybe partially replicated), in
  // the iota form.
  ir::Sharding Sharding(int64_t rank, int64_t n) {
    const bool replicate = Int(0, 2) == 0;
    std::vector<int64_t> tiles = Factors(n, rank + (replicate ? 1 : 0));
    return ir::Sharding::Tiled(tiles, ir::DeviceList(Order(n)), replicate);
  }

 private:
  std::mt19937_64 rng_;
};

ir::Sharding Listed(ir::Sharding s) {
  s.devices = s.devices.ToVector();
  return s;
}

// Both forms say the same about every partition.
void ExpectSame(const TileLayout& compact, const TileLayout& tables) {
  REQUIRE(compact.num_devices() == tables.num_devices());
  REQUIRE(compact.tiles() == tables.tiles());
  REQUIRE(compact.partial() == tables.partial());
  REQUIRE(compact.replicas() == tables.replicas());
  for (int64_t p = 0; p < compact.num_devices(); ++p) {
    REQUIRE(compact.Coords(p) == tables.Coords(p));
    REQUIRE(compact.PartialIndex(p) == tables.PartialIndex(p));
    REQUIRE(compact.ReplicaIndex(p) == tables.ReplicaIndex(p));
  }
  for (int64_t d = -1; d < compact.rank(); ++d) {
    CHECK(compact.GroupsAlong(d) == tables.GroupsAlong(d));
    const int64_t t = d < 0 ? compact.partial() : compact.tiles(d);
    for (int64_t k = 1; k <= t; ++k) {
      if (t % k == 0) CHECK(compact.GroupsAlongMinor(d, k) == tables.GroupsAlongMinor(d, k));
    }
  }
  CHECK(compact.Equivalent(tables));
  CHECK(tables.Equivalent(compact));
  if (compact.partial() == 1) CHECK(compact.ToSharding() == tables.ToSharding());
}

// A random operation applied to both forms. Returns true when it moved a factor of a split
// (which leaves the compact form when the factor cuts a digit unevenly).
bool Step(TileLayoutGen& g, TileLayout& a, TileLayout& b) {
  const int64_t r = a.rank();
  switch (g.Int(0, 5)) {
    case 5: {  // all-to-all of a factor of a split: a -> a / k, b -> b * k + a mod k
      const int64_t x = g.Int(0, r - 1), y = g.Int(0, r - 1);
      const int64_t k = g.Int(1, a.tiles(x));
      if (x == y || a.partial() > 1 || a.tiles(x) % k != 0) return false;
      a = a.MovedFactor(x, y, k);
      b = b.MovedFactor(x, y, k);
      return true;
    }
    case 0: {  // all-gather a dim
      const int64_t d = g.Int(0, r - 1);
      a = a.Gathered(d);
      b = b.Gathered(d);
      break;
    }
    case 1: {  // project: permute dims, drop some, turn some into partial
      std::vector<int64_t> map, partial;
      for (int64_t d = 0; d < r; ++d) {
        const int64_t what = g.Int(0, 3);
        if (what == 0 && a.partial() == 1) {
          partial.push_back(d);
        } else if (what != 1) {
          map.push_back(d);
        }
      }
      std::shuffle(map.begin(), map.end(), std::mt19937_64(g.Int(0, 1000)));
      if (g.Int(0, 1)) map.push_back(-1);
      a = a.Projected(map, partial, ir::ReduceKind::kMax);
      b = b.Projected(map, partial, ir::ReduceKind::kMax);
      break;
    }
    case 2:  // reduce the partial axis
      if (a.partial() > 1) {
        a = a.AllReduced();
        b = b.AllReduced();
      }
      break;
    case 3: {  // reduce-scatter into a dim
      if (a.partial() > 1 && r > 0) {
        const int64_t d = g.Int(0, r - 1);
        a = a.Scattered(d);
        b = b.Scattered(d);
      }
      break;
    }
    default: {  // all-to-all: a tiled dim's split moves to an untiled one
      for (int64_t x = 0; x < r; ++x) {
        for (int64_t y = 0; y < r; ++y) {
          if (x != y && a.tiles(x) > 1 && a.tiles(y) == 1) {
            a = a.Swapped(x, y);
            b = b.Swapped(x, y);
            return false;
          }
        }
      }
    }
  }
  return false;
}

TEST_CASE("compact layouts answer like tables through random operation chains") {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    CAPTURE(seed);
    TileLayoutGen g(seed);
    const int64_t n = std::vector<int64_t>{1, 2, 4, 6, 8, 12, 16}[g.Int(0, 6)];
    const int64_t rank = g.Int(1, 3);
    const ir::Sharding s = g.Sharding(rank, n);
    CAPTURE(s.ToString());
    TileLayout a = TileLayout::FromSharding(s, rank, n);
    TileLayout b = TileLayout::FromSharding(Listed(s), rank, n);
    CHECK_FALSE(b.compact());
    // Compact unless the tile dims cut the order's digits unevenly ([2,3] tiles on 0,3,1,4,2,5).
    bool compact = a.compact();
    CHECK((compact || !ir::SplitModes(s.devices.iota().Modes(), s.tile_dims)));
    ExpectSame(a, b);
    for (int step = 0; step < 4 && a.rank() > 0; ++step) {
      if (Step(g, a, b) && !a.compact()) compact = false;
      CAPTURE(b.ToString());
      REQUIRE(a.compact() == compact);
      ExpectSame(a, b);
    }
  }
}

TEST_CASE("compact layouts: picks, equivalence and reshard plans agree with tables") {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    TileLayoutGen g(seed);
    const int64_t n = std::vector<int64_t>{2, 4, 6, 8, 12}[g.Int(0, 4)];
    const ir::Sharding s1 = g.Sharding(2, n), s2 = g.Sharding(2, n);
    CAPTURE(s1.ToString());
    CAPTURE(s2.ToString());
    const TileLayout a1 = TileLayout::FromSharding(s1, 2, n),
                     b1 = TileLayout::FromSharding(Listed(s1), 2, n);
    const TileLayout a2 = TileLayout::FromSharding(s2, 2, n),
                     b2 = TileLayout::FromSharding(Listed(s2), 2, n);
    CHECK(a1.Equivalent(a2) == b1.Equivalent(b2));
    // A space of dim 0 of the first and dim 1 of the second (a dot's candidate spaces).
    auto pa = TileLayout::FromPicks({{&a1, 0}, {&a2, 1}, {nullptr, -1}}, n);
    auto pb = TileLayout::FromPicks({{&b1, 0}, {&b2, 1}, {nullptr, -1}}, n);
    REQUIRE(pa.has_value() == pb.has_value());
    if (pa) ExpectSame(*pa, *pb);
    // Even and uneven shapes: the same plan cost (local slices found the same way).
    Resharder costs(ReshardCostModel{}, nullptr);
    for (int k = 0; k < 3; ++k) {
      const ir::Shape shape(ir::DType::kF32, {g.Int(1, 13), g.Int(1, 13)});
      CAPTURE(shape.ToString());
      CHECK(costs.Cost(shape, a1, a2) == doctest::Approx(costs.Cost(shape, b1, b2)));
      CHECK(costs.Cost(shape, a1, a1.Gathered(0)) ==
            doctest::Approx(costs.Cost(shape, b1, b1.Gathered(0))));
      CHECK(costs.Cost(shape, a1.Gathered(1), a1) ==
            doctest::Approx(costs.Cost(shape, b1.Gathered(1), b1)));
    }
  }
}

TEST_CASE("SpmdBuilder: a compact coordinate is partition-id arithmetic, no table") {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    TileLayoutGen g(seed);
    const int64_t n = std::vector<int64_t>{2, 6, 8, 12, 16}[g.Int(0, 4)];
    const ir::Sharding s = g.Sharding(3, n);
    CAPTURE(s.ToString());
    const TileLayout l = TileLayout::FromSharding(s, 3, n);
    if (!l.compact()) continue;
    ir::Module m("coords");
    SpmdBuilder sb(m.AddComputation("main", true), n);
    std::vector<ir::Instruction*> coords;
    const ir::Shape global(ir::DType::kF32, {7, 9, 16});
    for (int64_t d = 0; d < 3; ++d) {
      coords.push_back(sb.TileCoord(l, d));
      coords.push_back(sb.ShardStart(global, l, d));
    }
    coords.push_back(sb.DigitsValue(l.Modes(TileLayout::kPartialAxis)));
    sb.b().Tuple(coords);
    for (const auto& i : m.entry()->instructions()) {
      if (!i->shape.is_tuple) CHECK(i->shape.NumElements() <= 1);  // scalars: no s32[D] table
    }
    for (int64_t p = 0; p < n; ++p) {
      const ir::Literal out = ir::Interpret(m, {}, p, n);
      for (int64_t d = 0; d < 3; ++d) {
        CHECK(out.elements[2 * d].values[0] == l.Coord(p, d));
        CHECK(out.elements[2 * d + 1].values[0] == l.ShardStart(global, p, d));
      }
    }
  }
}

}  // namespace
}  // namespace podsim::partitioner
