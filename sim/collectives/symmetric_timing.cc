#include "sim/collectives/symmetric_timing.h"

#include <algorithm>

#include "sim/collectives/algorithms.h"
#include "sim/network/symmetric_flow.h"

namespace podsim::sim {

std::optional<std::vector<RepresentativeTransfer>> SymmetricAllToAllTransfers(
    const CollectiveSpec& spec, const topo::Topology& topology, const std::string& algorithm) {
  if (spec.kind != CollectiveKind::kAllToAll) return std::nullopt;
  const int64_t g = topology.num_cores();
  const std::vector<std::vector<int64_t>> groups = ResolveReplicaGroups(spec, g);
  if (groups.size() != 1 || static_cast<int64_t>(groups[0].size()) != g || g < 2) return std::nullopt;
  if (spec.elements % g != 0 || spec.elements == 0) return std::nullopt;
  const std::string name =
      algorithm.empty() || algorithm == "default" ? DefaultAlgorithm(spec, topology) : algorithm;
  if (name != "direct" || !TranslationSymmetric(topology)) return std::nullopt;

  // Every core sends block bytes to every other core (BuildDirect): the translates of chip 0's
  // cores' transfers. Group order does not matter: every block has the same size.
  const int64_t block = spec.elements / g * spec.element_bytes;
  const int64_t cpc = topology.cores_per_chip();
  std::vector<RepresentativeTransfer> reps;
  reps.reserve(static_cast<size_t>(cpc * (g - 1)));
  for (int64_t s = 0; s < cpc; ++s) {
    for (int64_t d = 0; d < g; ++d) {
      if (d != s) reps.push_back({s, d, block, std::nullopt});
    }
  }
  return reps;
}

std::optional<SymmetricTiming> TimeSymmetricAllToAll(const CollectiveSpec& spec,
                                                     const topo::Topology& topology,
                                                     const std::string& algorithm,
                                                     const std::string& network,
                                                     const TimingOptions& options) {
  if (network != "flow" || options.record_transfers) return std::nullopt;
  std::optional<std::vector<RepresentativeTransfer>> found =
      SymmetricAllToAllTransfers(spec, topology, algorithm);
  if (!found) return std::nullopt;
  const std::vector<RepresentativeTransfer>& reps = *found;
  const int64_t g = topology.num_cores();
  const int64_t block = spec.elements / g * spec.element_bytes;
  const int64_t cpc = topology.cores_per_chip();
  const Time start = options.fixed_overhead;
  std::optional<SymmetricFlowResult> flow = SolveSymmetricFlow(topology, reps, start);
  if (!flow) return std::nullopt;

  SymmetricTiming out;
  TimingResult& t = out.timing;
  // Each core's own block is a local copy (free unless copies have a bandwidth).
  const Time copy_end =
      options.local_copy_bandwidth > 0
          ? start + TransferTime(Bytes{block}, BytesPerSecond{options.local_copy_bandwidth})
          : start;
  out.done_by_local_core.assign(static_cast<size_t>(cpc), copy_end);
  Time network_end = start;
  for (size_t r = 0; r < reps.size(); ++r) {
    const Time done = flow->done[r];
    network_end = std::max(network_end, done);
    // The representative's source, and (translated back) the destination's local index.
    for (int64_t core : {reps[r].src_core, reps[r].dst_core % cpc}) {
      Time& d = out.done_by_local_core[static_cast<size_t>(core)];
      d = std::max(d, done);
    }
  }
  const int64_t transfers = g * (g - 1);
  t.total = std::max(network_end, copy_end);
  StepTiming step;
  step.start = start;
  step.end = network_end;
  step.transfers = transfers;
  step.bytes = transfers * block;
  t.steps = {step};
  t.network_transfers = transfers;
  t.network_bytes = transfers * block;
  t.local_bytes = g * block;
  t.link_bytes = std::move(flow->link_bytes);
  SetBusiestLink(topology, t);
  return out;
}

}  // namespace podsim::sim
