#include "sim/collectives/closed_form.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/format.h"
#include "sim/collectives/algorithms_internal.h"
#include "sim/collectives/group_geometry.h"

namespace podsim::sim {
namespace {

void CheckAxes(const AnalyticInput& in) {
  for (size_t i = 0; i < in.axes.size(); ++i) {
    const AnalyticAxis& a = in.axes[i];
    const std::string field = "axes[" + std::to_string(i) + "]";
    if (a.size < 1) throw Error(field + ".size: must be >= 1, got " + std::to_string(a.size));
    if (!(a.bandwidth > 0)) throw Error(field + ".bandwidth: must be > 0, got " + FormatG(a.bandwidth));
    if (a.hop_latency_s < 0)
      throw Error(field + ".hop_latency_s: must be >= 0, got " + FormatG(a.hop_latency_s));
  }
  if (in.bytes < 0) throw Error("bytes: must be >= 0, got " + FormatG(in.bytes));
}

double GroupSize(const AnalyticInput& in) {
  double g = 1;
  for (const AnalyticAxis& a : in.axes) g *= static_cast<double>(a.size);
  return g;
}

// Bytes each member reduce-scatters or gathers (D in the header).
double DataPerMember(const AnalyticInput& in) {
  return in.kind == CollectiveKind::kAllGather ? GroupSize(in) * in.bytes : in.bytes;
}

// Busiest link's share of an all-to-all among s positions of one axis (see the header).
double AxisLoad(const AnalyticAxis& a) {
  const int64_t s = a.size;
  if (a.core_axis) return 1.0;
  if (!a.wraparound) return static_cast<double>((s / 2) * ((s + 1) / 2));
  double load = 0;
  for (int64_t d = 1; 2 * d < s; ++d) load += static_cast<double>(d);
  if (s % 2 == 0) load += static_cast<double>(s) / 4.0;
  return load;
}

// Largest hop distance along the axis.
int64_t AxisDiameter(const AnalyticAxis& a) {
  if (a.core_axis) return a.size > 1 ? 1 : 0;
  return a.wraparound ? a.size / 2 : a.size - 1;
}

AnalyticEstimate Ring(const AnalyticInput& in, bool bidirectional) {
  const double g = GroupSize(in);
  if (g < 2) return {};
  double bandwidth = 0, chip_latency = 0, core_latency = 0;
  int chip_axes = 0;
  int64_t cores = 1, line_size = 0;
  bool line_wraps = false;
  for (const AnalyticAxis& a : in.axes) {
    if (a.size < 2) continue;
    bandwidth = bandwidth == 0 ? a.bandwidth : std::min(bandwidth, a.bandwidth);
    if (a.core_axis) {
      cores = a.size;
      core_latency = a.hop_latency_s;
      continue;
    }
    chip_latency = std::max(chip_latency, a.hop_latency_s);
    ++chip_axes;
    line_size = a.size;
    line_wraps = a.wraparound;
  }
  // The ring order of group_geometry.h: with >= 2 chip axes a cycle of neighbours (exact when
  // one axis is even); with one chip axis, a cycle when it wraps or has 2 chips, else its
  // closing hop runs back s - 1 hops. The reverse ring uses other links when the forward one
  // uses each link pair in one direction only.
  bool single_hops = true, reverse_helps = true;
  if (chip_axes == 0) {
    reverse_helps = cores > 2;
  } else if (chip_axes == 1) {
    single_hops = line_wraps || line_size == 2;
    reverse_helps = line_wraps;
  }
  const double phases = in.kind == CollectiveKind::kAllReduce ? 2.0 : 1.0;
  const double steps = phases * (g - 1);
  // Latency along one piece's chain of G-1 hops per phase: a fraction 1/c of them between chips
  // (c cores per chip, visited consecutively), the rest on chip; on a line the chain crosses the
  // closing hop (s - 1 hops) once per phase.
  const double c = static_cast<double>(cores);
  const double chip_hops = chip_axes == 0 ? 0.0 : steps / c;
  const double core_hops = steps - chip_hops;
  const double extra_hops = single_hops ? 0.0 : phases * static_cast<double>(line_size - 2);
  const double per_step_bytes =
      DataPerMember(in) / (g * ((bidirectional && reverse_helps) ? 2.0 : 1.0));
  AnalyticEstimate e;
  e.latency_s = (chip_hops + extra_hops) * chip_latency + core_hops * core_latency;
  e.bandwidth_s = steps * per_step_bytes / bandwidth;
  e.formula = FormatG(steps) + " steps x " + FormatG(per_step_bytes) + " B / " + FormatG(bandwidth) +
              " B/s + " + FormatG(chip_hops + extra_hops) + " chip hops x " + FormatG(chip_latency) +
              " s + " + FormatG(core_hops) + " on-chip hops x " + FormatG(core_latency) + " s";
  return e;
}

// One rotation of the torus algorithm: `axes` in its phase order, `data` its part of D.
// The core axis keeps its place in every rotation, so the R rotations' core phases run at once
// over the same on-chip links: each gets 1 / R of their bandwidth.
AnalyticEstimate TorusRotation(const std::vector<AnalyticAxis>& axes, double data, double cores,
                               double rotations) {
  AnalyticEstimate e;
  for (const AnalyticAxis& a : axes) {
    if (a.size < 2) continue;
    const double s = static_cast<double>(a.size);
    const bool two_ways = a.wraparound || (a.core_axis && a.size > 2);
    const double bandwidth =
        a.bandwidth * (two_ways ? 2.0 : 1.0) / (a.core_axis ? rotations : cores);
    // On a line of > 2 members each piece crosses the closing hop (s - 1 hops) once per phase.
    const double extra_hops = (a.wraparound || a.core_axis || a.size <= 2) ? 0.0 : s - 2;
    e.latency_s += (s - 1 + extra_hops) * a.hop_latency_s;
    e.bandwidth_s += (s - 1) * data / (s * bandwidth);
    e.formula += (e.formula.empty() ? "" : " + ") + FormatG(s - 1) + " x (" + FormatG(a.hop_latency_s) +
                 " s + " + FormatG(data / s) + " B / " + FormatG(bandwidth) + " B/s)" +
                 (extra_hops > 0 ? " + " + FormatG(extra_hops) + " closing-hop latencies" : "");
    data /= s;
  }
  return e;
}

double CoresOf(const std::vector<AnalyticAxis>& axes) {
  for (const AnalyticAxis& a : axes) {
    if (a.core_axis) return static_cast<double>(a.size);
  }
  return 1;  // the cores of one chip run parallel lines over the same chip links
}

AnalyticEstimate Torus(const AnalyticInput& in) {
  std::vector<size_t> chip_positions;  // positions of the chip axes (size >= 2) in phase order
  for (size_t t = 0; t < in.axes.size(); ++t) {
    if (!in.axes[t].core_axis && in.axes[t].size >= 2) chip_positions.push_back(t);
  }
  // R rotations, the chip axes rotated (torus_algorithms.cc), running at once on different
  // axes, each with a share of D proportional to its speed. On a twisted torus they come given,
  // each along its own twisted walk.
  std::vector<std::vector<AnalyticAxis>> in_order = in.rotations;
  if (in_order.empty()) {
    const size_t count = std::max<size_t>(1, chip_positions.size());
    for (size_t r = 0; r < count; ++r) {
      std::vector<size_t> order(in.axes.size());
      for (size_t t = 0; t < order.size(); ++t) order[t] = t;
      for (size_t i = 0; i < chip_positions.size(); ++i) {
        order[chip_positions[i]] = chip_positions[(i + r) % chip_positions.size()];
      }
      in_order.emplace_back();
      for (size_t t : order) in_order.back().push_back(in.axes[t]);
    }
  }
  const size_t rotations = in_order.size();
  const std::vector<double> shares = TorusRotationShares(in_order);
  AnalyticEstimate e;
  for (size_t r = 0; r < rotations; ++r) {
    AnalyticEstimate one = TorusRotation(in_order[r], DataPerMember(in) * shares[r],
                                         CoresOf(in.axes), static_cast<double>(rotations));
    if (r == 0 || one.latency_s + one.bandwidth_s > e.latency_s + e.bandwidth_s) e = one;
  }
  if (rotations > 1) {
    e.formula = "slowest of " + std::to_string(rotations) +
                " rotations, each with a share of D proportional to its speed: " + e.formula;
  }
  if (in.kind == CollectiveKind::kAllReduce) {
    e.latency_s *= 2;
    e.bandwidth_s *= 2;
    e.formula = "2 x [" + e.formula + "]";
  }
  return e;
}

AnalyticEstimate Direct(const AnalyticInput& in) {
  const double g = GroupSize(in);
  double chips = 1;
  for (const AnalyticAxis& a : in.axes) {
    if (!a.core_axis) chips *= static_cast<double>(a.size);
  }
  double message = in.bytes / g;
  double rounds = 1;
  if (in.kind == CollectiveKind::kAllGather) message = in.bytes;
  if (in.kind == CollectiveKind::kAllReduce) rounds = 2;
  AnalyticEstimate e;
  double worst = 0;
  int64_t hops = 0;
  for (const AnalyticAxis& a : in.axes) {
    if (a.size < 2) continue;
    const double messages =
        a.core_axis ? 1.0 : AxisLoad(a) * g * g / (static_cast<double>(a.size) * chips);
    worst = std::max(worst, messages * message / a.bandwidth);
    hops += AxisDiameter(a);
    e.latency_s = std::max(e.latency_s, a.hop_latency_s);
  }
  e.latency_s *= static_cast<double>(hops) * rounds;
  e.bandwidth_s = worst * rounds;
  e.formula = FormatG(rounds) + " round(s) x (busiest link " + FormatG(worst) + " s + " +
              std::to_string(hops) + " hops of latency)";
  return e;
}

AnalyticEstimate Staged(const AnalyticInput& in) {
  double cores = 1;
  for (const AnalyticAxis& a : in.axes) {
    if (a.core_axis) cores = static_cast<double>(a.size);
  }
  AnalyticEstimate e;
  for (const AnalyticAxis& a : in.axes) {
    if (a.size < 2) continue;
    const double s = static_cast<double>(a.size);
    const double bytes = a.core_axis ? in.bytes / s : AxisLoad(a) * cores * in.bytes / s;
    e.bandwidth_s += bytes / a.bandwidth;
    e.latency_s += static_cast<double>(AxisDiameter(a)) * a.hop_latency_s;
    e.formula +=
        (e.formula.empty() ? "" : " + ") + FormatG(bytes) + " B / " + FormatG(a.bandwidth) + " B/s";
  }
  return e;
}

}  // namespace

AnalyticEstimate EstimateAlphaBeta(const AnalyticInput& in) {
  CheckAxes(in);
  if (in.axes.empty()) throw Error("axes: at least one axis is needed");
  const bool a2a = in.kind == CollectiveKind::kAllToAll;
  const bool permute = in.kind == CollectiveKind::kCollectivePermute;
  AnalyticEstimate e;
  if (permute) {
    throw Error("kind: collective-permute has no closed form here (it depends on the pairs)");
  } else if (in.algorithm == "direct") {
    e = Direct(in);
  } else if (in.algorithm == "dim-staged" && a2a) {
    e = Staged(in);
  } else if (in.algorithm == "torus" && !a2a) {
    e = Torus(in);
  } else if ((in.algorithm == "ring" || in.algorithm == "ring-bidir") && !a2a) {
    e = Ring(in, in.algorithm == "ring-bidir");
  } else {
    throw Error("algorithm: no closed form for '" + in.algorithm + "' on " +
                CollectiveKindName(in.kind));
  }
  e.seconds = e.latency_s + e.bandwidth_s + in.fixed_overhead_s;
  return e;
}

AnalyticEstimate EstimateScalingBook(const AnalyticInput& in) {
  CheckAxes(in);
  if (in.kind == CollectiveKind::kCollectivePermute) {
    throw Error("kind: the scaling book gives no formula for collective-permute");
  }
  const double g = GroupSize(in);
  double hops = 0, w = 0, t_min = 0;
  bool all_wrap = true;
  for (const AnalyticAxis& a : in.axes) {
    if (a.size < 2) continue;
    hops += static_cast<double>(a.size);
    w += 2 * a.bandwidth;
    t_min = std::max(t_min, a.hop_latency_s);
    all_wrap &= a.wraparound || a.core_axis;
  }
  AnalyticEstimate e;
  if (w == 0) {
    e.seconds = in.fixed_overhead_s;
    e.formula = "a single member";
    return e;
  }
  const double v = (in.kind == CollectiveKind::kAllGather || in.kind == CollectiveKind::kAllToAll)
                       ? g * in.bytes
                       : in.bytes;
  double factor = in.kind == CollectiveKind::kAllReduce ? 2.0 : 1.0;
  if (in.kind == CollectiveKind::kAllToAll) factor = 0.25;
  if (!all_wrap) factor *= 2;
  e.latency_s = factor * t_min * hops / 2;
  e.bandwidth_s = factor * v / w;
  e.seconds = std::max(e.latency_s, e.bandwidth_s) + in.fixed_overhead_s;
  e.formula = FormatG(factor) + " x max(" + FormatG(t_min) + " s x " + FormatG(hops) + " / 2, " + FormatG(v) +
              " B / " + FormatG(w) + " B/s)";
  return e;
}

std::vector<double> TorusRotationShares(const std::vector<std::vector<AnalyticAxis>>& rotations) {
  std::vector<double> speed(rotations.size());
  double total = 0;
  for (size_t r = 0; r < rotations.size(); ++r) {
    const double seconds_per_byte = TorusRotation(rotations[r], 1.0, CoresOf(rotations[r]),
                                                  static_cast<double>(rotations.size()))
                                        .bandwidth_s;
    speed[r] = seconds_per_byte > 0 ? 1.0 / seconds_per_byte : 1.0;
    total += speed[r];
  }
  for (double& s : speed) s /= total;
  return speed;
}

namespace {

// The first link of each grid dimension, the first on-chip link, and the slowest link.
struct LinkSamples {
  std::vector<const topo::Link*> along;
  const topo::Link* on_chip = nullptr;
  const topo::Link* slowest = nullptr;
};

LinkSamples SampleLinks(const topo::Topology& topology) {
  const topo::GridShape* grid = topology.grid();
  const size_t ndims = grid == nullptr ? 0 : grid->dims.size();
  LinkSamples s;
  s.along.assign(ndims, nullptr);
  for (const topo::Link& l : topology.links()) {
    if (l.kind == topo::LinkKind::kOnChip) {
      if (s.on_chip == nullptr) s.on_chip = &l;
    } else if (l.dim >= 0 && static_cast<size_t>(l.dim) < ndims &&
               s.along[static_cast<size_t>(l.dim)] == nullptr) {
      s.along[static_cast<size_t>(l.dim)] = &l;
    }
    if (s.slowest == nullptr || l.bandwidth.value < s.slowest->bandwidth.value) s.slowest = &l;
  }
  return s;
}

std::vector<AnalyticAxis> AxesOfBox(const topo::GridShape& grid, const LinkSamples& links,
                                    const BoxGroup& box) {
  std::vector<AnalyticAxis> axes;
  for (const GroupAxis& g : box.axes) {
    AnalyticAxis a;
    a.size = g.size;
    a.core_axis = g.dim < 0;
    a.wraparound =
        g.dim >= 0 && g.closed && (g.size > 2 || grid.wraparound[static_cast<size_t>(g.dim)]);
    const topo::Link* l = a.core_axis ? links.on_chip : links.along[static_cast<size_t>(g.dim)];
    if (l != nullptr) {
      a.bandwidth = l->bandwidth.value;
      a.hop_latency_s = l->latency.seconds();
    }
    axes.push_back(a);
  }
  return axes;
}

}  // namespace

std::vector<AnalyticAxis> BoxAxes(const topo::Topology& topology, const BoxGroup& box) {
  return AxesOfBox(*topology.grid(), SampleLinks(topology), box);
}

AnalyticInput AnalyticInputFor(const CollectiveSpec& spec, const topo::Topology& topology,
                               const std::string& algorithm) {
  const auto groups = ResolveReplicaGroups(spec, topology.num_cores());
  if (groups.empty()) throw Error("kind: collective-permute has no closed form here");
  AnalyticInput in;
  in.kind = spec.kind;
  in.algorithm = algorithm;
  in.bytes = static_cast<double>(spec.elements * spec.element_bytes);
  const LinkSamples links = SampleLinks(topology);
  const std::optional<BoxGroup> box = AnalyzeBox(topology, groups.front());
  if (!box) {
    AnalyticAxis axis;
    axis.size = static_cast<int64_t>(groups.front().size());
    axis.wraparound = ChooseRingOrder(topology, groups.front()).single_hops;
    if (links.slowest != nullptr) {
      axis.bandwidth = links.slowest->bandwidth.value;
      axis.hop_latency_s = links.slowest->latency.seconds();
    }
    in.axes.push_back(axis);
    return in;
  }
  in.axes = AxesOfBox(*topology.grid(), links, *box);
  // box axes: cores first, then dims ascending.
  const bool has_cores = !in.axes.empty() && in.axes.front().core_axis;
  if (algorithm == "torus" && spec.kind == CollectiveKind::kAllReduce) {
    // As torus_algorithms.cc: chip dims largest first, equal sizes last dim first.
    std::reverse(in.axes.begin() + (has_cores ? 1 : 0), in.axes.end());
    std::stable_sort(in.axes.begin() + (has_cores ? 1 : 0), in.axes.end(),
                     [](const AnalyticAxis& a, const AnalyticAxis& b) {
                       if (a.size != b.size) return a.size > b.size;
                       return a.wraparound && !b.wraparound;
                     });
  } else if (has_cores && algorithm != "torus") {
    std::rotate(in.axes.begin(), in.axes.begin() + 1, in.axes.end());
  }
  if (algorithm == "torus" && topology.grid()->AnyTwist()) {
    const internal::TorusRotations plan = internal::PlanTorusRotations(topology, *box, spec.kind);
    if (plan.twisted()) in.rotations = plan.Axes(topology);
  }
  return in;
}

}  // namespace podsim::sim
