#include "sim/collectives/bounds.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace podsim::sim {
namespace {

// Bytes each chip must send to and receive from other chips.
struct ChipDemand {
  std::vector<double> out, in;
  explicit ChipDemand(int64_t chips) : out(static_cast<size_t>(chips)), in(static_cast<size_t>(chips)) {}
};

// Members of `group` per chip.
std::unordered_map<int64_t, int64_t> MembersPerChip(const topo::Topology& t,
                                                    const std::vector<int64_t>& group) {
  std::unordered_map<int64_t, int64_t> k;
  for (int64_t core : group) ++k[t.ChipOfCore(core)];
  return k;
}

void AddGroupDemand(CollectiveKind kind, double b, const std::vector<int64_t>& group,
                    const topo::Topology& t, ChipDemand& d) {
  const std::unordered_map<int64_t, int64_t> per_chip = MembersPerChip(t, group);
  if (per_chip.size() < 2) return;  // on one chip: no ICI traffic is needed
  const double g = static_cast<double>(group.size());
  const double c = static_cast<double>(per_chip.size());
  for (const auto& [chip, members] : per_chip) {
    const double k = static_cast<double>(members);
    double in = 0, out = 0;
    switch (kind) {
      case CollectiveKind::kAllGather: in = (g - k) * b; out = k * b; break;
      case CollectiveKind::kReduceScatter: in = k * b / g; out = (g - k) * b / g; break;
      case CollectiveKind::kAllReduce: in = out = 2 * (c - 1) / c * b; break;
      case CollectiveKind::kAllToAll: in = out = k * (g - k) * b / g; break;
      case CollectiveKind::kCollectivePermute: break;
    }
    d.in[static_cast<size_t>(chip)] += in;
    d.out[static_cast<size_t>(chip)] += out;
  }
}

// Bytes that must cross from side 1 to side 0 (to_0) and from 0 to 1 (to_1) of a cut, for one
// group with m0 and m1 members on the two sides.
void AddCutDemand(CollectiveKind kind, double b, double g, double m0, double m1, double& to_0,
                  double& to_1) {
  if (m0 == 0 || m1 == 0) return;
  switch (kind) {
    case CollectiveKind::kAllGather: to_0 += m1 * b; to_1 += m0 * b; break;
    case CollectiveKind::kReduceScatter: to_0 += m0 * b / g; to_1 += m1 * b / g; break;
    case CollectiveKind::kAllReduce: to_0 += b; to_1 += b; break;
    case CollectiveKind::kAllToAll: to_0 += m0 * m1 * b / g; to_1 += m0 * m1 * b / g; break;
    case CollectiveKind::kCollectivePermute: break;
  }
}

std::optional<double> InjectionBound(const CollectiveSpec& spec, const topo::Topology& t,
                                     const std::vector<std::vector<int64_t>>& groups, double b) {
  ChipDemand demand(t.num_chips());
  if (spec.kind == CollectiveKind::kCollectivePermute) {
    for (const auto& [src, dst] : spec.source_target_pairs) {
      const int64_t a = t.ChipOfCore(src), z = t.ChipOfCore(dst);
      if (a == z) continue;
      demand.out[static_cast<size_t>(a)] += b;
      demand.in[static_cast<size_t>(z)] += b;
    }
  } else {
    for (const auto& group : groups) AddGroupDemand(spec.kind, b, group, t, demand);
  }
  std::vector<double> out_bw(static_cast<size_t>(t.num_chips())), in_bw(out_bw.size());
  for (const topo::Link& l : t.links()) {
    if (l.kind != topo::LinkKind::kIci) continue;
    out_bw[static_cast<size_t>(l.src_chip)] += l.bandwidth.value;
    in_bw[static_cast<size_t>(l.dst_chip)] += l.bandwidth.value;
  }
  std::optional<double> worst;
  for (size_t c = 0; c < out_bw.size(); ++c) {
    for (const auto& [bytes, bw] : {std::pair{demand.out[c], out_bw[c]}, std::pair{demand.in[c], in_bw[c]}}) {
      if (bytes <= 0 || bw <= 0) continue;
      worst = std::max(worst.value_or(0.0), bytes / bw * 1e6);
    }
  }
  return worst;
}

std::optional<double> BisectionBound(const CollectiveSpec& spec, const topo::Topology& t,
                                     const std::vector<std::vector<int64_t>>& groups, double b) {
  const topo::GridShape* grid = t.grid();
  if (grid == nullptr) return std::nullopt;
  std::optional<double> worst;
  std::vector<int> side(static_cast<size_t>(t.num_chips()));
  for (size_t d = 0; d < grid->dims.size(); ++d) {
    const int64_t dim = grid->dims[d];
    if (dim < 2) continue;
    for (int64_t chip = 0; chip < t.num_chips(); ++chip) {
      side[static_cast<size_t>(chip)] = t.ChipCoords(chip)[d] < dim / 2 ? 0 : 1;
    }
    auto side_of_core = [&](int64_t core) { return side[static_cast<size_t>(t.ChipOfCore(core))]; };
    double to_0 = 0, to_1 = 0;
    if (spec.kind == CollectiveKind::kCollectivePermute) {
      for (const auto& [src, dst] : spec.source_target_pairs) {
        const int from = side_of_core(src), to = side_of_core(dst);
        if (from != to) (to == 0 ? to_0 : to_1) += b;
      }
    } else {
      for (const auto& group : groups) {
        double m[2] = {0, 0};
        for (int64_t core : group) ++m[side_of_core(core)];
        AddCutDemand(spec.kind, b, static_cast<double>(group.size()), m[0], m[1], to_0, to_1);
      }
    }
    double bw_to_0 = 0, bw_to_1 = 0;
    for (const topo::Link& l : t.links()) {
      const int from = side[static_cast<size_t>(l.src_chip)], to = side[static_cast<size_t>(l.dst_chip)];
      if (from != to) (to == 0 ? bw_to_0 : bw_to_1) += l.bandwidth.value;
    }
    for (const auto& [bytes, bw] : {std::pair{to_0, bw_to_0}, std::pair{to_1, bw_to_1}}) {
      if (bytes <= 0 || bw <= 0) continue;
      worst = std::max(worst.value_or(0.0), bytes / bw * 1e6);
    }
  }
  return worst;
}

}  // namespace

std::optional<double> BusiestLinkBound(const topo::Topology& t, const std::vector<double>& bytes) {
  if (bytes.size() != t.links().size()) return std::nullopt;
  std::optional<double> worst;
  for (size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] <= 0) continue;
    worst = std::max(worst.value_or(0.0), bytes[l] / t.links()[l].bandwidth.value * 1e6);
  }
  return worst;
}

std::vector<double> ScheduleLinkBytes(const Schedule& schedule, const topo::Topology& topology) {
  std::vector<double> bytes(topology.links().size(), 0.0);
  std::vector<topo::Topology::WeightedPath> paths;
  for (const ChunkTransfer& t : schedule.transfers) {
    if (t.local() || t.elements == 0) continue;
    const double b = static_cast<double>(schedule.Bytes(t));
    const size_t n = topology.RouteSplitInto(t.src, t.dst, paths);
    for (size_t p = 0; p < n; ++p) {
      for (const int64_t link : paths[p].links) {
        bytes[static_cast<size_t>(link)] += b * paths[p].fraction;
      }
    }
  }
  return bytes;
}

namespace {

std::optional<double> LatencyBound(const CollectiveSpec& spec, const topo::Topology& t,
                                   const std::vector<std::vector<int64_t>>& groups) {
  std::vector<int64_t> route;
  auto latency = [&](int64_t a, int64_t z) {
    route.clear();
    t.AppendRoute(a, z, route);
    double us = 0;
    for (int64_t l : route) us += t.links()[static_cast<size_t>(l)].latency.micros();
    return us;
  };
  std::optional<double> worst;
  auto consider = [&](int64_t a, int64_t z) {
    if (a == z) return;
    worst = std::max(worst.value_or(0.0), latency(a, z));
  };
  if (spec.kind == CollectiveKind::kCollectivePermute) {
    for (const auto& [src, dst] : spec.source_target_pairs) consider(src, dst);
    return worst;
  }
  constexpr size_t kMaxSources = 32;
  for (const auto& group : groups) {
    const size_t step = std::max<size_t>(1, group.size() / kMaxSources);
    for (size_t i = 0; i < group.size(); i += step) {
      for (int64_t z : group) consider(group[i], z);
    }
  }
  return worst;
}

}  // namespace

double CollectiveBounds::max_us() const {
  double m = 0;
  for (const auto& b : {injection_us, bisection_us, busiest_link_us, latency_us}) {
    if (b) m = std::max(m, *b);
  }
  return m;
}

nlohmann::json CollectiveBounds::ToJson() const {
  auto value = [](const std::optional<double>& b) {
    return b ? nlohmann::json(*b) : nlohmann::json(nullptr);
  };
  return {{"injection_us", value(injection_us)},
          {"bisection_us", value(bisection_us)},
          {"busiest_link_us", value(busiest_link_us)},
          {"latency_us", value(latency_us)}};
}

CollectiveBounds ComputeBounds(const CollectiveSpec& spec, const topo::Topology& topology,
                               const std::vector<double>& schedule_link_bytes) {
  const auto groups = ResolveReplicaGroups(spec, topology.num_cores());
  const double b = static_cast<double>(spec.elements) * static_cast<double>(spec.element_bytes);
  CollectiveBounds out;
  if (b > 0) {
    out.injection_us = InjectionBound(spec, topology, groups, b);
    out.bisection_us = BisectionBound(spec, topology, groups, b);
    out.busiest_link_us = BusiestLinkBound(topology, schedule_link_bytes);
  }
  out.latency_us = LatencyBound(spec, topology, groups);
  return out;
}

}  // namespace podsim::sim
