#include "topologies/torus.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/config.h"
#include "base/format.h"
#include "topologies/describe.h"
#include "topologies/on_chip_links.h"

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
  for (const TwistConfig& t : config_.twists) {
    // A twist of all zeros is a plain wraparound.
    if (std::all_of(t.offsets.begin(), t.offsets.end(), [](int64_t o) { return o == 0; })) continue;
    grid_.twist_offsets.resize(grid_.dims.size());
    grid_.twist_offsets[static_cast<size_t>(t.dim)] = t.offsets;
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
    for (int d = 0; d < ndims_; ++d) {
      if (grid_.Twisted(static_cast<size_t>(d))) twisted_dims_.push_back(d);
    }
    // A shortest route crosses twisted dimension d's wraparound at most about 2U / n_d times (U:
    // the largest route without any twist); the search tries every such count per dimension.
    // Short twisted dimensions beside long ones would make that search huge: refused.
    double longest = 0;
    for (int d = 0; d < ndims_; ++d) {
      longest += static_cast<double>(grid_.wraparound[d] ? grid_.dims[d] / 2 : grid_.dims[d] - 1);
    }
    double choices = 1;
    for (int d : twisted_dims_) choices *= 2 * longest / static_cast<double>(grid_.dims[d]) + 3;
    if (choices > 512) {
      FailAt("topology.twist",
             "the twisted dimensions are too short beside the others: a route could cross their "
             "wraparounds so many times that routing would weigh about " +
                 FormatG(choices, 3) + " choices per chip pair (at most 512); twist longer "
                 "dimensions");
    }
    int64_t keys = 1;
    for (int d = 0; d < ndims_ && keys <= (int64_t{1} << 22); ++d) keys *= 2 * grid_.dims[d] - 1;
    if (keys <= (int64_t{1} << 22)) {
      wrap_begin_.reserve(static_cast<size_t>(keys) + 1);
      wrap_begin_.push_back(0);
      std::vector<int64_t> delta(static_cast<size_t>(ndims_));
      std::vector<int16_t> solved;
      for (int64_t key = 0; key < keys; ++key) {
        int64_t rest = key;
        for (int d = ndims_ - 1; d >= 0; --d) {
          const int64_t span = 2 * grid_.dims[d] - 1;
          delta[static_cast<size_t>(d)] = rest % span - (grid_.dims[d] - 1);
          rest /= span;
        }
        SolveWraps(delta.data(), solved);
        wrap_choices_.insert(wrap_choices_.end(), solved.begin(), solved.end());
        wrap_begin_.push_back(static_cast<int32_t>(wrap_choices_.size()));
      }
    }
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
        if (crosses_wrap && grid_.Twisted(static_cast<size_t>(d))) {
          const std::vector<int64_t>& offsets = grid_.twist_offsets[static_cast<size_t>(d)];
          for (int e = 0; e < ndims_; ++e) {
            if (e == d) continue;
            const int64_t m = grid_.dims[e];
            const int64_t shifted = ((coords[e] + direction * offsets[e]) % m + m) % m;
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
                                const int16_t* wraps, Leg* legs) const {
  int64_t total = 0;
  size_t twisted_index = 0;
  for (int d = 0; d < ndims_; ++d) {
    const int64_t n = grid_.dims[d];
    const int64_t s = coords_[src_chip * ndims_ + d];
    const int64_t t = coords_[dst_chip * ndims_ + d];
    Leg& leg = legs[d];
    leg = Leg{};
    int64_t diff = t - s;
    if (wraps != nullptr) {
      if (grid_.Twisted(static_cast<size_t>(d))) {
        // Crossing the twisted wraparound a_d times: the walk along d is diff + a_d * n.
        diff += wraps[twisted_index++] * n;
        leg.steps = diff < 0 ? -diff : diff;
        leg.direction = diff < 0 ? -1 : +1;
        total += leg.steps;
        continue;
      }
      // Each crossing of a twisted wraparound has shifted this coordinate by the twist's offset.
      for (size_t i = 0; i < twisted_dims_.size(); ++i) {
        diff -= wraps[i] * grid_.twist_offsets[static_cast<size_t>(twisted_dims_[i])][d];
      }
    }
    if (!grid_.wraparound[d]) {
      if (diff == 0) continue;
      leg.steps = diff > 0 ? diff : -diff;
      leg.direction = diff > 0 ? +1 : -1;
    } else {
      const int64_t forward = (diff % n + n) % n;
      if (forward == 0) continue;
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

int64_t TorusTopology::DeltaKey(int64_t src_chip, int64_t dst_chip) const {
  int64_t key = 0;
  for (int d = 0; d < ndims_; ++d) {
    const int64_t n = grid_.dims[d];
    key = key * (2 * n - 1) + (coords_[dst_chip * ndims_ + d] - coords_[src_chip * ndims_ + d]) +
          (n - 1);
  }
  return key;
}

void TorusTopology::SolveWraps(const int64_t* delta, std::vector<int16_t>& out) const {
  out.clear();
  const size_t k = twisted_dims_.size();
  // Cost of a choice: |walk| along each twisted dimension plus the shorter way round (or the
  // line distance) along each other one.
  auto cost = [&](const std::vector<int64_t>& a) {
    int64_t total = 0;
    size_t ti = 0;
    for (int d = 0; d < ndims_; ++d) {
      const int64_t n = grid_.dims[d];
      if (grid_.Twisted(static_cast<size_t>(d))) {
        total += std::abs(delta[d] + a[ti++] * n);
        continue;
      }
      int64_t diff = delta[d];
      for (size_t i = 0; i < k; ++i) {
        diff -= a[i] * grid_.twist_offsets[static_cast<size_t>(twisted_dims_[i])][d];
      }
      if (!grid_.wraparound[d]) {
        total += std::abs(diff);
      } else {
        const int64_t forward = (diff % n + n) % n;
        total += std::min(forward, n - forward);
      }
    }
    return total;
  };
  // An upper bound: the fewest steps along each twisted dimension on its own.
  std::vector<int64_t> a(k);
  for (size_t i = 0; i < k; ++i) {
    const int64_t n = grid_.dims[twisted_dims_[i]];
    const int64_t dd = delta[twisted_dims_[i]];
    a[i] = 2 * std::abs(dd) > n ? (dd > 0 ? -1 : 1) : 0;
  }
  int64_t best = cost(a);
  // Every choice whose twisted walks alone fit in `best`, a_d ascending per dimension, dims in
  // order: depth-first with the partial sum of twisted walks as the bound.
  std::vector<std::vector<int16_t>> found;
  std::vector<int64_t> lo(k), hi(k);
  for (size_t i = 0; i < k; ++i) {
    const int64_t n = grid_.dims[twisted_dims_[i]];
    const int64_t dd = delta[twisted_dims_[i]];
    lo[i] = -((best + dd) / n) - 1;
    hi[i] = (best - dd) / n + 1;
  }
  auto visit = [&](auto& self, size_t i, int64_t partial) -> void {
    if (i == k) {
      const int64_t c = cost(a);
      if (c < best) {
        best = c;
        found.clear();
      }
      if (c == best) found.emplace_back(a.begin(), a.end());
      return;
    }
    const int64_t n = grid_.dims[twisted_dims_[i]];
    const int64_t dd = delta[twisted_dims_[i]];
    for (int64_t v = lo[i]; v <= hi[i]; ++v) {
      const int64_t walk = std::abs(dd + v * n);
      if (partial + walk > best) continue;
      a[i] = v;
      self(self, i + 1, partial + walk);
    }
  };
  visit(visit, 0, 0);
  for (const std::vector<int16_t>& f : found) out.insert(out.end(), f.begin(), f.end());
}

const int16_t* TorusTopology::ShortestWraps(int64_t src_chip, int64_t dst_chip,
                                            std::vector<int16_t>& scratch, size_t& count) const {
  const size_t k = twisted_dims_.size();
  if (!wrap_begin_.empty()) {  // read in place: routing allocates nothing
    const auto key = static_cast<size_t>(DeltaKey(src_chip, dst_chip));
    count = static_cast<size_t>(wrap_begin_[key + 1] - wrap_begin_[key]) / k;
    return wrap_choices_.data() + wrap_begin_[key];
  }
  std::vector<int64_t> delta(static_cast<size_t>(ndims_));
  for (int d = 0; d < ndims_; ++d) {
    delta[static_cast<size_t>(d)] = coords_[dst_chip * ndims_ + d] - coords_[src_chip * ndims_ + d];
  }
  SolveWraps(delta.data(), scratch);
  count = scratch.size() / k;
  return scratch.data();
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
    if (twisted()) {  // a twisted wrap also moves other coordinates: follow the links
      for (int64_t k = 0; k < leg.steps; ++k) {
        const int32_t id = neighbor_link_[(cur * ndims_ + d) * 2 + dir_bit];
        *out++ = id;
        cur = links_[static_cast<size_t>(id)].dst_chip;
      }
      continue;
    }
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
  const int64_t src_local = src_core % cpc;
  Leg legs[kMaxDims];
  const int16_t* wraps = nullptr;
  std::vector<int16_t> scratch;
  if (twisted()) {
    size_t count = 0;
    const int16_t* choices = ShortestWraps(src_chip, dst_chip, scratch, count);
    // Ties between wrap choices: the first (positive, split) or by parity (alternate).
    size_t pick = 0;
    if (config_.tie_break == TieBreak::kAlternate) {
      int64_t parity = src_local;
      for (int d = 0; d < ndims_; ++d) parity += coords_[src_chip * ndims_ + d];
      pick = static_cast<size_t>(parity) % count;
    }
    wraps = choices + pick * twisted_dims_.size();
  }
  const size_t start = out.size();
  out.resize(start + PlanLegs(src_chip, dst_chip, src_local, wraps, legs));
  WriteLegs(src_chip, legs, 0, out.data() + start);
}

std::vector<Topology::WeightedPath> TorusTopology::RouteSplit(int64_t src_core,
                                                              int64_t dst_core) const {
  std::vector<WeightedPath> paths;
  paths.resize(RouteSplitInto(src_core, dst_core, paths));
  return paths;
}

size_t TorusTopology::RouteSplitInto(int64_t src_core, int64_t dst_core,
                                     std::vector<WeightedPath>& out) const {
  const int64_t cpc = config_.cores_per_chip;
  if (config_.tie_break != TieBreak::kSplit || src_core / cpc == dst_core / cpc) {
    if (out.empty()) out.resize(1);
    out[0].links.clear();
    AppendRoute(src_core, dst_core, out[0].links);
    out[0].fraction = 1.0;
    return 1;
  }
  CheckCore(src_core);
  CheckCore(dst_core);
  const int64_t src_chip = src_core / cpc;
  const int64_t dst_chip = dst_core / cpc;
  // Wrap choices of a twisted torus (one "choice" of nothing on a plain one), each with every
  // combination of directions on its half-ring ties; the bytes split evenly over the choices,
  // then evenly over a choice's tie combinations.
  std::vector<int16_t> scratch;
  const size_t k = twisted_dims_.size();
  size_t count = 1;
  const int16_t* choices = twisted() ? ShortestWraps(src_chip, dst_chip, scratch, count) : nullptr;
  size_t n = 0;
  for (size_t c = 0; c < count; ++c) {
    const int16_t* wraps = twisted() ? choices + c * k : nullptr;
    Leg legs[kMaxDims];
    const int64_t hops = PlanLegs(src_chip, dst_chip, src_core % cpc, wraps, legs);
    int tie_dims[kMaxDims];
    size_t ties = 0;
    for (int d = 0; d < ndims_; ++d) {
      if (legs[d].tie) tie_dims[ties++] = d;
    }
    const uint32_t combos = 1u << ties;
    if (out.size() < n + combos) out.resize(n + combos);
    for (uint32_t m = 0; m < combos; ++m) {
      uint32_t flip = 0;
      for (size_t i = 0; i < ties; ++i) {
        if ((m >> i) & 1u) flip |= 1u << tie_dims[i];
      }
      WeightedPath& path = out[n++];
      path.links.resize(static_cast<size_t>(hops));
      WriteLegs(src_chip, legs, flip, path.links.data());
      path.fraction = 1.0 / static_cast<double>(combos) / static_cast<double>(count);
    }
  }
  return n;
}

int64_t TorusTopology::Hops(int64_t src_core, int64_t dst_core) const {
  CheckCore(src_core);
  CheckCore(dst_core);
  if (src_core == dst_core) return 0;
  const int64_t cpc = config_.cores_per_chip;
  const int64_t src_chip = src_core / cpc;
  const int64_t dst_chip = dst_core / cpc;
  if (src_chip == dst_chip) return 1;
  Leg legs[kMaxDims];
  std::vector<int16_t> scratch;
  size_t count = 0;
  const int16_t* wraps = twisted() ? ShortestWraps(src_chip, dst_chip, scratch, count) : nullptr;
  return PlanLegs(src_chip, dst_chip, 0, wraps, legs);
}

std::vector<int64_t> TorusTopology::TwistedRepresentatives() const {
  // Shifting every chip by one step along a wrapped dimension maps the wiring onto itself (the
  // wrapped dimensions form an abelian group's Cayley graph; twists never touch a line), so the
  // distances from a chip are those from the chip with the same line coordinates and every
  // wrapped coordinate 0.
  std::vector<int64_t> chips = {0};
  for (int d = 0; d < ndims_; ++d) {
    if (grid_.wraparound[d]) continue;
    std::vector<int64_t> next;
    for (int64_t c : chips) {
      for (int64_t x = 0; x < grid_.dims[d]; ++x) next.push_back(c + x * strides_[d]);
    }
    chips = std::move(next);
  }
  return chips;
}

int64_t TorusTopology::Diameter() const {
  if (twisted()) {
    int64_t diameter = 0;
    for (int64_t s : TwistedRepresentatives()) {
      for (int64_t t = 0; t < num_chips_; ++t) {
        if (t != s) diameter = std::max(diameter, Hops(s * config_.cores_per_chip, t * config_.cores_per_chip));
      }
    }
    return diameter;
  }
  int64_t diameter = 0;
  for (int d = 0; d < ndims_; ++d) {
    const int64_t n = grid_.dims[d];
    diameter += grid_.wraparound[d] ? n / 2 : n - 1;
  }
  return diameter;
}

double TorusTopology::MeanHops() const {
  if (num_chips_ < 2) return 0;
  if (twisted()) {
    const std::vector<int64_t> sources = TwistedRepresentatives();
    double total = 0;
    for (int64_t s : sources) {
      for (int64_t t = 0; t < num_chips_; ++t) {
        if (t != s) total += static_cast<double>(Hops(s * config_.cores_per_chip, t * config_.cores_per_chip));
      }
    }
    return total / (static_cast<double>(sources.size()) * static_cast<double>(num_chips_ - 1));
  }
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
       << (grid_.dims[d] < 2                     ? "(no links)"
           : grid_.Twisted(static_cast<size_t>(d)) ? "(twisted wraparound)"
           : grid_.wraparound[d]                 ? "(ring)"
                                                 : "(line)");
  }
  os << "\n";
  for (int d : twisted_dims_) {
    os << "  twist:       crossing dim" << d << "'s wraparound (+) shifts the coordinates by "
       << JoinDims(grid_.twist_offsets[static_cast<size_t>(d)], ",") << "\n";
  }
  os << DescribeLinks(*this, config_.links_per_neighbor);
  if (twisted()) {
    os << "  routing:     dimension order (dim 0 first) along the shortest walk: how often each "
          "twisted wraparound is crossed is chosen per pair; ties (equally short choices, half "
          "rings): "
       << TieBreakName(config_.tie_break) << "\n";
  } else {
    os << "  routing:     dimension order (dim 0 first), the shorter way round each ring; ties "
          "(exactly half a ring): "
       << TieBreakName(config_.tie_break) << "\n";
  }
  // A twisted pod's statistics take a pass over every chip per line position (Diameter).
  if (!twisted() ||
      static_cast<double>(TwistedRepresentatives().size()) * static_cast<double>(num_chips_) <=
          1e8) {
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
