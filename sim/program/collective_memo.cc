#include "sim/program/collective_memo.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/closed_form.h"
#include "sim/collectives/symmetric_timing.h"
#include "sim/collectives/timing.h"

namespace podsim::sim {

namespace {

std::vector<int64_t> ParticipantsOf(const CollectiveSpec& spec) {
  std::vector<int64_t> out;
  if (spec.kind == CollectiveKind::kCollectivePermute) {
    for (const auto& [s, t] : spec.source_target_pairs) {
      out.push_back(s);
      out.push_back(t);
    }
  } else {
    for (const auto& g : spec.replica_groups) out.insert(out.end(), g.begin(), g.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Network transfers the plan's schedule would have, without building it when the algorithm is
// "direct" (every ordered pair of a group; all-reduce: two rounds); -1 when unknown.
int64_t EstimateTransfers(const CollectivePlan& plan) {
  if (plan.algorithm.algorithm != "direct") return -1;
  if (plan.spec.kind == CollectiveKind::kCollectivePermute) {
    return static_cast<int64_t>(plan.spec.source_target_pairs.size());
  }
  int64_t total = 0;
  for (const auto& g : plan.spec.replica_groups) {
    const int64_t size = static_cast<int64_t>(g.size());
    total += size * (size - 1);
  }
  return plan.spec.kind == CollectiveKind::kAllReduce ? 2 * total : total;
}

// Bytes per directed link of a "direct" collective (one message per ordered pair of a group).
std::vector<double> DirectLinkBytes(const CollectiveSpec& spec, const topo::Topology& topology) {
  const int64_t cores = topology.num_cores();
  const int64_t chips = topology.num_chips();
  const int64_t cpc = topology.cores_per_chip();
  // Routes between cores of different chips depend on the source core only through the
  // "alternate" tie-break; otherwise one route per chip pair serves every core pair.
  const nlohmann::json config = topology.ToJson();
  const bool per_core = config.is_object() && config.value("tie_break", std::string()) == "alternate";
  const int64_t sources = per_core ? cores : chips;
  std::vector<double> cross(static_cast<size_t>(sources * chips), 0.0);
  std::map<std::pair<int64_t, int64_t>, double> on_chip;  // (src core, dst core), same chip
  const double eb = static_cast<double>(spec.element_bytes);
  for (const auto& g : spec.replica_groups) {
    const int64_t size = static_cast<int64_t>(g.size());
    for (int64_t i = 0; i < size; ++i) {
      for (int64_t j = 0; j < size; ++j) {
        if (i == j) continue;
        double elements = 0;
        switch (spec.kind) {
          case CollectiveKind::kAllGather:
            elements = static_cast<double>(spec.elements);
            break;
          case CollectiveKind::kAllReduce:
            elements = static_cast<double>(BlockOf(spec.elements, size, j).elements +
                                           BlockOf(spec.elements, size, i).elements);
            break;
          default:  // all-to-all, reduce-scatter: block j goes to member j
            elements = static_cast<double>(BlockOf(spec.elements, size, j).elements);
            break;
        }
        const int64_t src = g[static_cast<size_t>(i)], dst = g[static_cast<size_t>(j)];
        const int64_t src_chip = src / cpc, dst_chip = dst / cpc;
        if (src_chip == dst_chip) {
          on_chip[{src, dst}] += elements * eb;
        } else {
          cross[static_cast<size_t>((per_core ? src : src_chip) * chips + dst_chip)] += elements * eb;
        }
      }
    }
  }
  std::vector<double> link_bytes(topology.links().size(), 0.0);
  auto add_route = [&](int64_t src_core, int64_t dst_core, double bytes) {
    for (const auto& path : topology.RouteSplit(src_core, dst_core)) {
      for (int64_t l : path.links) link_bytes[static_cast<size_t>(l)] += bytes * path.fraction;
    }
  };
  for (int64_t s = 0; s < sources; ++s) {
    for (int64_t d = 0; d < chips; ++d) {
      const double bytes = cross[static_cast<size_t>(s * chips + d)];
      if (bytes > 0) add_route(per_core ? s : s * cpc, d * cpc, bytes);
    }
  }
  for (const auto& [pair, bytes] : on_chip) add_route(pair.first, pair.second, bytes);
  return link_bytes;
}

}  // namespace

std::shared_ptr<const ScheduleData> MakeScheduleData(const CollectiveSpec& spec,
                                                     const topo::Topology& topology,
                                                     const AlgorithmOptions& algorithm) {
  auto data = std::make_shared<ScheduleData>();
  data->schedule = BuildSchedule(spec, topology, algorithm);
  data->index = IndexSchedule(data->schedule);
  data->participants = ParticipantsOf(spec);
  return data;
}



CollectiveMemo ComputeMemo(const CollectivePlan& plan, const topo::Topology& topology,
                           const MemoOptions& options) {
  CollectiveMemo memo;
  const int64_t partitions = static_cast<int64_t>(plan.group_of.size());
  memo.done.assign(static_cast<size_t>(partitions), Time());
  TimingOptions timing;
  timing.fixed_overhead = options.fixed_overhead;
  timing.local_copy_bandwidth = options.local_copy_bandwidth;
  // The torus algorithm over every core of a symmetric pod: exact from chip 0's transfers.
  if (partitions == topology.num_cores()) {
    if (std::optional<SymmetricTiming> fast =
            TimeSymmetricTorus(plan.spec, topology, plan.algorithm.algorithm, plan.algorithm.chunks,
                               options.network, timing)) {
      memo.total = fast->timing.total;
      memo.network_transfers = fast->timing.network_transfers;
      memo.link_bytes = std::move(fast->timing.link_bytes);
      const int64_t cpc = topology.cores_per_chip();
      for (int64_t p = 0; p < partitions; ++p) {
        memo.done[static_cast<size_t>(p)] = fast->done_by_local_core[static_cast<size_t>(p % cpc)];
      }
      return memo;
    }
  }
  const int64_t estimate = EstimateTransfers(plan);
  if (estimate > options.exact_max_transfers &&
      plan.spec.kind != CollectiveKind::kCollectivePermute) {
    const AnalyticEstimate e =
        EstimateAlphaBeta(AnalyticInputFor(plan.spec, topology, plan.algorithm.algorithm));
    memo.closed_form = true;
    memo.total = options.fixed_overhead + Time::FromSeconds(e.seconds);
    for (int64_t p = 0; p < partitions; ++p) {
      if (plan.group_of[static_cast<size_t>(p)] >= 0) memo.done[static_cast<size_t>(p)] = memo.total;
    }
    memo.link_bytes = DirectLinkBytes(plan.spec, topology);
    memo.network_transfers = estimate;
    return memo;
  }
  const Schedule schedule = BuildSchedule(plan.spec, topology, plan.algorithm);
  std::unique_ptr<NetworkModel> network =
      MakeNetworkModel(options.network, topology, options.network_options);
  timing.record_transfers = true;
  TimingResult r = RunTiming(schedule, topology, *network, timing);
  memo.total = r.total;
  memo.network_transfers = r.network_transfers;
  memo.link_bytes = std::move(r.link_bytes);
  for (int64_t p = 0; p < partitions; ++p) {
    if (plan.group_of[static_cast<size_t>(p)] >= 0) memo.done[static_cast<size_t>(p)] = options.fixed_overhead;
  }
  for (size_t i = 0; i < schedule.transfers.size(); ++i) {
    const ChunkTransfer& t = schedule.transfers[i];
    for (int64_t p : {t.src, t.dst}) {
      if (p < partitions) {
        Time& d = memo.done[static_cast<size_t>(p)];
        d = std::max(d, r.transfer_end[i]);
      }
    }
  }
  return memo;
}

std::string MemoSignature(const CollectivePlan& plan) {
  std::string s = std::string(CollectiveKindName(plan.spec.kind)) + "|" +
                  std::to_string(plan.spec.elements) + "|" +
                  std::to_string(plan.spec.element_bytes) + "|" + plan.algorithm.algorithm + "|" +
                  std::to_string(plan.algorithm.chunks) + "|" +
                  std::to_string(plan.group_of.size()) + "|";
  for (const auto& g : plan.spec.replica_groups) {
    for (int64_t p : g) s += std::to_string(p) + ",";
    s += ";";
  }
  for (const auto& [a, b] : plan.spec.source_target_pairs) {
    s += std::to_string(a) + ">" + std::to_string(b) + ",";
  }
  return s;
}

}  // namespace podsim::sim
