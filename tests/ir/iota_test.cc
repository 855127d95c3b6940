// The compact device orders of ir/iota.h, checked against explicit lists computed the slow way
// (reshape, transpose, read row-major) for every factorization of small device counts, and the
// iota forms of shardings and replica groups through text, protobuf, verifier and interpreter.

#include "ir/iota.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/proto.h"
#include "ir/sharding.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/module_equal.h"

namespace podsim::ir {
namespace {

// iota(N).reshape(dims).transpose(perm), row-major, by definition.
std::vector<int64_t> Reference(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const size_t r = dims.size();
  std::vector<int64_t> out_dims(r), strides(r, 1), out(static_cast<size_t>(n));
  for (size_t j = 0; j < r; ++j) out_dims[j] = dims[perm[j]];
  for (int64_t k = static_cast<int64_t>(r) - 2; k >= 0; --k)
    strides[k] = strides[k + 1] * dims[k + 1];
  std::vector<int64_t> index(r, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t v = 0;
    for (size_t j = 0; j < r; ++j) v += index[j] * strides[perm[j]];
    out[static_cast<size_t>(k)] = v;
    for (int64_t j = static_cast<int64_t>(r) - 1; j >= 0; --j) {
      if (++index[j] < out_dims[j]) break;
      index[j] = 0;
    }
  }
  return out;
}

// Every ordered factorization of n into factors >= 2 (at most `max_rank` of them).
void Factorizations(int64_t n, size_t max_rank, std::vector<int64_t>& cur,
                    std::vector<std::vector<int64_t>>* out) {
  if (n == 1) {
    if (!cur.empty()) out->push_back(cur);
    return;
  }
  if (cur.size() == max_rank) return;
  for (int64_t f = 2; f <= n; ++f) {
    if (n % f != 0) continue;
    cur.push_back(f);
    Factorizations(n / f, max_rank, cur, out);
    cur.pop_back();
  }
}

TEST_CASE("iota devices: every reshape and transpose of small counts matches the slow way") {
  for (int64_t n : {2, 4, 6, 8, 12, 16, 24, 30}) {
    CAPTURE(n);
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> cur;
    Factorizations(n, 4, cur, &shapes);
    std::vector<std::pair<std::vector<int64_t>, IotaDevices>> seen;
    for (const std::vector<int64_t>& dims : shapes) {
      std::vector<int64_t> perm(dims.size());
      std::iota(perm.begin(), perm.end(), 0);
      do {
        const std::vector<int64_t> want = Reference(dims, perm);
        const IotaDevices d = IotaDevices::Create(dims, perm);
        CAPTURE(d.ToString());
        REQUIRE(d.ToVector() == want);
        REQUIRE(d.size() == n);
        for (int64_t k = 0; k < n; ++k) {
          REQUIRE(d.At(k) == want[k]);
          REQUIRE(d.PositionOf(want[k]) == k);
        }
        CHECK(d.PositionOf(n) == -1);
        CHECK(d.PositionOf(-1) == -1);
        // The list finds its way back to the same canonical form.
        std::optional<IotaDevices> back = IotaDevices::FromList(want);
        REQUIRE(back.has_value());
        CHECK(*back == d);
        CHECK(IotaDevices::FromModes(d.Modes()) == d);
        // Equal orders <=> equal canonical forms.
        for (const auto& [list, other] : seen) CHECK((list == want) == (other == d));
        seen.emplace_back(want, d);
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
}

TEST_CASE("iota devices: canonical text; lists that are no iota") {
  CHECK(IotaDevices::Range(4).ToString() == "[4]");
  CHECK(IotaDevices::Range(1).ToString() == "[1]");
  CHECK(IotaDevices::Create({2, 2}, {0, 1}).ToString() == "[4]");  // no transpose: merged
  CHECK(IotaDevices::Create({2, 2}, {1, 0}).ToString() == "[2,2]T(1,0)");
  CHECK(IotaDevices::Create({1, 4, 1}, {2, 1, 0}).ToString() == "[4]");  // size-1 dims drop
  CHECK(IotaDevices::Create({2, 3, 4}, {0, 2, 1}).ToString() == "[2,3,4]T(0,2,1)");
  CHECK(IotaDevices::Create({2, 3, 4}, {1, 2, 0}).ToString() == "[2,12]T(1,0)");
  CHECK_FALSE(IotaDevices::FromList({0, 2, 3, 1}).has_value());
  CHECK_FALSE(IotaDevices::FromList({1, 0, 2, 3}).has_value());
  CHECK_THROWS_AS(IotaDevices::Create({2, 2}, {0, 0}), Error);
  CHECK_THROWS_AS(IotaDevices::Create({2, 0}, {0, 1}), Error);
}

TEST_CASE("strided modes: split by tile dims, common digits") {
  // [2,2]T(1,0) = 0,2,1,3: modes (2,1) then (2,2).
  const std::vector<StridedMode> m = IotaDevices::Create({2, 2}, {1, 0}).Modes();
  CHECK(m == std::vector<StridedMode>{{2, 1}, {2, 2}});
  // 8 devices in order, cut as tile dims [2,4]: dim 0 takes the top digit.
  auto runs = SplitModes({{8, 1}}, {2, 4});
  REQUIRE(runs.has_value());
  CHECK((*runs)[0] == std::vector<StridedMode>{{2, 4}});
  CHECK((*runs)[1] == std::vector<StridedMode>{{4, 1}});
  // [2,3]T(1,0) = 0,3,1,4,2,5: modes (3,1) then (2,3). Tile dims [3,2] follow them; [2,3]
  // would cut the fastest digit (2 values) into 3.
  CHECK(SplitModes(IotaDevices::Create({2, 3}, {1, 0}).Modes(), {3, 2}).has_value());
  CHECK_FALSE(SplitModes(IotaDevices::Create({2, 3}, {1, 0}).Modes(), {2, 3}).has_value());
  // Common atoms of (4,2) and (2,4),(4,1) over 8: strides 4, 2, 1.
  auto atoms = RefineModes({{{4, 2}}, {{2, 4}, {4, 1}}}, 8);
  REQUIRE(atoms.has_value());
  CHECK((*atoms)[0] == std::vector<StridedMode>{{2, 4}, {2, 2}});
  CHECK((*atoms)[1] == std::vector<StridedMode>{{2, 4}, {2, 2}, {2, 1}});
  CHECK_FALSE(RefineModes({{{2, 3}}, {{3, 2}}}, 6).has_value());  // radices 2*3 vs 3*2
  CHECK(ModesValue({{2, 1}, {2, 2}}, 2) == 1);  // device 2: bit0 = 0, bit1 = 1 -> 0 * 2 + 1
}

TEST_CASE("sharding: iota and explicit forms answer alike and compare equal") {
  const Sharding iota = Sharding::Parse("{devices=[2,2]<=[2,2]T(1,0)}");
  const Sharding list = Sharding::Parse("{devices=[2,2]0,2,1,3}");
  CHECK(iota.devices.is_iota());
  CHECK_FALSE(list.devices.is_iota());
  CHECK(iota == list);
  CHECK_FALSE(iota == Sharding::Parse("{devices=[2,2]<=[4]}"));
  CHECK(iota.ToString() == "{devices=[2,2]<=[2,2]T(1,0)}");
  CHECK(list.ToString() == "{devices=[2,2]0,2,1,3}");
  for (int64_t dev = 0; dev < 4; ++dev) {
    CHECK(iota.TileIndexOf(dev) == list.TileIndexOf(dev));
    CHECK(iota.DeviceAt(iota.TileIndexOf(dev)) == dev);
  }
  CHECK(iota.TileIndexOf(4).empty());
  CHECK(Sharding::TiledIota({4, 1}).ToString() == "{devices=[4,1]<=[4]}");
  const std::string partial = "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}";
  CHECK(Sharding::Parse(partial).ToString() == partial);
  CHECK(Sharding::Parse("{devices=[65536,1]<=[65536]}").NumDevices() == 65536);
  CHECK_THROWS_WITH_AS(Sharding::Parse("{devices=[2,2]<=[2,2]T(0,0)}"),
                       doctest::Contains("not a permutation"), Error);
  // Lexicographic order without listing: 0,1,2,3 < 0,2,1,3.
  CHECK(Sharding::TiledIota({2, 2}).devices < iota.devices);
  CHECK_FALSE(iota.devices < list.devices);
}

TEST_CASE("verifier: iota tile assignment must match the tile count") {
  Module m("t");
  Builder b(m.AddComputation("main", true));
  Instruction* x = b.Parameter(0, Shape(DType::kF32, {8, 4}), "x");
  x->sharding = Sharding::Parse("{devices=[4,1]<=[4]}");
  Verify(m);
  x->sharding = Sharding::Parse("{devices=[4,1]<=[8]}");
  CHECK_THROWS_WITH_AS(Verify(m), doctest::Contains("lists 8 devices, tile dims need 4"), Error);
}

// all-gather, all-reduce, reduce-scatter and all-to-all over [2,4]<=[4,2]T(1,0) =
// {0,2,4,6},{1,3,5,7}: the same results as the explicit groups; text and proto keep the form.
TEST_CASE("iota replica groups: text, proto, shapes and lockstep results as the explicit list") {
  auto build = [](bool iota) {
    auto m = std::make_unique<Module>("groups");
    Builder b(m->AddComputation("main", true));
    Instruction* x = b.Parameter(0, Shape(DType::kF32, {4, 4}), "x");
    const IotaReplicaGroupList g(2, 4, IotaDevices::Create({4, 2}, {1, 0}));
    const Builder::Groups list = g.ToGroups();
    Instruction* ag = iota ? b.AllGather(x, 0, g) : b.AllGather(x, 0, list);
    Instruction* ar =
        iota ? b.AllReduce(ag, ReduceKind::kAdd, g) : b.AllReduce(ag, ReduceKind::kAdd, list);
    Instruction* rs = iota ? b.ReduceScatter(ar, 0, ReduceKind::kMax, g)
                           : b.ReduceScatter(ar, 0, ReduceKind::kMax, list);
    Instruction* a2a = iota ? b.AllToAll(rs, 1, 0, g) : b.AllToAll(rs, 1, 0, list);
    b.Tuple({ag, a2a});
    return m;
  };
  auto with_iota = build(true);
  auto with_list = build(false);
  CHECK(with_list->entry()->instructions()[1]->replica_groups ==
        std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
  Verify(*with_iota);
  const std::string text = PrintModule(*with_iota);
  CHECK(text.find("replica_groups=[2,4]<=[4,2]T(1,0)") != std::string::npos);
  CHECK(testing::ModuleDifference(*ParseModule(text), *with_iota) == "");
  CHECK(testing::ModuleDifference(*ModuleFromProtoBytes(ModuleToProtoBytes(*with_iota)),
                                  *with_iota) == "");
  for (const auto& i : with_iota->entry()->instructions()) {
    if (!IsCollective(i->opcode)) continue;
    CHECK(ReplicaGroupSizeOf(*i) == 4);
    CHECK(ReplicaGroupsOf(*i) == i->iota_replica_groups->ToGroups());
  }
  std::vector<std::vector<Literal>> args;
  for (int64_t p = 0; p < 8; ++p) args.push_back(RandomArguments(*with_iota, 10 + p));
  CHECK(InterpretSpmd(*with_iota, args, 8) == InterpretSpmd(*with_list, args, 8));
  CHECK_THROWS_WITH_AS(ParseModule("HloModule m\nENTRY %e {\n  %x = f32[4] parameter(0)\n"
                                   "  ROOT %r = f32[4] all-reduce(%x), kind=add, "
                                   "replica_groups=[2,3]<=[8]\n}\n"),
                       doctest::Contains("need 6 partitions, the iota has 8"), Error);
}

}  // namespace
}  // namespace podsim::ir
