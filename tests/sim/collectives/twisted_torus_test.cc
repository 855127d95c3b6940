// Collectives on twisted tori: the twisted view of a box (group_geometry.h's TwistedView) checked
// against the topology's own hop distances, and the torus algorithm on TPU v4's 4x4x8 twisted
// slice against the same slice without the twist.

#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/closed_form.h"
#include "sim/collectives/group_geometry.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

std::vector<int64_t> Everyone(const topo::Topology& topology) {
  std::vector<int64_t> all(static_cast<size_t>(topology.num_cores()));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// Every pair of members one step apart on a view axis is one link apart on the pod; on a closed
// axis the last -> first step too.
void CheckSingleHops(const topo::Topology& pod, const std::vector<int64_t>& group,
                     const BoxGroup& view) {
  for (size_t a = 0; a < view.axes.size(); ++a) {
    const GroupAxis& axis = view.axes[a];
    for (size_t i = 0; i < view.coords.size(); ++i) {
      std::vector<int64_t> next = view.coords[i];
      if (next[a] + 1 == axis.size && !axis.closed) continue;
      next[a] = (next[a] + 1) % axis.size;
      INFO("axis " << a << " member " << i);
      CHECK(pod.Hops(group[i], group[static_cast<size_t>(view.MemberAt(next))]) == 1);
    }
  }
}

TEST_CASE("the twisted view of TPU v4's 4x4x8 slice: rings of 8 through the twisted wraps") {
  const auto pod = topo::LoadTopology("tpu-v4-256-twisted");
  const std::vector<int64_t> all = Everyone(*pod);
  const std::optional<BoxGroup> box = AnalyzeBox(*pod, all);
  REQUIRE(box);
  REQUIRE(box->axes.size() == 3);  // one core per chip: dims 0, 1, 2
  // Plain coordinates: the short axes are lines (their wraps land 4 along dim 2).
  CHECK_FALSE(box->axes[0].closed);
  CHECK_FALSE(box->axes[1].closed);
  CHECK(box->axes[2].closed);
  for (size_t twisted : {size_t{0}, size_t{1}}) {
    INFO("along dim " << twisted);
    const std::optional<BoxGroup> view = TwistedView(*pod, *box, twisted);
    REQUIRE(view);
    // Walking +x from (0, y, z): x = 0..3, then the wrap to (0, y, z + 4), x = 0..3 again, then
    // back to (0, y, z): a ring of 8. Dim 2 keeps z mod 4, a line of 4 (+z from z = 3 crosses
    // into the other half of the ring of 8). The other short axis is a line of 4.
    CHECK(view->axes[twisted].size == 8);
    CHECK(view->axes[twisted].closed);
    CHECK(view->axes[2].size == 4);
    CHECK_FALSE(view->axes[2].closed);
    CHECK(view->axes[1 - twisted].size == 4);
    CHECK_FALSE(view->axes[1 - twisted].closed);
    // A bijection onto the 8 x 4 x 4 box.
    CHECK(std::set<int64_t>(view->member_at.begin(), view->member_at.end()).size() == 128);
    CHECK(*std::min_element(view->member_at.begin(), view->member_at.end()) == 0);
    CheckSingleHops(*pod, all, *view);
  }
  CHECK_FALSE(TwistedView(*pod, *box, 2));  // dim 2 is not twisted
}

TEST_CASE("twisted views: a shift of g = gcd(o, n_e) gives a line of g, g = 1 none") {
  // 2x6, dim 0 twisted by 4 along dim 1: the walk along dim 0 visits z, z + 4, z + 2 (mod 6),
  // m = 3 copies of 2 chips: a ring of 6; dim 1 keeps z mod g = z mod 2, a line of 2 (closed:
  // two members are always one hop apart).
  const auto pod = testing::TwistedGrid({2, 6}, {{0, {0, 4}}});
  const std::vector<int64_t> all = Everyone(*pod);
  const std::optional<BoxGroup> view = TwistedView(*pod, *AnalyzeBox(*pod, all), 0);
  REQUIRE(view);
  CHECK(view->axes[0].size == 6);
  CHECK(view->axes[1].size == 2);
  CheckSingleHops(*pod, all, *view);
  // 4x4 twisted by 1: the walk along dim 0 visits all 16 chips (g = 1): no grid to run on.
  const auto whole = testing::TwistedGrid({4, 4}, {{0, {0, 1}}});
  CHECK_FALSE(TwistedView(*whole, *AnalyzeBox(*whole, Everyone(*whole)), 0));
  // A group that does not cover the twisted dimension whole: no walk to follow.
  const auto v4 = topo::LoadTopology("tpu-v4-256-twisted");
  std::vector<int64_t> half;
  for (int64_t p = 0; p < v4->num_cores(); ++p) {
    if (v4->ChipCoords(v4->ChipOfCore(p))[0] < 2) half.push_back(p);
  }
  CHECK_FALSE(TwistedView(*v4, *AnalyzeBox(*v4, half), 0));
}

// The torus algorithm's rotations on 4x4x8: each starts with a bidirectional ring of 8 and then
// runs two lines of 4 over what is left. Per byte of its part D_r, in units of 1 / B:
//   twisted (every rotation: ring 8 through a twist or the long axis, then lines of 4):
//     7/8 / 2 + 3/4 * 1/8 + 3/4 * 1/32 = 71/128;
//   plain (rings only; ring 8 first, or ring 4, ring 4, ring 8):
//     7/8 / 2 + 3/4 * 1/8 / 2 + 3/4 * 1/32 / 2 = 3/4 / 2 + 3/4 * 1/4 / 2 + 7/8 * 1/16 / 2
//     = 63.5/128.
// The rotations are equally fast, so each gets D / 3. Without the twisted walks, two of the
// three rotations started on a line of 4 (3/4 + 3/4 * 1/4 + 7/8 * 1/16 / 2 = 123.5/128).
TEST_CASE("the torus algorithm on the twisted v4 slice: rings through the twists, by hand") {
  const auto twisted = topo::LoadTopology("tpu-v4-256-twisted");
  nlohmann::json plain_config = twisted->ToJson();
  plain_config.erase("twist");
  const auto plain = topo::LoadTopology(plain_config, "topology");
  const double s = 8.0 * (1 << 20), b = 4.5e10;
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.element_bytes = 4;
  spec.elements = static_cast<int64_t>(s / 4);
  // The closed form: twice (reduce-scatter, all-gather) D / 3 at 71/128 per byte.
  const AnalyticEstimate closed = EstimateAlphaBeta(AnalyticInputFor(spec, *twisted, "torus"));
  CHECK(closed.bandwidth_s == doctest::Approx(2 * s / 3 * 71.0 / 128 / b));
  // Hops: 7 around the ring, 3 + 2 (the closing hop back) on each line; twice.
  CHECK(closed.latency_s == doctest::Approx(2 * (7 + 5 + 5) * 1e-6));
  const AnalyticEstimate plain_closed = EstimateAlphaBeta(AnalyticInputFor(spec, *plain, "torus"));
  CHECK(plain_closed.bandwidth_s == doctest::Approx(2 * s / 3 * 63.5 / 128 / b));
  // The flow model: the twist costs at most what the lines cost in the closed form (71 / 63.5 =
  // 1.118), where starting two rotations on lines cost 1.56x (the rotations' speeds, 128 / x
  // each: 3 x 128 / 63.5 plain against 128 / 71 + 2 x 128 / 123.5).
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    INFO(CollectiveKindName(kind));
    spec.kind = kind;
    CHECK(testing::FlowMicros(spec, *twisted, "torus") <=
          71.0 / 63.5 * testing::FlowMicros(spec, *plain, "torus"));
  }
}

}  // namespace
}  // namespace podsim::sim
