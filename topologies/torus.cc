#include "topologies/torus.h"

#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/config.h"
#include "topologies/describe.h"
#include "topologies/on_chip_links.h"
#include "topologies/shortest_paths.h"

namespace podsim::topo {

TorusTopology::TorusTopology(TopologyConfig config) : config_(std::move(config)) {
  if (!config_.is_grid()) {
    FailAt("topology.kind",
           "a torus topology needs kind \"torus\" or \"mesh\", got \"" + config_.kind + "\"");
  }
  config_.Validate("topology");
  config_.wraparound = config_.ResolvedWraparound();
  name_ = config_.ResolvedName();
  grid_.dims = config_.dims;
  grid_.wraparound = config_.wraparound;
  if (config_.twist) {
    grid_.twist_dim = static_cast<int>(config_.twist->dim);
    grid_.twist_offsets = config_.twist->offsets;
  }
  ndims_ = static_cast<int>(grid_.dims.size());
  strides_.assign(ndims_, 1);
  for (int d = ndims_ - 1; d > 0; --d) strides_[d - 1] = strides_[d] * grid_.dims[d];
  num_chips_ = strides_[0] * grid_.dims[0];
  num_cores_ = num_chips_ * config_.cores_per_chip;
  coords_.resize(num_chips_ * ndims_);
  for (int64_t chip = 0; chip < num_chips_; ++chip) {
    for (int d = 0; d < ndims_; ++d) {
      coords_[chip * ndims_ + d] = static_cast<int32_t>((chip / strides_[d]) % grid_.dims[d]);
    }
  }
  BuildLinks();
  if (twisted()) {
    router_ = std::make_unique<ShortestPathRouter>(num_chips_, links_, RouteMetric::kHops);
  }
}

TorusTopology::~TorusTopology() = default;

void TorusTopology::BuildLinks() {
  const double bandwidth = config_.link_bandwidth * static_cast<double>(config_.links_per_neighbor);
  const int64_t latency_ps = MicrosToPs(config_.hop_latency_us);
  neighbor_link_.assign(num_chips_ * ndims_ * 2, -1);
  links_.reserve(num_chips_ * ndims_ * 2);
  std::vector<int64_t> coords;
  for (int64_t chip = 0; chip < num_chips_; ++chip) {
    coords = ChipCoords(chip);
    for (int d = 0; d < ndims_; ++d) {
      const int64_t n = grid_.dims[d];
      if (n == 1) continue;
      for (int direction : {+1, -1}) {
        int64_t next = coords[d] + direction;
        const bool crosses_wrap = next == n || next == -1;
        if (crosses_wrap && !grid_.wraparound[d]) continue;
        next = (next + n) % n;
        int64_t dst = chip + (next - coords[d]) * strides_[d];
        if (crosses_wrap && d == grid_.twist_dim) {
          for (int e = 0; e < ndims_; ++e) {
            if (e == d) continue;
            const int64_t m = grid_.dims[e];
            const int64_t shifted = ((coords[e] + direction * grid_.twist_offsets[e]) % m + m) % m;
            dst += (shifted - coords[e]) * strides_[e];
          }
        }
        const Link l{.id = static_cast<int64_t>(links_.size()),
                     .src_chip = chip,
                     .dst_chip = dst,
                     .bandwidth = BytesPerSecond{bandwidth},
                     .latency = Time::Picos(latency_ps),
                     .dim = d,
                     .direction = direction,
                     .parallel_links = static_cast<int>(config_.links_per_neighbor)};
        neighbor_link_[(chip * ndims_ + d) * 2 + (direction < 0)] = static_cast<int32_t>(l.id);
        links_.push_back(l);
      }
    }
  }
  first_on_chip_link_ = static_cast<int64_t>(links_.size());
  AppendOnChipLinks(num_chips_, config_.cores_per_chip, config_.on_chip_bandwidth,
                    MicrosToPs(config_.on_chip_latency_us), links_);
}

int64_t TorusTopology::NeighborLink(int64_t chip, int dim, int direction) const {
  if (chip < 0 || chip >= num_chips_ || dim < 0 || dim >= ndims_) return -1;
  return neighbor_link_[(chip * ndims_ + dim) * 2 + (direction < 0)];
}

void TorusTopology::CheckCore(int64_t core) const {
  if (core < 0 || core >= num_cores_) {
    throw std::out_of_range("core " + std::to_string(core) + " is not in [0, " +
                            std::to_string(num_cores()) + ") on topology " + name_);
  }
}

int64_t TorusTopology::PlanLegs(int64_t src_chip, int64_t dst_chip, int64_t src_local,
                                Leg* legs) const {
  int64_t total = 0;
  for (int d = 0; d < ndims_; ++d) {
    const int64_t n = grid_.dims[d];
    const int64_t s = coords_[src_chip * ndims_ + d];
    const int64_t t = coords_[dst_chip * ndims_ + d];
    Leg& leg = legs[d];
    leg = Leg{};
    if (s == t) continue;
    if (!grid_.wraparound[d]) {
      leg.steps = t > s ? t - s : s - t;
      leg.direction = t > s ? +1 : -1;
    } else {
      const int64_t forward = (t - s + n) % n;
      const int64_t backward = n - forward;
      if (forward != backward) {
        leg.steps = forward < backward ? forward : backward;
        leg.direction = forward < backward ? +1 : -1;
      } else {
        leg.steps = forward;
        leg.tie = true;
        leg.direction =
            config_.tie_break == TieBreak::kAlternate && (s + src_local) % 2 != 0 ? -1 : +1;
      }
    }
    total += leg.steps;
  }
  return total;
}

void TorusTopology::WriteLegs(int64_t src_chip, const Leg* legs, uint32_t flip,
                              int64_t* out) const {
  int64_t cur = src_chip;
  for (int d = 0; d < ndims_; ++d) {
    const Leg& leg = legs[d];
    if (leg.steps == 0) continue;
    const int direction = (flip >> d) & 1u ? -leg.direction : leg.direction;
    const int64_t n = grid_.dims[d];
    const int64_t stride = strides_[d];
    // Moving one step changes the chip index by +-stride, or by -+(n-1)*stride at the wrap.
    const int64_t step = direction * stride;
    const int64_t wrap_step = -direction * (n - 1) * stride;
    const int64_t last = direction > 0 ? n - 1 : 0;  // the coordinate whose next step wraps
    const int dir_bit = direction < 0;
    int64_t c = coords_[cur * ndims_ + d];
    for (int64_t k = 0; k < leg.steps; ++k) {
      *out++ = neighbor_link_[(cur * ndims_ + d) * 2 + dir_bit];
      if (c == last) {
        cur += wrap_step;
        c = n - 1 - last;
      } else {
        cur += step;
        c += direction;
      }
    }
  }
}

std::vector<int64_t> TorusTopology::Route(int64_t src_core, int64_t dst_core) const {
  std::vector<int64_t> route;
  AppendRoute(src_core, dst_core, route);
  return route;
}

void TorusTopology::AppendRoute(int64_t src_core, int64_t dst_core,
                                std::vector<int64_t>& out) const {
  CheckCore(src_core);
  CheckCore(dst_core);
  if (src_core == dst_core) return;
  const int64_t cpc = config_.cores_per_chip;
  const int64_t src_chip = src_core / cpc;
  const int64_t dst_chip = dst_core / cpc;
  if (src_chip == dst_chip) {
    out.push_back(OnChipLinkId(first_on_chip_link_, cpc, src_core, dst_core));
    return;
  }
  if (router_) {
    const std::vector<int64_t> route = router_->Route(src_chip, dst_chip);
    out.insert(out.end(), route.begin(), route.end());
    return;
  }
  Leg legs[kMaxDims];
  const size_t start = out.size();
  out.resize(start + PlanLegs(src_chip, dst_chip, src_core % cpc, legs));
  WriteLegs(src_chip, legs, 0, out.data() + start);
}

std::vector<Topology::WeightedPath> TorusTopology::RouteSplit(int64_t src_core,
                                                              int64_t dst_core) const {
  const int64_t cpc = config_.cores_per_chip;
  if (config_.tie_break != TieBreak::kSplit || router_ || src_core / cpc == dst_core / cpc) {
    return {{Route(src_core, dst_core), 1.0}};
  }
  CheckCore(src_core);
  CheckCore(dst_core);
  const int64_t src_chip = src_core / cpc;
  Leg legs[kMaxDims];
  const int64_t hops = PlanLegs(src_chip, dst_core / cpc, src_core % cpc, legs);
  std::vector<int> tie_dims;
  for (int d = 0; d < ndims_; ++d) {
    if (legs[d].tie) tie_dims.push_back(d);
  }
  // Every combination of directions on the tied dimensions, all equally long: 2^k paths.
  const uint32_t combos = 1u << tie_dims.size();
  std::vector<WeightedPath> paths(combos);
  for (uint32_t m = 0; m < combos; ++m) {
    uint32_t flip = 0;
    for (size_t i = 0; i < tie_dims.size(); ++i) {
      if ((m >> i) & 1u) flip |= 1u << tie_dims[i];
    }
    paths[m].links.resize(hops);
    WriteLegs(src_chip, legs, flip, paths[m].links.data());
    paths[m].fraction = 1.0 / static_cast<double>(combos);
  }
  return paths;
}

size_t TorusTopology::RouteSplitInto(int64_t src_core, int64_t dst_core,
                                     std::vector<WeightedPath>& out) const {
  const int64_t cpc = config_.cores_per_chip;
  if (config_.tie_break != TieBreak::kSplit || router_ || src_core / cpc == dst_core / cpc) {
    if (out.empty()) out.resize(1);
    out[0].links.clear();
    AppendRoute(src_core, dst_core, out[0].links);
    out[0].fraction = 1.0;
    return 1;
  }
  CheckCore(src_core);
  CheckCore(dst_core);
  const int64_t src_chip = src_core / cpc;
  Leg legs[kMaxDims];
  const int64_t hops = PlanLegs(src_chip, dst_core / cpc, src_core % cpc, legs);
  int tie_dims[kMaxDims];
  size_t ties = 0;
  for (int d = 0; d < ndims_; ++d) {
    if (legs[d].tie) tie_dims[ties++] = d;
  }
  // As RouteSplit: every combination of directions on the tied dimensions, 2^ties paths.
  const uint32_t combos = 1u << ties;
  if (out.size() < combos) out.resize(combos);
  for (uint32_t m = 0; m < combos; ++m) {
    uint32_t flip = 0;
    for (size_t i = 0; i < ties; ++i) {
      if ((m >> i) & 1u) flip |= 1u << tie_dims[i];
    }
    out[m].links.resize(static_cast<size_t>(hops));
    WriteLegs(src_chip, legs, flip, out[m].links.data());
    out[m].fraction = 1.0 / static_cast<double>(combos);
  }
  return combos;
}

int64_t TorusTopology::Hops(int64_t src_core, int64_t dst_core) const {
  CheckCore(src_core);
  CheckCore(dst_core);
  if (src_core == dst_core) return 0;
  const int64_t cpc = config_.cores_per_chip;
  const int64_t src_chip = src_core / cpc;
  const int64_t dst_chip = dst_core / cpc;
  if (src_chip == dst_chip) return 1;
  if (router_) return router_->Hops(src_chip, dst_chip);
  Leg legs[kMaxDims];
  return PlanLegs(src_chip, dst_chip, 0, legs);
}

int64_t TorusTopology::Diameter() const {
  if (router_) return router_->Diameter();
  int64_t diameter = 0;
  for (int d = 0; d < ndims_; ++d) {
    const int64_t n = grid_.dims[d];
    diameter += grid_.wraparound[d] ? n / 2 : n - 1;
  }
  return diameter;
}

double TorusTopology::MeanHops() const {
  if (num_chips_ < 2) return 0;
  if (router_) return router_->MeanHops();
  // Sum over ordered chip pairs of the hop count: along dimension d, each ordered pair of
  // positions (i, j) on a line / ring of n chips occurs for (N / n)^2 chip pairs, so it adds
  // (N / n)^2 * S(n), where a line has S = sum |i - j| = (n^3 - n) / 3 and a ring has
  // S = n * sum_k min(k, n - k).
  const double chips = static_cast<double>(num_chips_);
  double total = 0;
  for (int d = 0; d < ndims_; ++d) {
    const int64_t n = grid_.dims[d];
    double line_sum = 0;
    if (grid_.wraparound[d]) {
      for (int64_t k = 0; k < n; ++k) line_sum += static_cast<double>(k < n - k ? k : n - k);
      line_sum *= static_cast<double>(n);
    } else {
      line_sum = static_cast<double>(n * n * n - n) / 3.0;
    }
    const double lines = chips / static_cast<double>(n);
    total += lines * lines * line_sum;
  }
  return total / (chips * (chips - 1));
}

nlohmann::json TorusTopology::ToJson() const { return config_.ToJson(); }

std::string TorusTopology::Describe() const {
  std::ostringstream os;
  bool all_wrap = true;
  bool no_wrap = true;
  for (int d = 0; d < ndims_; ++d) {
    if (grid_.dims[d] < 2) continue;
    all_wrap = all_wrap && grid_.wraparound[d];
    no_wrap = no_wrap && !grid_.wraparound[d];
  }
  const char* shape = twisted()  ? "twisted torus"
                      : all_wrap ? "torus"
                      : no_wrap  ? "mesh"
                                 : "torus/mesh";
  os << "topology " << name_ << ": " << ndims_ << "D " << shape << " " << JoinDims(grid_.dims)
     << " = " << num_chips_ << " chips x " << cores_per_chip()
     << (cores_per_chip() == 1 ? " core" : " cores") << " per chip = " << num_cores()
     << " cores (partitions)\n";
  os << "  dimensions:  ";
  for (int d = 0; d < ndims_; ++d) {
    os << (d ? ", " : "") << "dim" << d << " " << grid_.dims[d] << " chips "
       << (grid_.dims[d] < 2     ? "(no links)"
           : grid_.wraparound[d] ? "(ring)"
                                 : "(line)");
  }
  os << "\n";
  if (twisted()) {
    os << "  twist:       crossing dim" << grid_.twist_dim
       << "'s wraparound (+) shifts the other coordinates by " << JoinDims(grid_.twist_offsets, ",")
       << "\n";
  }
  os << DescribeLinks(*this, config_.links_per_neighbor);
  if (twisted()) {
    os << "  routing:     BFS shortest paths; ties to the lowest link id (from each chip: dim 0 "
          "before dim 1, + before -)\n";
  } else {
    os << "  routing:     dimension order (dim 0 first), the shorter way round each ring; ties "
          "(exactly half a ring): "
       << TieBreakName(config_.tie_break) << "\n";
  }
  // A twisted torus's hop statistics need every BFS table (chips^2 entries): skipped for large
  // pods, like a large custom graph's.
  if (!router_ || num_chips() <= 4096) {
    os << "  hops:        diameter " << Diameter() << ", mean " << MeanHops() << " (chip to chip)\n";
  }
  os << "  chips:       numbered row-major over (x0";
  for (int d = 1; d < ndims_; ++d) os << ", x" << d;
  os << "), the last coordinate fastest: chip = ";
  for (int d = 0; d < ndims_; ++d) {
    os << (d ? " + " : "") << "x" << d;
    if (strides_[d] != 1) os << "*" << strides_[d];
  }
  os << "\n"
     << DescribeCoreNumbering(*this) << DescribeComments(config_.comments)
     << CoreTable(*this, /*max_chips=*/256);
  return os.str();
}

}  // namespace podsim::topo
