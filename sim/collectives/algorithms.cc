#include "sim/collectives/algorithms.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "base/format.h"
#include "base/memory.h"
#include "sim/collectives/algorithms_internal.h"
#include "sim/collectives/bounds.h"
#include "sim/collectives/closed_form.h"
#include "sim/collectives/group_geometry.h"
#include "sim/collectives/timing.h"
#include "sim/network/flow_network.h"

namespace podsim::sim {
namespace internal {

std::string ShortList(const std::vector<int64_t>& ids, size_t max_shown) {
  std::string s = "partitions";
  for (size_t i = 0; i < ids.size() && i < max_shown; ++i) s += " " + std::to_string(ids[i]);
  if (ids.size() > max_shown) s += " ... (" + std::to_string(ids.size()) + ")";
  return s;
}

std::vector<BoxGroup> RequireBoxGroups(const BuildContext& context, const std::string& algorithm,
                                       const std::string& box_example,
                                       const std::string& alternatives) {
  if (context.topology.grid() == nullptr) {
    throw Error("algorithm: '" + algorithm + "' needs a torus or mesh topology; '" +
                context.topology.name() + "' is a custom graph (use " + alternatives + ")");
  }
  std::vector<BoxGroup> boxes;
  for (size_t g = 0; g < context.groups.size(); ++g) {
    std::optional<BoxGroup> box = AnalyzeBox(context.topology, context.groups[g]);
    if (!box) {
      throw Error("replica_groups[" + std::to_string(g) + "]: algorithm '" + algorithm +
                  "' needs every group to be a box of the grid (a product of coordinate ranges" +
                  box_example + "); " + ShortList(context.groups[g]) + " is not (use " +
                  alternatives + ")");
    }
    boxes.push_back(std::move(*box));
  }
  return boxes;
}

}  // namespace internal

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> AlgorithmNames(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {"ring", "ring-bidir", "torus", "direct", "halving-doubling", "tree"};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return {"ring", "ring-bidir", "torus", "direct", "halving-doubling"};
    case CollectiveKind::kAllToAll: return {"direct", "dim-staged"};
    case CollectiveKind::kCollectivePermute: return {"direct"};
  }
  return {};
}

std::string DefaultAlgorithm(const CollectiveSpec& spec, const topo::Topology& topology) {
  const auto groups = ResolveReplicaGroups(spec, topology.num_cores());
  if (spec.kind == CollectiveKind::kAllToAll || spec.kind == CollectiveKind::kCollectivePermute) {
    return "direct";
  }
  bool all_multi_axis_boxes = topology.grid() != nullptr;
  for (const auto& group : groups) {
    if (!all_multi_axis_boxes) break;
    const auto box = AnalyzeBox(topology, group);
    if (!box || box->axes.size() < 2) all_multi_axis_boxes = false;
  }
  std::vector<std::string> candidates = {"ring-bidir", "ring"};
  if (all_multi_axis_boxes) candidates.insert(candidates.begin(), "torus");
  // Recursive halving-doubling, for groups of a power-of-two size (on a hypercube its partners
  // are neighbours; on a mesh its few steps beat the torus algorithm's closing hops).
  bool powers_of_two = true;
  for (const auto& group : groups) {
    const auto g = static_cast<int64_t>(group.size());
    powers_of_two = powers_of_two && g >= 1 && (g & (g - 1)) == 0;
  }
  if (powers_of_two) candidates.push_back("halving-doubling");
  int64_t members = 0;
  for (const auto& group : groups) members += static_cast<int64_t>(group.size());
  constexpr int64_t kTimedChoiceMaxMembers = 256;
  // Every pair at once: two steps (one for all-gather and reduce-scatter) against the others'
  // tens, so it wins where latency dominates (a few KiB) and loses to contention above. Only
  // where the choice is timed: beyond, its G^2 transfers make every run that uses it slow to
  // simulate (a 512-partition training step: 7x), for microseconds of a small collective.
  if (members <= kTimedChoiceMaxMembers) candidates.push_back("direct");
  // The candidate that finishes first: timed on the flow network (the default model, the one
  // `best` ranks on) when the groups are small enough for their schedules to be cheap, else by
  // the alpha-beta closed form (closed_form.h). Ties go to the earlier candidate. (The analytic
  // network costs as much here and misranks latency-bound cases: it serialises a link's
  // transfers in start order, adding a far transfer's whole latency after the near ones' bytes,
  // where flows overlap it; a 4 KiB direct all-gather on tpu-v3-64 is 11.2 us analytic, 9.2 us
  // flow, and analytic then prefers the torus algorithm's 11.0 us.)
  std::string best;
  double best_s = 0;
  for (const std::string& name : candidates) {
    double s = 0;
    try {
      if (members <= kTimedChoiceMaxMembers) {
        AlgorithmOptions options;
        options.algorithm = name;
        // No schedule and no flow timing for a candidate that cannot win: one whose busiest
        // link alone needs as long as the best so far (the flow model moves no link's bytes
        // faster than its bandwidth), found from its transfers alone. The bound is taken 0.1%
        // low, below any rounding of split routes' bytes, so the choice is the one timing every
        // candidate makes.
        if (!best.empty()) {
          const std::optional<double> bound_us = BusiestLinkBound(
              topology, ScheduleLinkBytes(BuildTransfers(spec, topology, options), topology));
          if (bound_us && *bound_us * 1e-6 * 0.999 >= best_s) continue;
        }
        const Schedule schedule = BuildSchedule(spec, topology, options);
        FlowNetwork network(topology);
        s = RunTiming(schedule, topology, network).total.seconds();
      } else {
        s = EstimateAlphaBeta(AnalyticInputFor(spec, topology, name)).seconds;
      }
    } catch (const Error&) {
      continue;  // it does not apply, or has no closed form for this shape
    }
    if (best.empty() || s < best_s) {
      best = name;
      best_s = s;
    }
  }
  return best.empty() ? "ring-bidir" : best;
}

namespace {

Schedule Build(const CollectiveSpec& spec, const topo::Topology& topology,
               const AlgorithmOptions& options, bool derive_dependencies,
               const std::vector<char>* near_chips = nullptr) {
  const int64_t num_partitions = topology.num_cores();
  const std::vector<std::vector<int64_t>> groups = ResolveReplicaGroups(spec, num_partitions);
  if (options.chunks < 1) {
    throw Error("chunks: must be >= 1, got " + std::to_string(options.chunks));
  }
  std::string algorithm = options.algorithm;
  if (algorithm.empty() || algorithm == "default") algorithm = DefaultAlgorithm(spec, topology);
  const std::vector<std::string> names = AlgorithmNames(spec.kind);
  if (std::find(names.begin(), names.end(), algorithm) == names.end()) {
    throw Error("algorithm: '" + algorithm + "' does not apply to " +
                CollectiveKindName(spec.kind) + " (known: " + JoinNames(names) + ")");
  }

  Schedule schedule;
  schedule.kind = spec.kind;
  schedule.algorithm = algorithm;
  schedule.num_partitions = num_partitions;
  schedule.element_bytes = spec.element_bytes;
  schedule.chunks = options.chunks;
  schedule.replica_groups = groups;
  schedule.source_target_pairs = spec.source_target_pairs;
  schedule.input_elements.assign(static_cast<size_t>(num_partitions), spec.elements);
  if (spec.kind == CollectiveKind::kCollectivePermute) {
    schedule.output_elements.assign(static_cast<size_t>(num_partitions), spec.elements);
  } else {
    schedule.output_elements.assign(static_cast<size_t>(num_partitions), 0);
    for (const auto& group : groups) {
      const int64_t g = static_cast<int64_t>(group.size());
      for (int64_t i = 0; i < g; ++i) {
        schedule.output_elements[static_cast<size_t>(group[static_cast<size_t>(i)])] =
            OutputElements(spec.kind, spec.elements, g, i);
      }
    }
  }

  const internal::BuildContext context{spec,      topology, options, groups, derive_dependencies,
                                       near_chips};
  // Algorithm names are checked above; each builder estimates its size before allocating.
  if (algorithm == "ring") {
    internal::BuildRing(context, /*bidirectional=*/false, schedule);
  } else if (algorithm == "ring-bidir") {
    internal::BuildRing(context, /*bidirectional=*/true, schedule);
  } else if (algorithm == "torus") {
    internal::BuildTorus(context, schedule);
  } else if (algorithm == "direct") {
    internal::BuildDirect(context, schedule);
  } else if (algorithm == "halving-doubling") {
    internal::BuildHalvingDoubling(context, schedule);
  } else if (algorithm == "tree") {
    internal::BuildTree(context, schedule);
  } else if (algorithm == "dim-staged") {
    internal::BuildAllToAllStaged(context, schedule);
  }
  return schedule;
}

}  // namespace

Schedule BuildSchedule(const CollectiveSpec& spec, const topo::Topology& topology,
                       const AlgorithmOptions& options) {
  return Build(spec, topology, options, /*derive_dependencies=*/true);
}

Schedule BuildTransfers(const CollectiveSpec& spec, const topo::Topology& topology,
                        const AlgorithmOptions& options) {
  return Build(spec, topology, options, /*derive_dependencies=*/false);
}

namespace internal {

Schedule BuildTorusNear(const CollectiveSpec& spec, const topo::Topology& topology,
                        const AlgorithmOptions& options, const std::vector<char>& near_chips) {
  AlgorithmOptions torus = options;
  torus.algorithm = "torus";
  return Build(spec, topology, torus, /*derive_dependencies=*/true, &near_chips);
}

void RequireScheduleMemory(const BuildContext& context, const char* algorithm, double transfers,
                           double segments) {
  // A transfer carries about two dependency entries; the executor keeps about as much again
  // per transfer (its index, ready lists and per-transfer times), hence the factor 2.
  const double per_transfer = sizeof(ChunkTransfer) + 2 * sizeof(int32_t);
  const double bytes = 2 * (transfers * per_transfer + segments * sizeof(Segment));
  size_t largest = 0;
  for (const auto& g : context.groups) largest = std::max(largest, g.size());
  RequireMemory(bytes, std::string("the ") + algorithm + " " +
                           CollectiveKindName(context.spec.kind) + " over " +
                           std::to_string(context.groups.size()) + " group(s) of up to " +
                           std::to_string(largest) + " partitions (an estimated " +
                           FormatG(transfers, 3) + " transfers" +
                           (segments > 0 ? " and " + FormatG(segments, 3) + " segments" : "") +
                           ", simulated one by one)");
}

}  // namespace internal
}  // namespace podsim::sim
