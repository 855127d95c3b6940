// Bad input: each gets a podsim::Error naming the offending field; nothing crashes.

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/closed_form.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/functional.h"
#include "sim/collectives/timing.h"
#include "sim/network/flow_network.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

using testing::Grid;

// The message of the podsim::Error that f throws ("" if none).
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

CollectiveSpec Spec(CollectiveKind kind, std::vector<std::vector<int64_t>> groups = {}) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.elements = 16;
  spec.replica_groups = std::move(groups);
  return spec;
}

AlgorithmOptions Algorithm(const std::string& name) {
  AlgorithmOptions o;
  o.algorithm = name;
  return o;
}

TEST_CASE("replica groups: nonexistent partition, duplicates, empty group") {
  auto torus = Grid({2, 2}, {true, true});  // 4 partitions
  const std::string missing = ErrorOf([&] {
    BuildSchedule(Spec(CollectiveKind::kAllReduce, {{0, 1}, {2, 9}}), *torus);
  });
  CHECK(missing.find("replica_groups[1][1]: partition 9 does not exist") == 0);
  const std::string negative =
      ErrorOf([&] { BuildSchedule(Spec(CollectiveKind::kAllGather, {{-1}}), *torus); });
  CHECK(negative.find("replica_groups[0][0]") == 0);
  const std::string twice = ErrorOf([&] {
    BuildSchedule(Spec(CollectiveKind::kAllReduce, {{0, 1}, {2, 1}}), *torus);
  });
  CHECK(twice.find("replica_groups[1][1]: partition 1 appears twice (also replica_groups[0][1])") ==
        0);
  const std::string same_group = ErrorOf([&] {
    BuildSchedule(Spec(CollectiveKind::kAllToAll, {{3, 3}}), *torus);
  });
  CHECK(same_group.find("replica_groups[0][1]: partition 3 appears twice") == 0);
  const std::string empty = ErrorOf([&] {
    BuildSchedule(Spec(CollectiveKind::kAllReduce, {{0}, {}}), *torus);
  });
  CHECK(empty.find("replica_groups[1]: ") == 0);
}

TEST_CASE("source-target pairs must be a partial permutation") {
  auto torus = Grid({2, 2}, {true, true});
  CollectiveSpec spec = Spec(CollectiveKind::kCollectivePermute);
  spec.source_target_pairs = {{0, 1}, {0, 2}};
  CHECK(ErrorOf([&] {
          BuildSchedule(spec, *torus);
        }).find("source_target_pairs[1]: source 0 appears twice (also source_target_pairs[0])") ==
        0);
  spec.source_target_pairs = {{0, 1}, {2, 1}};
  CHECK(ErrorOf([&] {
          BuildSchedule(spec, *torus);
        }).find("source_target_pairs[1]: target 1 appears twice") == 0);
  spec.source_target_pairs = {{0, 4}};
  CHECK(ErrorOf([&] {
          BuildSchedule(spec, *torus);
        }).find("source_target_pairs[0].target: partition 4 does not exist") == 0);
  CollectiveSpec reduce = Spec(CollectiveKind::kAllReduce);
  reduce.source_target_pairs = {{0, 1}};
  CHECK(ErrorOf([&] {
          BuildSchedule(reduce, *torus);
        }).find("source_target_pairs: only collective-permute") == 0);
}

TEST_CASE("algorithms that do not apply") {
  auto torus = Grid({4, 4}, {true, true});
  CHECK(ErrorOf([&] { BuildSchedule(Spec(CollectiveKind::kAllGather), *torus, Algorithm("tree")); })
            .find("algorithm: 'tree' does not apply to all-gather (known: ring, ring-bidir, torus, "
                  "direct, halving-doubling)") == 0);
  CHECK(ErrorOf([&] {
          BuildSchedule(Spec(CollectiveKind::kAllReduce), *torus, Algorithm("dim-staged"));
        }).find("algorithm: 'dim-staged' does not apply to all-reduce") == 0);
  CHECK(ErrorOf([&] {
          BuildSchedule(Spec(CollectiveKind::kAllToAll), *torus, Algorithm("ring"));
        }).find("algorithm: 'ring' does not apply to all-to-all") == 0);
  // Not a box: partitions 0, 5, 10 (a diagonal).
  const std::string diagonal = ErrorOf([&] {
    BuildSchedule(Spec(CollectiveKind::kAllReduce, {{1, 2}, {0, 5, 10}}), *torus,
                  Algorithm("torus"));
  });
  CHECK(diagonal.find("replica_groups[1]: algorithm 'torus' needs every group to be a box") == 0);
  CHECK(ErrorOf([&] {
          BuildSchedule(Spec(CollectiveKind::kAllToAll, {{0, 5}}), *torus, Algorithm("dim-staged"));
        }).find("replica_groups[0]: algorithm 'dim-staged'") == 0);
  // A custom graph has no torus structure.
  auto cube = topo::LoadTopology("hypercube-16");
  CHECK(ErrorOf([&] {
          BuildSchedule(Spec(CollectiveKind::kAllReduce), *cube, Algorithm("torus"));
        }).find("algorithm: 'torus' needs a torus or mesh topology") == 0);
  // 16 members, 64 B: halving-doubling's 8 one-hop steps beat the rings' 30.
  CHECK(DefaultAlgorithm(Spec(CollectiveKind::kAllReduce), *cube) == "halving-doubling");
  AlgorithmOptions zero;
  zero.chunks = 0;
  CHECK(ErrorOf([&] {
          BuildSchedule(Spec(CollectiveKind::kAllReduce), *torus, zero);
        }).find("chunks: must be >= 1") == 0);
  CollectiveSpec negative = Spec(CollectiveKind::kAllReduce);
  negative.elements = -1;
  CHECK(ErrorOf([&] { BuildSchedule(negative, *torus); }).find("elements: must be >= 0") == 0);
}

TEST_CASE("default algorithm choice") {
  auto torus = Grid({4, 4}, {true, true});
  // 8 MiB per partition: bandwidth decides. 64 B: latency does, and direct's one or two steps
  // of at most 4 hops beat every other algorithm's 6 or more (the torus all-reduce: 12 steps).
  auto big = [](CollectiveSpec spec) {
    spec.elements = 2 * 1024 * 1024;
    return spec;
  };
  CHECK(DefaultAlgorithm(big(Spec(CollectiveKind::kAllReduce)), *torus) == "torus");
  CHECK(DefaultAlgorithm(Spec(CollectiveKind::kAllReduce), *torus) == "direct");
  CHECK(DefaultAlgorithm(Spec(CollectiveKind::kAllToAll), *torus) == "direct");
  CHECK(DefaultAlgorithm(Spec(CollectiveKind::kCollectivePermute), *torus) == "direct");
  // One row: a single axis, the bidirectional ring along it.
  CHECK(DefaultAlgorithm(big(Spec(CollectiveKind::kAllGather, {{0, 1, 2, 3}, {4, 5, 6, 7}})),
                         *torus) == "ring-bidir");
  CHECK(DefaultAlgorithm(big(Spec(CollectiveKind::kReduceScatter, {{0, 5}})), *torus) ==
        "ring-bidir");
  CHECK(BuildSchedule(big(Spec(CollectiveKind::kAllReduce)), *torus, Algorithm("default"))
            .algorithm == "torus");
}

TEST_CASE("collective kind names") {
  CHECK(ParseCollectiveKind("all-to-all") == CollectiveKind::kAllToAll);
  CHECK(ParseCollectiveKind("AllReduce") == CollectiveKind::kAllReduce);
  CHECK(ParseCollectiveKind("reduce_scatter") == CollectiveKind::kReduceScatter);
  CHECK(std::string(CollectiveKindName(CollectiveKind::kCollectivePermute)) ==
        "collective-permute");
  CHECK(ErrorOf([] {
          ParseCollectiveKind("broadcast", "--op");
        }).find("--op: unknown collective 'broadcast'") == 0);
}

TEST_CASE("executors reject mismatched inputs") {
  auto torus = Grid({2, 2}, {true, true});
  const Schedule s = BuildSchedule(Spec(CollectiveKind::kAllReduce), *torus);
  CHECK(ErrorOf([&] {
          RunFunctional(s, PartitionBuffers(3));
        }).find("inputs: expected 4 partitions") == 0);
  CHECK(ErrorOf([&] {
          RunFunctional(s, PartitionBuffers(4, std::vector<float>(5)));
        }).find("inputs[0]: expected 16 elements") == 0);
  auto small = Grid({2}, {true});
  FlowNetwork flow(*small);
  CHECK(ErrorOf([&] { RunTiming(s, *small, flow); }).find("schedule: 4 partitions") == 0);
  AnalyticInput in;
  in.axes = {AnalyticAxis{}};
  in.axes[0].size = 0;
  CHECK(ErrorOf([&] { EstimateAlphaBeta(in); }).find("axes[0].size: must be >= 1") == 0);
}

}  // namespace
}  // namespace podsim::sim
