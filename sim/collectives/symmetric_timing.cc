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

std::vector<Time> DoneByLocalCore(const std::vector<RepresentativeTransfer>& reps,
                                  const std::vector<Time>& done, size_t first, size_t last,
                                  int64_t cores_per_chip, Time start, int64_t block_bytes,
                                  double local_copy_bandwidth) {
  Time copy_end = start;
  if (local_copy_bandwidth > 0) {
    copy_end += TransferTime(Bytes{block_bytes}, BytesPerSecond{local_copy_bandwidth});
  }
  std::vector<Time> by_core(static_cast<size_t>(cores_per_chip), copy_end);
  for (size_t k = first; k < last; ++k) {
    // The representative's source, and (translated back) the destination's local index.
    for (int64_t core : {reps[k].src_core, reps[k].dst_core % cores_per_chip}) {
      Time& d = by_core[static_cast<size_t>(core)];
      d = std::max(d, done[k]);
    }
  }
  return by_core;
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
  out.done_by_local_core = DoneByLocalCore(reps, flow->done, 0, reps.size(), cpc, start, block,
                                           options.local_copy_bandwidth);
  Time network_end = start;
  for (const Time done : flow->done) network_end = std::max(network_end, done);
  // The local copies end before or with the network unless copies are slow.
  const Time cores_end =
      *std::max_element(out.done_by_local_core.begin(), out.done_by_local_core.end());
  const int64_t transfers = g * (g - 1);
  t.total = std::max(network_end, cores_end);
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
