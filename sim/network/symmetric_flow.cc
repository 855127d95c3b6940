#include "sim/network/symmetric_flow.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/pod_vector.h"
#include "sim/network/flow_clock.h"
#include "sim/network/maxmin.h"
#include "sim/network/network_util.h"
#include "topologies/torus.h"

namespace podsim::sim {

namespace {

using internal::kLevelTolerance;
using internal::kPsPerSecond;

// The orbits of the links under the translations: orbit[l], with one capacity per orbit.
struct LinkOrbits {
  std::vector<int32_t> orbit;
  std::vector<double> capacity;
};

std::optional<LinkOrbits> FindLinkOrbits(const topo::Topology& topology) {
  const auto* torus = dynamic_cast<const topo::TorusTopology*>(&topology);
  if (torus == nullptr || torus->twisted()) return std::nullopt;
  const topo::GridShape& grid = *torus->grid();
  const int64_t cpc = topology.cores_per_chip();
  const size_t ndims = grid.dims.size();
  bool even_ring = false;
  for (size_t d = 0; d < ndims; ++d) {
    if (!grid.wraparound[d] && grid.dims[d] > 2) return std::nullopt;  // a line: ends differ
    even_ring |= grid.wraparound[d] && grid.dims[d] % 2 == 0;
  }
  // "alternate" breaks a tie by the source's coordinate parity: not invariant.
  if (even_ring && torus->config().tie_break == topo::TieBreak::kAlternate) return std::nullopt;

  // Keys: ICI links by (dimension, direction), a 2-chip line's two directions as one (the
  // translation by 1 maps 0 -> 1 onto 1 -> 0); on-chip links by (source, destination) core.
  const int64_t ici_keys = 2 * static_cast<int64_t>(ndims);
  std::vector<int32_t> id_of_key(static_cast<size_t>(ici_keys + cpc * cpc), -1);
  struct OrbitInfo {
    int64_t links = 0;
    double bandwidth = 0;
    int64_t latency_ps = 0;
  };
  std::vector<OrbitInfo> info;
  LinkOrbits out;
  const std::vector<topo::Link>& links = topology.links();
  out.orbit.resize(links.size());
  for (const topo::Link& link : links) {
    int64_t key = 0;
    if (link.kind == topo::LinkKind::kOnChip) {
      key = ici_keys + (link.src_core % cpc) * cpc + link.dst_core % cpc;
    } else {
      if (link.dim < 0) return std::nullopt;
      const size_t d = static_cast<size_t>(link.dim);
      key = 2 * link.dim + (grid.wraparound[d] && link.direction < 0 ? 1 : 0);
    }
    int32_t& id = id_of_key[static_cast<size_t>(key)];
    if (id < 0) {
      id = static_cast<int32_t>(info.size());
      info.push_back({0, link.bandwidth.value, link.latency.picos()});
    }
    OrbitInfo& o = info[static_cast<size_t>(id)];
    if (o.bandwidth != link.bandwidth.value || o.latency_ps != link.latency.picos()) return std::nullopt;
    ++o.links;
    out.orbit[static_cast<size_t>(link.id)] = id;
  }
  for (const OrbitInfo& o : info) {
    if (o.links != topology.num_chips()) return std::nullopt;
    out.capacity.push_back(o.bandwidth);
  }
  return out;
}

}  // namespace

bool TranslationSymmetric(const topo::Topology& topology) {
  return FindLinkOrbits(topology).has_value();
}

std::optional<std::vector<int32_t>> TranslationLinkOrbits(const topo::Topology& topology) {
  std::optional<LinkOrbits> orbits = FindLinkOrbits(topology);
  if (!orbits) return std::nullopt;
  return std::move(orbits->orbit);
}

std::optional<SymmetricFlowResult> SolveSymmetricFlow(const topo::Topology& topology,
                                                      const std::vector<RepresentativeTransfer>& reps,
                                                      Time start) {
  std::optional<LinkOrbits> orbits = FindLinkOrbits(topology);
  if (!orbits) return std::nullopt;
  SymmetricFlowResult out;
  out.done.resize(reps.size());
  for (size_t r = 0; r < reps.size(); ++r) out.done[r] = reps[r].start.value_or(start);

  // One class per (representative, path): weight 1, its links as orbit ids (a path crossing m
  // links of an orbit lists it m times, which the filler counts m times).
  PodVector<int32_t> data;
  PodVector<int64_t> begin;
  std::vector<int64_t> bytes;
  std::vector<int64_t> latency;
  std::vector<int64_t> starts;  // per class, ps
  std::vector<int32_t> owner;
  std::vector<topo::Topology::WeightedPath> paths;
  std::vector<int64_t> parts;
  for (size_t r = 0; r < reps.size(); ++r) {
    const RepresentativeTransfer& x = reps[r];
    if (x.src_core < 0 || x.src_core >= topology.cores_per_chip() || x.dst_core < 0 ||
        x.dst_core >= topology.num_cores() || x.bytes < 0) {
      throw Error("symmetric flow: representative " + std::to_string(r) + " (" +
                  std::to_string(x.src_core) + " -> " + std::to_string(x.dst_core) + ", " +
                  std::to_string(x.bytes) + " B) must start on chip 0 and end on a core of " +
                  topology.name());
    }
    if (x.src_core == x.dst_core) continue;
    const int64_t rep_start = x.start.value_or(start).picos();
    const size_t n = topology.RouteSplitInto(x.src_core, x.dst_core, paths);
    internal::SplitBytesInto(x.bytes, paths.data(), n, parts);
    for (size_t p = 0; p < n; ++p) {
      const std::vector<int64_t>& links = paths[p].links;
      const int64_t lat = internal::PathLatencyPs(topology, links);
      if (links.empty() || parts[p] == 0) {
        out.done[r] = std::max(out.done[r], Time::Picos(rep_start + lat));
        continue;
      }
      if (data.size() + links.size() + 2 > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        throw Error("symmetric flow: more than 2^31 path entries");
      }
      begin.push_back(static_cast<int64_t>(data.size()));
      data.push_back(1);
      data.push_back(static_cast<int32_t>(links.size()));
      for (int64_t l : links) data.push_back(orbits->orbit[static_cast<size_t>(l)]);
      bytes.push_back(parts[p]);
      starts.push_back(rep_start);
      latency.push_back(lat);
      owner.push_back(static_cast<int32_t>(r));
    }
  }
  const size_t num_classes = bytes.size();
  out.classes = static_cast<int64_t>(num_classes);
  const size_t num_orbits = orbits->capacity.size();
  const internal::ClassPaths class_paths{data.data(), begin.data()};
  const auto class_links = [&](size_t c) {
    const int32_t* record = data.data() + begin[c];
    return std::pair<const int32_t*, const int32_t*>{record + 2, record + 2 + record[1]};
  };
  const double fastest = *std::max_element(orbits->capacity.begin(), orbits->capacity.end());

  // The flow model's event loop (sim/network/flow_network.cc) on the classes: one start batch,
  // then at each end the classes at or above the lowest ending rate are refilled from the
  // highest rate kept.
  internal::MaxMinFiller filler(static_cast<int32_t>(num_orbits));
  std::vector<double> rate(num_classes, 0.0);
  std::vector<double> remaining(bytes.begin(), bytes.end());
  std::vector<int64_t> updated(starts);
  std::vector<int64_t> end(num_classes, 0);
  std::vector<char> active(num_classes, 0);
  std::vector<double> used(num_orbits, 0.0);
  std::vector<double> orbit_bytes(num_orbits, 0.0);
  size_t active_count = 0;
  // Classes not yet started, latest first (popped from the back).
  std::vector<int32_t> pending(num_classes);
  for (size_t c = 0; c < num_classes; ++c) pending[c] = static_cast<int32_t>(c);
  std::stable_sort(pending.begin(), pending.end(), [&](int32_t a, int32_t b) {
    return starts[static_cast<size_t>(a)] > starts[static_cast<size_t>(b)];
  });
  using Entry = std::pair<int64_t, int32_t>;  // (end ps, class)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ends;
  PodVector<int32_t> fill_set;
  PodVector<int32_t> order;

  const auto refill = [&](int64_t t, double base) {
    const bool all = fill_set.size() == active_count;
    if (all) std::fill(used.begin(), used.end(), 0.0);
    for (int32_t c : fill_set) {
      const size_t k = static_cast<size_t>(c);
      remaining[k] = std::max(0.0, remaining[k] - rate[k] * (static_cast<double>(t - updated[k]) / kPsPerSecond));
      updated[k] = t;
      if (!all) {
        for (auto [l, e] = class_links(k); l != e; ++l) used[static_cast<size_t>(*l)] -= rate[k];
      }
    }
    order.clear();
    filler.Fill(fill_set, class_paths, orbits->capacity, used, all ? 0.0 : base, rate.data(), order);
    return all;
  };
  const auto schedule_ends = [&](int64_t t) {
    for (int32_t c : fill_set) {
      const size_t k = static_cast<size_t>(c);
      const double ps = internal::FlowDurationPs(remaining[k], rate[k]);
      if (ps >= internal::kFarFuturePs && rate[k] > 0) internal::CheckFlowClockRange(t, remaining[k], fastest);
      end[k] = internal::FlowEndPs(t, ps);
      ends.push({end[k], c});
    }
  };
  const auto refill_all = [&](int64_t t) {
    fill_set.clear();
    for (size_t c = 0; c < num_classes; ++c) {
      if (active[c]) fill_set.push_back(static_cast<int32_t>(c));
    }
    refill(t, 0.0);
    schedule_ends(t);
  };
  // A start is an event like an end: the classes that start join, and every rate is refilled.
  // Classes ending at the start's time leave first (as in the flow model and the schedule
  // executor: ends, then starts).
  const auto start_due = [&](int64_t t) {
    while (!pending.empty() && starts[static_cast<size_t>(pending.back())] == t) {
      active[static_cast<size_t>(pending.back())] = 1;
      ++active_count;
      pending.pop_back();
    }
    refill_all(t);
  };

  while (active_count > 0 || !pending.empty()) {
    while (!ends.empty() && (!active[static_cast<size_t>(ends.top().second)] ||
                             ends.top().first != end[static_cast<size_t>(ends.top().second)])) {
      ends.pop();
    }
    if (!pending.empty() &&
        (ends.empty() || starts[static_cast<size_t>(pending.back())] < ends.top().first)) {
      start_due(starts[static_cast<size_t>(pending.back())]);
      continue;
    }
    const int64_t t = ends.top().first;
    double lowest = std::numeric_limits<double>::infinity();
    while (!ends.empty() && ends.top().first == t) {
      const size_t k = static_cast<size_t>(ends.top().second);
      ends.pop();
      if (!active[k] || end[k] != t) continue;
      active[k] = 0;
      --active_count;
      lowest = std::min(lowest, rate[k]);
      for (auto [l, e] = class_links(k); l != e; ++l) {
        used[static_cast<size_t>(*l)] -= rate[k];
        orbit_bytes[static_cast<size_t>(*l)] += static_cast<double>(bytes[k]);
      }
      Time& done = out.done[static_cast<size_t>(owner[k])];
      done = std::max(done, Time::Picos(t + latency[k]));
    }
    if (active_count == 0) continue;
    // Rates below the lowest ending one are unchanged (progressive filling); refill the rest.
    const double cut = lowest * (1 - kLevelTolerance);
    fill_set.clear();
    double base = 0;
    for (size_t c = 0; c < num_classes; ++c) {
      if (!active[c]) continue;
      if (rate[c] >= cut) fill_set.push_back(static_cast<int32_t>(c));
      else base = std::max(base, rate[c]);
    }
    if (fill_set.empty()) continue;
    const bool all = refill(t, base);
    bool starved = false;
    for (int32_t c : fill_set) starved |= !(rate[static_cast<size_t>(c)] > 0);
    if (starved && !all) {
      // Rounding left a refilled class no capacity (impossible in exact arithmetic).
      refill_all(t);
    } else {
      schedule_ends(t);
    }
  }

  out.link_bytes.resize(orbits->orbit.size());
  for (size_t l = 0; l < orbits->orbit.size(); ++l) {
    out.link_bytes[l] = orbit_bytes[static_cast<size_t>(orbits->orbit[l])];
  }
  return out;
}

}  // namespace podsim::sim
