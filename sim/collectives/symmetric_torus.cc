// The torus algorithm over every core of a translation-symmetric pod, timed on chip 0's transfers
// (symmetric_timing.h, TimeSymmetricTorus).
//
// Why it is exact. When all the slots of each part have one size and pieces are not cut into
// sub-chunks, the schedule BuildTorus makes is invariant under the pod's translations: each part
// runs its rings in one direction (torus_algorithms.cc), so the translate of chip c's transfer
// by v is chip (c + v)'s transfer of the same part, phase, step, with the same bytes, the
// translated route, and deps that are the translates of its deps. By induction over events, in
// the flow model every translate of a transfer then starts when it starts and, the max-min rates
// being unique and so invariant, ends when it ends. The schedule of chip 0's transfers, each dep
// replaced by the chip-0 transfer it is a translate of, run on the flow model's quotient by the
// translations (FlowOptions::link_orbits), gives every transfer's times. (Sub-chunks break it:
// the member at ring position q finds its next piece in sub-chunk q of what it received, which
// its sender's queue sent after the others.)
//
// Where the deps come from. BuildTorus derives them from buffer ranges (ScheduleBuilder's
// tracking). A transfer's deps are the earlier transfers that touched the ranges it reads or
// writes, i.e. transfers into or out of its source or destination; so chip 0's transfers get
// complete deps from a schedule built only over the lines through chip 0 and its neighbours
// (BuildTorusNear), a few hundredths of the pod's. Its transfers are matched with their chip-0
// translates by (local cores, chip offset, step, and their rank among the transfers of the same
// source, destination and step in build order): the builder issues each pair's transfers in the
// same order on every chip, and builds a pair's transfers all or none. Anything that does not
// match (a translate with other bytes, a dep without a chip-0 counterpart, or one that would
// come later) means the schedule is not invariant: std::nullopt, and the caller builds it all.

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/algorithms_internal.h"
#include "sim/collectives/symmetric_timing.h"
#include "sim/network/flow_network.h"

namespace podsim::sim {
namespace {

// What matches a transfer with its chip-0 translate.
struct TranslateKey {
  int64_t src_core = 0;  // local index on its chip
  int64_t dst_core = 0;
  int64_t offset = 0;  // the destination chip minus the source chip, as a chip id of the grid
  int32_t step = 0;
  int32_t rank = 0;  // among the transfers of the same source, destination and step
  auto operator<=>(const TranslateKey&) const = default;
};

// The chip id of (b - a) on the grid of `topology` (coordinates modulo the dimensions).
int64_t ChipOffset(const topo::Topology& topology, int64_t a, int64_t b) {
  const std::vector<int64_t> ca = topology.ChipCoords(a);
  std::vector<int64_t> cb = topology.ChipCoords(b);
  const std::vector<int64_t>& dims = topology.grid()->dims;
  for (size_t d = 0; d < dims.size(); ++d) cb[d] = ((cb[d] - ca[d]) % dims[d] + dims[d]) % dims[d];
  return topology.ChipAt(cb);
}

// Chip 0 and its neighbours along every dimension, marked.
std::vector<char> NearChipZero(const topo::Topology& topology) {
  std::vector<char> near(static_cast<size_t>(topology.num_chips()), 0);
  const std::vector<int64_t>& dims = topology.grid()->dims;
  near[0] = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    for (int64_t step : {int64_t{1}, dims[d] - 1}) {
      std::vector<int64_t> c(dims.size(), 0);
      c[d] = step % dims[d];
      near[static_cast<size_t>(topology.ChipAt(c))] = 1;
    }
  }
  return near;
}

// Whether all the slots of each part have one size (the builder's PartOf and BlockOf).
bool EqualSlots(const CollectiveSpec& spec, int64_t g) {
  switch (spec.kind) {
    case CollectiveKind::kAllGather:
      return true;  // a slot: a member's input
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
      return spec.elements % g == 0;
    default:
      return false;
  }
}

// Chip 0's transfers of `near` with their deps on chip-0 transfers (see the file comment), or
// std::nullopt if the schedule is not invariant.
std::optional<Schedule> Representatives(const Schedule& near, const topo::Topology& topology) {
  const int64_t cpc = topology.cores_per_chip();
  const size_t n = near.transfers.size();
  std::vector<TranslateKey> keys(n);
  std::map<std::tuple<int32_t, int32_t, int32_t>, int32_t> ranks;  // (src, dst, step) -> count
  std::map<TranslateKey, int32_t> chip_zero;  // key -> index in the representative schedule
  std::vector<int32_t> own(n, -1);            // near index -> representative index (chip 0's)
  Schedule reps;
  reps.kind = near.kind;
  reps.algorithm = near.algorithm;
  reps.num_partitions = near.num_partitions;
  reps.element_bytes = near.element_bytes;
  reps.input_elements = near.input_elements;
  reps.output_elements = near.output_elements;
  reps.scratch_elements = near.scratch_elements;
  reps.num_steps = near.num_steps;
  reps.replica_groups = near.replica_groups;
  reps.chunks = near.chunks;
  reps.description = near.description;
  for (size_t i = 0; i < n; ++i) {
    const ChunkTransfer& t = near.transfers[i];
    const int64_t src_chip = topology.ChipOfCore(t.src), dst_chip = topology.ChipOfCore(t.dst);
    keys[i] = {t.src % cpc, t.dst % cpc, ChipOffset(topology, src_chip, dst_chip), t.step,
               ranks[{t.src, t.dst, t.step}]++};
    if (src_chip != 0) continue;
    own[i] = static_cast<int32_t>(reps.transfers.size());
    chip_zero.emplace(keys[i], own[i]);
    ChunkTransfer copy = t;
    copy.num_segments = 0;  // timing reads only the element count
    copy.first_segment = 0;
    reps.transfers.push_back(copy);
  }
  // Each transfer's chip-0 translate; -1 where it has none.
  std::vector<int32_t> translate(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const auto it = chip_zero.find(keys[i]);
    if (it == chip_zero.end()) continue;
    translate[i] = it->second;
    if (near.transfers[i].elements != reps.transfers[static_cast<size_t>(it->second)].elements) {
      return std::nullopt;  // a translate moves other bytes: slots of different sizes
    }
  }
  const bool queued = !near.queued_after.empty();
  if (queued) reps.queued_after.assign(reps.transfers.size(), -1);
  std::vector<int32_t> deps;
  for (size_t i = 0; i < n; ++i) {
    if (own[i] < 0) continue;
    ChunkTransfer& x = reps.transfers[static_cast<size_t>(own[i])];
    deps.clear();
    for (int32_t d : Deps(near, near.transfers[i])) {
      const int32_t r = translate[static_cast<size_t>(d)];
      if (r < 0 || r >= own[i]) return std::nullopt;
      deps.push_back(r);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    x.first_dep = static_cast<int32_t>(reps.dep_index.size());
    x.num_deps = static_cast<int32_t>(deps.size());
    reps.dep_index.insert(reps.dep_index.end(), deps.begin(), deps.end());
    if (queued && near.queued_after[i] >= 0) {
      const int32_t q = own[static_cast<size_t>(near.queued_after[i])];
      if (q < 0) return std::nullopt;
      reps.queued_after[static_cast<size_t>(own[i])] = q;
    }
  }
  return reps;
}

}  // namespace

std::optional<SymmetricTiming> TimeSymmetricTorus(const CollectiveSpec& spec,
                                                  const topo::Topology& topology,
                                                  const std::string& algorithm, int chunks,
                                                  const std::string& network,
                                                  const TimingOptions& options) {
  if (network != "flow" || options.record_transfers || topology.grid() == nullptr) {
    return std::nullopt;
  }
  if (spec.kind != CollectiveKind::kAllReduce && spec.kind != CollectiveKind::kAllGather &&
      spec.kind != CollectiveKind::kReduceScatter) {
    return std::nullopt;
  }
  const std::optional<std::vector<int32_t>> orbits = TranslationLinkOrbits(topology);
  if (!orbits) return std::nullopt;
  const std::vector<std::vector<int64_t>> groups = ResolveReplicaGroups(spec, topology.num_cores());
  if (groups.size() != 1 || static_cast<int64_t>(groups[0].size()) != topology.num_cores()) {
    return std::nullopt;
  }
  for (size_t i = 0; i < groups[0].size(); ++i) {
    if (groups[0][i] != static_cast<int64_t>(i)) return std::nullopt;
  }
  if (chunks != 1 || !EqualSlots(spec, topology.num_cores())) return std::nullopt;
  if (algorithm != "torus") return std::nullopt;
  AlgorithmOptions build;
  build.chunks = chunks;
  const Schedule near = internal::BuildTorusNear(spec, topology, build, NearChipZero(topology));
  std::optional<Schedule> reps = Representatives(near, topology);
  if (!reps) return std::nullopt;

  FlowOptions quotient;
  quotient.link_orbits = &*orbits;
  FlowNetwork flow(topology, quotient);
  TimingOptions recorded = options;
  recorded.record_transfers = true;
  SymmetricTiming out;
  TimingResult& t = out.timing;
  t = RunTiming(*reps, topology, flow, recorded);
  // A core's last transfer in is the translate of a chip-0 transfer into the same local core.
  const int64_t cpc = topology.cores_per_chip();
  out.done_by_local_core.assign(static_cast<size_t>(cpc), options.fixed_overhead);
  for (size_t i = 0; i < reps->transfers.size(); ++i) {
    const ChunkTransfer& x = reps->transfers[i];
    for (const int64_t core : {x.src % cpc, x.dst % cpc}) {
      Time& done = out.done_by_local_core[static_cast<size_t>(core)];
      done = std::max(done, t.transfer_end[i]);
    }
  }
  t.transfer_start.clear();
  t.transfer_end.clear();
  // Every transfer stands for one per chip.
  const int64_t chips = topology.num_chips();
  t.network_transfers *= chips;
  t.network_bytes *= chips;
  t.local_bytes *= chips;
  for (StepTiming& step : t.steps) {
    step.transfers *= chips;
    step.bytes *= chips;
  }
  return out;
}

}  // namespace podsim::sim
