#pragma once
// Closed-form time estimates of the collective algorithms, independent of the schedules and the
// network models: a cross-check for both. Inputs are the group's axes (size, wraparound, link
// bandwidth and hop latency), not a schedule.
//
// Notation: G members, S = per-partition input bytes, B = link bandwidth per direction, a = hop
// latency. D = bytes each member reduce-scatters or gathers: S (all-reduce, reduce-scatter) or
// G * S (all-gather, its output).
//
// EstimateAlphaBeta, per algorithm (no contention beyond what the algorithm itself causes):
//  ring        steps * D / (G * B) + the hop latencies along one piece's chain of steps hops:
//              steps = G - 1 (2(G - 1) for all-reduce), B of the slowest axis; with c cores per
//              chip (visited consecutively) a fraction 1/c of the hops are chip hops, the rest on
//              chip. The ring is a cycle of neighbours (group_geometry.h) except on a single line
//              axis of s chips: there the chain crosses the closing hop (s - 1 hops) once per
//              phase, adding s - 2 hop latencies per phase. Exact in the flow model for single-
//              core rings; with cores an upper estimate (steps do not all run at the slowest
//              link's pace; the flow model finds up to ~10% less).
//  ring-bidir  the same with D / (2 G B) when the reverse ring uses other links (a cycle of
//              neighbours of > 2 members, or 2 members joined by two links each way); on a line
//              both rings share the closing path: no gain counted (an upper estimate: the flow
//              model finds up to ~10% less, as the rings' steps drift apart).
//  torus       sum over reduce-scatter phases t (axes in phase order, D_0 = D, D_t+1 = D_t / s_t)
//              of (s_t - 1) * (a_t + D_t / (s_t * B_eff_t)) [+ (s_t - 2) * a_t on a line of > 2],
//              B_eff = B, times 2 on a wrapped axis (bidirectional ring) or a core axis of > 2
//              cores, divided by c on a chip axis (each chip's c cores run parallel lines over
//              the same links). With R >= 2 chip axes the data is cut into R rotations (D / R
//              each, the chip axes of the phase order rotated cyclically) that run at once (their
//              core phases share the on-chip links: 1 / R of B each); each rotation's share of D
//              is proportional to its speed (TorusRotationShares), so their bandwidth terms are
//              equal, D / sum_r (1 / T_r) with T_r rotation r's seconds per byte, and the largest
//              latency term adds. All-reduce adds the same again for the all-gather phases.
//              Exact in the flow model on square single-core tori.
//  direct      every pair at once, routed dimension by dimension: the busiest link of chip axis
//              i carries load_i * G^2 / (s_i * C) messages (C chips in the box), load_i = the
//              busiest link's share of an all-to-all among s_i positions: on a ring with ties
//              split, sum_{d < s/2} d (+ s/4 for even s); on a line floor(s/2) * ceil(s/2).
//              The core axis: one message per on-chip link. Time = max over axes of bytes / B +
//              a * (sum of the axes' largest hop distances). Message: S / G (all-to-all,
//              reduce-scatter), S (all-gather); all-reduce = two S / G rounds.
//  dim-staged  sum over axes of load_i * c * (S / s_i) / B_i + a * (largest hop distance), c =
//              cores per chip in the box (c partitions share a chip's links); the core stage
//              moves S / c over each on-chip link.
// EstimateScalingBook (How to Scale Your Model; ideal bidirectional algorithms, W = 2B per axis,
// T_min = a, V = bytes of the whole array): all-gather max(T_min * sum|X_i| / 2, V / sum W_i)
// with V = G * S (the gathered array); reduce-scatter the same with V = S (the unreduced array
// each member holds); all-reduce = 2 x reduce-scatter; all-to-all = all-gather / 4 (V = G * S);
// doubled when some axis has no wraparound. Algorithm-independent.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/collectives/collective.h"
#include "topologies/topology.h"

namespace podsim::sim {

// One axis of a box group, for the closed forms.
struct AnalyticAxis {
  int64_t size = 1;             // members along the axis, >= 1
  bool wraparound = false;      // a whole ring of the grid with wraparound links
  bool core_axis = false;       // the cores of one chip (joined by on-chip links, one per pair)
  double bandwidth = 1e11;      // bytes/s per link per direction, > 0
  double hop_latency_s = 1e-6;  // seconds per hop, >= 0
};

struct AnalyticInput {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string algorithm = "ring-bidir";  // "ring", "ring-bidir", "torus", "direct", "dim-staged"
  std::vector<AnalyticAxis> axes;  // the group's axes; for "torus" in reduce-scatter phase order
  // "torus" on a twisted torus: each rotation's axes in its phase order (each runs along its own
  // twisted walk: torus_algorithms.cc); empty: the chip axes of `axes` rotated.
  std::vector<std::vector<AnalyticAxis>> rotations;
  double bytes = 0;                // S: per-partition input bytes
  double fixed_overhead_s = 0;     // added to the total
};

struct AnalyticEstimate {
  double seconds = 0;      // total: latency + bandwidth + overhead
  double latency_s = 0;    // hop-latency part
  double bandwidth_s = 0;  // bytes / bandwidth part
  std::string formula;     // the formula with its numbers, for reports
};

// Alpha-beta estimate of input.algorithm (see the file comment). Throws podsim::Error for an
// algorithm without a closed form for the kind, or bad axes.
AnalyticEstimate EstimateAlphaBeta(const AnalyticInput& input);
// The scaling-book formula for input.kind (input.algorithm is ignored).
AnalyticEstimate EstimateScalingBook(const AnalyticInput& input);

// Axes of the spec's first replica group on `topology` (a box of a grid; bandwidth and latency
// from the links along each axis), ordered like the algorithm's phases: torus all-reduce: the
// core axis then chip dims largest first (equal sizes: last to first); torus reduce-scatter / all-gather: the core axis then
// chip dims first to last; otherwise chip dims first to last, then the core axis. A group that is not a box is one axis of its size (wraparound when its ring order is a
// cycle of neighbours), with the slowest link's figures. Throws podsim::Error for a bad spec.
AnalyticInput AnalyticInputFor(const CollectiveSpec& spec, const topo::Topology& topology,
                               const std::string& algorithm);

struct BoxGroup;
// The closed-form axes of a box group, in the box's axis order (cores first, then chip dims).
std::vector<AnalyticAxis> BoxAxes(const topo::Topology& topology, const BoxGroup& box);

// Shares of the data the torus algorithm gives its rotations (each given as its axes in phase
// order; on a twisted torus each sees the group along its own twisted walk: group_geometry.h's
// TwistedView): proportional to each rotation's speed (bytes per second of its bandwidth
// terms), so that all rotations finish together. On a torus with equal axes the shares are
// equal; a rotation that starts on a line (half a ring's bandwidth) gets less.
std::vector<double> TorusRotationShares(const std::vector<std::vector<AnalyticAxis>>& rotations);

}  // namespace podsim::sim
