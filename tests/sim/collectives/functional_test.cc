// Functional equivalence: every algorithm's schedule, run on real numbers, equals the reference
// semantics exactly, on every topology kind, for even and uneven sizes, all devices and
// subgroups, with and without pipelining; and the schedules are race-free.

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/group_geometry.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

using testing::CheckFunctional;
using testing::Grid;

struct NamedTopology {
  std::string name;
  std::unique_ptr<topo::Topology> topology;
};

std::vector<NamedTopology> Topologies() {
  std::vector<NamedTopology> t;
  t.push_back({"ring-8", Grid({8}, {true})});
  t.push_back({"line-5", Grid({5}, {false})});
  t.push_back({"torus-4x4", Grid({4, 4}, {true, true})});
  t.push_back({"mesh-3x4", Grid({3, 4}, {false, false})});
  t.push_back({"torus-3x3", Grid({3, 3}, {true, true})});
  t.push_back({"torus-2x3x2", Grid({2, 3, 2}, {true, true, true})});
  t.push_back({"torus-4x2-2cores", Grid({4, 2}, {true, true}, 2)});
  t.push_back({"mesh-2x2-2cores", Grid({2, 2}, {false, false}, 2)});
  t.push_back({"custom-hypercube-16", topo::LoadTopology("hypercube-16")});
  // TPU v4's k x k x 2k twist at k = 2, and a 2D one with two cores per chip: the torus
  // algorithm runs its rotations along the twisted walks (group_geometry.h's TwistedView).
  t.push_back({"twisted-2x2x4", testing::TwistedGrid({2, 2, 4}, {{0, {0, 0, 2}}, {1, {0, 0, 2}}})});
  t.push_back({"twisted-2x4-2cores", testing::TwistedGrid({2, 4}, {{0, {0, 2}}}, 2)});
  return t;
}

// Groups of the partitions that agree on every coordinate but `ext` (0: local core, d + 1: chip
// dimension d), each in coordinate order.
std::vector<std::vector<int64_t>> AxisGroups(const topo::Topology& topology, size_t ext) {
  std::map<std::vector<int64_t>, std::vector<int64_t>> by_rest;
  for (int64_t p = 0; p < topology.num_cores(); ++p) {
    std::vector<int64_t> c = PartitionCoords(topology, p);
    c.erase(c.begin() + static_cast<std::ptrdiff_t>(ext));
    by_rest[c].push_back(p);
  }
  std::vector<std::vector<int64_t>> groups;
  for (auto& [rest, group] : by_rest) groups.push_back(group);
  return groups;
}

struct GroupCase {
  std::string name;
  std::vector<std::vector<int64_t>> groups;
};

std::vector<GroupCase> GroupCases(const topo::Topology& topology) {
  const int64_t p = topology.num_cores();
  std::vector<GroupCase> cases;
  cases.push_back({"all", {}});
  std::vector<int64_t> reversed;
  for (int64_t i = p - 1; i >= 0; --i) reversed.push_back(i);
  cases.push_back({"all-reversed", {reversed}});
  if (topology.grid() != nullptr) {
    const size_t ext_dims = topology.grid()->dims.size() + 1;
    for (size_t e = 0; e < ext_dims; ++e) {
      auto groups = AxisGroups(topology, e);
      if (groups.front().size() > 1) cases.push_back({"axis-" + std::to_string(e), groups});
    }
  }
  // Interleaved halves (not boxes on a 1-core ring), with the odd ones in scrambled order.
  std::vector<int64_t> evens, odds;
  for (int64_t i = 0; i < p; ++i) (i % 2 == 0 ? evens : odds).push_back(i);
  std::swap(odds.front(), odds.back());
  cases.push_back({"interleaved", {evens, odds}});
  // A subgroup of 2 plus partitions left out of every group.
  cases.push_back({"partial", {{1, p - 1}}});
  return cases;
}

bool AllBoxes(const topo::Topology& topology, const std::vector<std::vector<int64_t>>& groups) {
  if (groups.empty()) return topology.grid() != nullptr;
  for (const auto& g : groups) {
    if (!AnalyzeBox(topology, g)) return false;
  }
  return true;
}

bool PowerOfTwoGroups(int64_t partitions, const std::vector<std::vector<int64_t>>& groups) {
  auto power = [](int64_t g) { return g >= 1 && (g & (g - 1)) == 0; };
  if (groups.empty()) return power(partitions);
  for (const auto& g : groups) {
    if (!power(static_cast<int64_t>(g.size()))) return false;
  }
  return true;
}

TEST_CASE("every algorithm equals the reference on every topology, size and group") {
  const std::vector<CollectiveKind> kinds = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                             CollectiveKind::kReduceScatter,
                                             CollectiveKind::kAllToAll};
  int64_t runs = 0;
  for (const NamedTopology& t : Topologies()) {
    const int64_t p = t.topology->num_cores();
    for (const GroupCase& groups : GroupCases(*t.topology)) {
      const bool boxes = AllBoxes(*t.topology, groups.groups);
      for (CollectiveKind kind : kinds) {
        for (const std::string& algorithm : AlgorithmNames(kind)) {
          const bool needs_box = algorithm == "torus" || algorithm == "dim-staged";
          if (needs_box && !boxes) continue;  // rejected: see the validation tests
          if ((algorithm == "halving-doubling" || algorithm == "tree") &&
              !PowerOfTwoGroups(p, groups.groups)) {
            continue;
          }
          const bool pipelined =
              algorithm == "ring" || algorithm == "ring-bidir" || algorithm == "torus" ||
              algorithm == "tree";
          for (int64_t n : {2 * p, p + 3, int64_t{1}}) {
            for (int chunks : pipelined ? std::vector<int>{1, 3} : std::vector<int>{1}) {
              CollectiveSpec spec;
              spec.kind = kind;
              spec.elements = n;
              spec.replica_groups = groups.groups;
              AlgorithmOptions options;
              options.algorithm = algorithm;
              options.chunks = chunks;
              CheckFunctional(spec, *t.topology, options,
                              t.name + " " + groups.name + " " + CollectiveKindName(kind) + " " +
                                  algorithm + " n=" + std::to_string(n) +
                                  " chunks=" + std::to_string(chunks));
              ++runs;
            }
          }
        }
      }
    }
  }
  CHECK(runs > 1000);
}

TEST_CASE("the default algorithm is exact too, including a single-member group") {
  auto torus = Grid({4, 4}, {true, true}, 2);
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                              CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    CollectiveSpec spec;
    spec.kind = kind;
    spec.elements = 37;
    CheckFunctional(spec, *torus, {}, std::string("default ") + CollectiveKindName(kind));
    spec.replica_groups = {{5}, {0, 1}};
    for (const std::string& algorithm : AlgorithmNames(kind)) {
      AlgorithmOptions options;
      options.algorithm = algorithm;
      CheckFunctional(spec, *torus, options,
                      std::string("singleton ") + CollectiveKindName(kind) + " " + algorithm);
    }
  }
}

TEST_CASE("collective-permute: shift, partial permutation, self pair; the rest get zeros") {
  auto torus = Grid({4, 2}, {true, true}, 2);
  const int64_t p = torus->num_cores();
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pair_sets;
  std::vector<std::pair<int64_t, int64_t>> shift;
  for (int64_t i = 0; i < p; ++i) shift.push_back({i, (i + 1) % p});
  pair_sets.push_back(shift);
  pair_sets.push_back({{0, 5}, {5, 0}, {3, 3}, {7, 12}});
  pair_sets.push_back({});
  for (const auto& pairs : pair_sets) {
    CollectiveSpec spec;
    spec.kind = CollectiveKind::kCollectivePermute;
    spec.elements = 11;
    spec.source_target_pairs = pairs;
    CheckFunctional(spec, *torus, {}, "permute with " + std::to_string(pairs.size()) + " pairs");
  }
}

TEST_CASE("larger pods: 8x8 torus with 2 cores, default algorithms, uneven size") {
  auto pod = Grid({8, 8}, {true, true}, 2);  // 128 partitions
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    CollectiveSpec spec;
    spec.kind = kind;
    spec.elements = 128 * 2 + 5;
    CheckFunctional(spec, *pod, {}, std::string("8x8x2 default ") + CollectiveKindName(kind));
  }
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllToAll;
  spec.elements = 256;
  AlgorithmOptions staged;
  staged.algorithm = "dim-staged";
  CheckFunctional(spec, *pod, staged, "8x8x2 dim-staged all-to-all");
}

}  // namespace
}  // namespace podsim::sim
