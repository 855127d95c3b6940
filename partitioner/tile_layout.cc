#include "partitioner/tile_layout.h"

#include <algorithm>

#include "base/error.h"
#include "partitioner/sharding_util.h"

namespace podsim::partitioner {

namespace {

// `major` (a dim's digits, major first) cut into the digits of coordinate / k and those of
// coordinate mod k (the minor ones whose sizes make k; a digit of size s and stride t where k
// falls inside it becomes s / r of stride t * r and r of stride t). nullopt when k does not
// fall on a digit boundary that way.
std::optional<std::pair<std::vector<ir::StridedMode>, std::vector<ir::StridedMode>>>
SplitMinorModes(std::vector<ir::StridedMode> major, int64_t k) {
  std::vector<ir::StridedMode> minor;
  int64_t r = k;
  while (r > 1) {
    if (major.empty()) return std::nullopt;
    const ir::StridedMode m = major.back();
    major.pop_back();
    if (m.size <= r && r % m.size == 0) {
      minor.insert(minor.begin(), m);
      r /= m.size;
    } else if (m.size % r == 0) {
      minor.insert(minor.begin(), ir::StridedMode{r, m.stride});
      major.push_back(ir::StridedMode{m.size / r, m.stride * r});
      r = 1;
    } else {
      return std::nullopt;
    }
  }
  return std::pair{std::move(major), std::move(minor)};
}

}  // namespace

int64_t ShardExtent(int64_t global, int64_t tiles) { return (global + tiles - 1) / tiles; }

TileLayout TileLayout::Replicated(int64_t rank, int64_t num_devices) {
  TileLayout l;
  l.tiles_.assign(rank, 1);
  l.replicas_ = num_devices;
  l.num_devices_ = num_devices;
  l.axes_.assign(rank + 2, {});
  if (num_devices > 1) l.axes_[rank + 1] = {{num_devices, 1}};
  return l;
}

TileLayout TileLayout::FromSharding(const ir::Sharding& s, int64_t rank, int64_t num_devices) {
  using Kind = ir::Sharding::Kind;
  if (s.kind == Kind::kReplicated || s.kind == Kind::kMaximal) return Replicated(rank, num_devices);
  if (s.kind == Kind::kManual) throw Error("manual sharding has no tile layout");
  const int64_t expected = rank + (s.last_tile_dim_replicate ? 1 : 0);
  if (static_cast<int64_t>(s.tile_dims.size()) != expected) {
    throw Error("sharding " + s.ToString() + " has " + std::to_string(s.tile_dims.size()) +
                " tile dims, a rank-" + std::to_string(rank) + " tensor needs " +
                std::to_string(expected));
  }
  const int64_t listed = s.devices.size();
  if (listed < 1 || num_devices % listed != 0) {
    throw Error("sharding " + s.ToString() + " lists " + std::to_string(listed) +
                " devices, which does not divide the " + std::to_string(num_devices) +
                " partitions");
  }
  if (!s.devices.is_iota()) {
    std::vector<bool> seen(num_devices, false);
    for (int64_t d : s.devices) {
      if (d < 0 || d >= num_devices || seen[d]) {
        throw Error("sharding " + s.ToString() + " must list partitions of 0.." +
                    std::to_string(num_devices - 1) + " at most once each");
      }
      seen[d] = true;
    }
  }
  TileLayout l;
  l.tiles_ = TensorTileDims(s, rank);
  const int64_t given_replicas = ReplicationFactor(s);
  l.replicas_ = given_replicas * (num_devices / listed);
  l.num_devices_ = num_devices;
  // Compact when partition p < listed sits at position p of an iota, or the iota lists every
  // partition: the unlisted ones (p >= listed) then copy slot p mod listed, the low digits.
  if (s.devices.is_iota() && (listed == num_devices || s.devices.iota().IsRange())) {
    if (auto runs = ir::SplitModes(s.devices.iota().Modes(), s.tile_dims)) {
      l.axes_.assign(rank + 2, {});
      for (int64_t d = 0; d < rank; ++d) l.axes_[d] = (*runs)[d];
      std::vector<ir::StridedMode>& replica = l.axes_[rank + 1];
      if (listed < num_devices) replica.push_back({num_devices / listed, listed});
      if (s.last_tile_dim_replicate) {
        replica.insert(replica.end(), runs->back().begin(), runs->back().end());
      }
      return l;
    }
  }
  auto t = std::make_shared<Tables>();
  t->coords.resize(rank * num_devices);
  t->partial_index.assign(num_devices, 0);
  t->replica.resize(num_devices);
  std::vector<int64_t> slot_of(num_devices, -1);
  for (int64_t k = 0; k < listed; ++k) slot_of[s.devices[k]] = k;
  // Partitions the sharding does not list hold extra replicas: the j-th unlisted one copies
  // assignment slot j mod listed.
  const int64_t nt = static_cast<int64_t>(s.tile_dims.size());
  std::vector<int64_t> index(nt);
  int64_t extra = 0;
  for (int64_t p = 0; p < num_devices; ++p) {
    int64_t slot = slot_of[p], round = 0;
    if (slot < 0) {
      slot = extra % listed;
      round = 1 + extra / listed;
      ++extra;
    }
    for (int64_t d = nt - 1, rest = slot; d >= 0; --d) {  // row-major tile index of the slot
      index[d] = rest % s.tile_dims[d];
      rest /= s.tile_dims[d];
    }
    for (int64_t d = 0; d < rank; ++d) t->coords[p * rank + d] = static_cast<int32_t>(index[d]);
    const int64_t r = s.last_tile_dim_replicate ? index.back() : 0;
    t->replica[p] = static_cast<int32_t>(given_replicas * round + r);
  }
  l.t_ = std::move(t);
  return l;
}

std::optional<TileLayout> TileLayout::FromCoords(int64_t n, std::vector<int64_t> tiles,
                                                 int64_t partial, ir::ReduceKind partial_kind,
                                                 const std::vector<int64_t>& coords,
                                                 const std::vector<int64_t>& partial_index) {
  const int64_t rank = static_cast<int64_t>(tiles.size());
  if (static_cast<int64_t>(coords.size()) != n * rank) return std::nullopt;
  if (!partial_index.empty() && static_cast<int64_t>(partial_index.size()) != n) {
    return std::nullopt;
  }
  int64_t slots = partial;
  for (int64_t t : tiles) slots *= t;
  if (n == 0 || slots <= 0 || n % slots != 0) return std::nullopt;
  TileLayout l;
  l.tiles_ = std::move(tiles);
  l.partial_ = partial;
  l.partial_kind_ = partial_kind;
  l.replicas_ = n / slots;
  l.num_devices_ = n;
  auto t = std::make_shared<Tables>();
  t->coords.assign(coords.begin(), coords.end());
  t->partial_index.assign(n, 0);
  t->replica.resize(n);
  std::vector<int64_t> count(slots, 0);  // partitions so far per (tile, partial) slot
  for (int64_t p = 0; p < n; ++p) {
    int64_t slot = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t c = coords[p * rank + d];
      if (c < 0 || c >= l.tiles_[d]) return std::nullopt;
      slot = slot * l.tiles_[d] + c;
    }
    const int64_t pi = partial_index.empty() ? 0 : partial_index[p];
    if (pi < 0 || pi >= partial) return std::nullopt;
    t->partial_index[p] = static_cast<int32_t>(pi);
    slot = slot * partial + pi;
    t->replica[p] = static_cast<int32_t>(count[slot]++);
    if (count[slot] > l.replicas_) return std::nullopt;
  }
  l.t_ = std::move(t);
  return l;
}

std::optional<TileLayout> TileLayout::FromPicks(
    const std::vector<std::pair<const TileLayout*, int64_t>>& picks, int64_t n) {
  bool compact = true;
  for (const auto& [l, d] : picks) compact = compact && (l == nullptr || l->compact());
  if (compact) {
    // Common digits of the picked dims and of the whole range (for the replicas).
    std::vector<std::vector<ir::StridedMode>> lists;
    for (const auto& [l, d] : picks) {
      lists.push_back(l ? l->axes_[d] : std::vector<ir::StridedMode>{});
    }
    lists.push_back({{n, 1}});
    if (auto atoms = ir::RefineModes(lists, n)) {
      TileLayout out;
      out.num_devices_ = n;
      out.axes_.assign(picks.size() + 2, {});
      std::vector<int64_t> used;
      int64_t slots = 1;
      for (size_t i = 0; i < picks.size(); ++i) {
        for (const ir::StridedMode& m : (*atoms)[i]) {
          if (std::find(used.begin(), used.end(), m.stride) != used.end()) return std::nullopt;
          used.push_back(m.stride);
        }
        out.axes_[i] = ir::CanonicalModes((*atoms)[i]);
        out.tiles_.push_back(ir::ModesSize(out.axes_[i]));
        slots *= out.tiles_.back();
      }
      std::vector<ir::StridedMode> rest;
      for (const ir::StridedMode& m : atoms->back()) {
        if (std::find(used.begin(), used.end(), m.stride) == used.end()) rest.push_back(m);
      }
      out.axes_.back() = ir::CanonicalModes(rest);
      out.replicas_ = n / slots;
      return out;
    }
  }
  std::vector<int64_t> tiles;
  for (const auto& [l, d] : picks) tiles.push_back(l ? l->tiles(d) : 1);
  std::vector<int64_t> coords;
  coords.reserve(n * picks.size());
  for (int64_t p = 0; p < n; ++p) {
    for (const auto& [l, d] : picks) coords.push_back(l ? l->Coord(p, d) : 0);
  }
  return FromCoords(n, std::move(tiles), 1, ir::ReduceKind::kAdd, coords, {});
}

std::shared_ptr<const TileLayout::Tables> TileLayout::MakeTables() const {
  auto t = std::make_shared<Tables>();
  const int64_t n = num_devices_, r = rank();
  t->coords.resize(n * r);
  t->partial_index.resize(n);
  t->replica.resize(n);
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t d = 0; d < r; ++d) t->coords[p * r + d] = static_cast<int32_t>(Coord(p, d));
    t->partial_index[p] = static_cast<int32_t>(PartialIndex(p));
    t->replica[p] = static_cast<int32_t>(ReplicaIndex(p));
  }
  return t;
}

TileLayout TileLayout::WithTables() const {
  if (t_) return *this;
  TileLayout l = *this;
  l.t_ = MakeTables();
  l.axes_.clear();
  return l;
}

std::vector<int64_t> TileLayout::Coords(int64_t device) const {
  std::vector<int64_t> c(rank());
  for (int64_t d = 0; d < rank(); ++d) c[d] = Coord(device, d);
  return c;
}

int64_t TileLayout::NumTiles() const {
  int64_t n = 1;
  for (int64_t t : tiles_) n *= t;
  return n;
}

bool TileLayout::Equivalent(const TileLayout& o) const {
  if (tiles_ != o.tiles_ || partial_ != o.partial_ || num_devices() != o.num_devices()) {
    return false;
  }
  if (partial_ > 1 && partial_kind_ != o.partial_kind_) return false;
  if (!t_ && !o.t_) {
    // Canonical digits determine the coordinates.
    for (int64_t d = 0; d <= rank(); ++d) {
      if (d == rank() && partial_ == 1) break;
      if (ir::CanonicalModes(axes_[d]) != ir::CanonicalModes(o.axes_[d])) return false;
    }
    return true;
  }
  if (t_ && t_ == o.t_) return true;
  if (t_ && o.t_) {
    if (t_->coords != o.t_->coords) return false;
    return partial_ == 1 || t_->partial_index == o.t_->partial_index;
  }
  for (int64_t p = 0; p < num_devices(); ++p) {
    for (int64_t d = 0; d < rank(); ++d) {
      if (Coord(p, d) != o.Coord(p, d)) return false;
    }
    if (partial_ > 1 && PartialIndex(p) != o.PartialIndex(p)) return false;
  }
  return true;
}

std::vector<std::vector<int64_t>> TileLayout::GroupsAlong(int64_t d) const {
  return GroupsAlongMinor(d, d == kPartialAxis ? partial_ : tiles_[d]);
}

std::optional<ir::IotaReplicaGroupList> TileLayout::IotaGroupsAlong(int64_t d) const {
  return IotaGroupsAlongMinor(d, d == kPartialAxis ? partial_ : tiles_[d]);
}

std::vector<std::vector<int64_t>> TileLayout::GroupsAlongMinor(int64_t d, int64_t size) const {
  if (auto iota = IotaGroupsAlongMinor(d, size)) return iota->ToGroups();
  const int64_t n = num_devices();
  const bool partial_axis = d == kPartialAxis;
  // Key: every coordinate except the minor factor of the one along d, in mixed radix (n / size
  // values).
  std::vector<int64_t> group_of(n / size, -1);
  std::vector<std::vector<int64_t>> out;
  for (int64_t p = 0; p < n; ++p) {
    int64_t key = 0;
    for (int64_t k = 0; k < rank(); ++k) {
      key = k != d ? key * tiles_[k] + Coord(p, k) : key * (tiles_[k] / size) + Coord(p, k) / size;
    }
    key = partial_axis ? key * (partial_ / size) + PartialIndex(p) / size
                       : key * partial_ + PartialIndex(p);
    key = key * replicas_ + ReplicaIndex(p);
    int64_t& g = group_of[key];
    if (g < 0) {
      g = static_cast<int64_t>(out.size());
      out.emplace_back(size, -1);
    }
    out[g][(partial_axis ? PartialIndex(p) : Coord(p, d)) % size] = p;
  }
  return out;
}

std::optional<ir::IotaReplicaGroupList> TileLayout::IotaGroupsAlongMinor(int64_t d,
                                                                         int64_t size) const {
  if (t_) return std::nullopt;
  const int64_t axis = d == kPartialAxis ? rank() : d;
  std::optional<std::pair<std::vector<ir::StridedMode>, std::vector<ir::StridedMode>>> split =
      SplitMinorModes(axes_[axis], size);
  if (!split) return std::nullopt;
  // Groups ordered by their first member (the one at coordinate 0): the other digits, major
  // first; members by their coordinate along the axis's minor factor.
  std::vector<ir::StridedMode> others = split->first;
  for (int64_t a = 0; a < static_cast<int64_t>(axes_.size()); ++a) {
    if (a != axis) others.insert(others.end(), axes_[a].begin(), axes_[a].end());
  }
  std::sort(others.begin(), others.end(),
            [](const ir::StridedMode& x, const ir::StridedMode& y) { return x.stride > y.stride; });
  std::vector<ir::StridedMode> modes = others;
  modes.insert(modes.end(), split->second.begin(), split->second.end());
  std::optional<ir::IotaDevices> devices = ir::IotaDevices::FromModes(modes);
  if (!devices) throw Error("internal: layout " + ToString() + " does not cover its partitions");
  ir::IotaReplicaGroupList g;
  g.group_size = size;
  g.num_groups = num_devices_ / g.group_size;
  g.devices = std::move(*devices);
  return g;
}

TileLayout TileLayout::Gathered(int64_t d) const {
  if (!t_) {
    TileLayout l = *this;
    std::vector<ir::StridedMode>& replica = l.axes_[rank() + 1];
    replica.insert(replica.end(), axes_[d].begin(), axes_[d].end());
    l.axes_[d].clear();
    l.tiles_[d] = 1;
    l.replicas_ = replicas_ * tiles_[d];
    return l;
  }
  TileLayout l = *this;
  auto t = std::make_shared<Tables>(*t_);
  const int64_t k = tiles_[d];
  for (int64_t p = 0; p < num_devices(); ++p) {
    t->replica[p] = static_cast<int32_t>(ReplicaIndex(p) * k + Coord(p, d));
    t->coords[p * rank() + d] = 0;
  }
  l.tiles_[d] = 1;
  l.replicas_ = replicas_ * k;
  l.t_ = std::move(t);
  return l;
}

TileLayout TileLayout::AllReduced() const {
  if (!t_) {
    TileLayout l = *this;
    std::vector<ir::StridedMode>& replica = l.axes_[rank() + 1];
    replica.insert(replica.end(), axes_[rank()].begin(), axes_[rank()].end());
    l.axes_[rank()].clear();
    l.replicas_ = replicas_ * partial_;
    l.partial_ = 1;
    l.partial_kind_ = ir::ReduceKind::kAdd;
    return l;
  }
  TileLayout l = *this;
  auto t = std::make_shared<Tables>(*t_);
  for (int64_t p = 0; p < num_devices(); ++p) {
    t->replica[p] = static_cast<int32_t>(ReplicaIndex(p) * partial_ + PartialIndex(p));
    t->partial_index[p] = 0;
  }
  l.replicas_ = replicas_ * partial_;
  l.partial_ = 1;
  l.partial_kind_ = ir::ReduceKind::kAdd;
  l.t_ = std::move(t);
  return l;
}

TileLayout TileLayout::Scattered(int64_t d) const {
  if (!t_) {
    TileLayout l = *this;
    l.axes_[d].insert(l.axes_[d].end(), axes_[rank()].begin(), axes_[rank()].end());
    l.axes_[rank()].clear();
    l.tiles_[d] = tiles_[d] * partial_;
    l.partial_ = 1;
    l.partial_kind_ = ir::ReduceKind::kAdd;
    return l;
  }
  TileLayout l = *this;
  auto t = std::make_shared<Tables>(*t_);
  for (int64_t p = 0; p < num_devices(); ++p) {
    t->coords[p * rank() + d] = static_cast<int32_t>(Coord(p, d) * partial_ + PartialIndex(p));
    t->partial_index[p] = 0;
  }
  l.tiles_[d] = tiles_[d] * partial_;
  l.partial_ = 1;
  l.partial_kind_ = ir::ReduceKind::kAdd;
  l.t_ = std::move(t);
  return l;
}

TileLayout TileLayout::Swapped(int64_t a, int64_t b) const {
  if (!t_) {
    TileLayout l = *this;
    l.axes_[b] = axes_[a];
    l.axes_[a].clear();
    l.tiles_[b] = tiles_[a];
    l.tiles_[a] = 1;
    return l;
  }
  TileLayout l = *this;
  auto t = std::make_shared<Tables>(*t_);
  for (int64_t p = 0; p < num_devices(); ++p) {
    t->coords[p * rank() + b] = static_cast<int32_t>(Coord(p, a));
    t->coords[p * rank() + a] = 0;
  }
  l.tiles_[b] = tiles_[a];
  l.tiles_[a] = 1;
  l.t_ = std::move(t);
  return l;
}

TileLayout TileLayout::MovedFactor(int64_t a, int64_t b, int64_t k) const {
  if (a == b || k < 1 || tiles_[a] % k != 0) {
    throw Error("internal: cannot move a factor " + std::to_string(k) + " of dim " +
                std::to_string(a) + "'s split to dim " + std::to_string(b) + " of " + ToString());
  }
  if (k == tiles_[a] && tiles_[b] == 1) return Swapped(a, b);
  TileLayout l = *this;
  l.tiles_[a] = tiles_[a] / k;
  l.tiles_[b] = tiles_[b] * k;
  if (!t_) {
    if (auto split = SplitMinorModes(axes_[a], k)) {
      l.axes_[a] = std::move(split->first);
      l.axes_[b].insert(l.axes_[b].end(), split->second.begin(), split->second.end());
      return l;
    }
    return WithTables().MovedFactor(a, b, k);  // k does not fall on digit boundaries
  }
  auto t = std::make_shared<Tables>(*t_);
  for (int64_t p = 0; p < num_devices(); ++p) {
    t->coords[p * rank() + a] = static_cast<int32_t>(Coord(p, a) / k);
    t->coords[p * rank() + b] = static_cast<int32_t>(Coord(p, b) * k + Coord(p, a) % k);
  }
  l.t_ = std::move(t);
  return l;
}

TileLayout TileLayout::Rotated(int64_t d, int64_t shift) const {
  TileLayout l = WithTables();
  auto t = std::make_shared<Tables>(*l.t_);
  const int64_t k = tiles_[d];
  for (int64_t p = 0; p < num_devices(); ++p) {
    t->coords[p * rank() + d] = static_cast<int32_t>(((Coord(p, d) + shift) % k + k) % k);
  }
  l.t_ = std::move(t);
  return l;
}

TileLayout TileLayout::Projected(const std::vector<int64_t>& dim_map,
                                 const std::vector<int64_t>& partial_dims,
                                 ir::ReduceKind kind) const {
  const int64_t n = num_devices();
  bool identity = partial_dims.empty() && static_cast<int64_t>(dim_map.size()) == rank();
  for (int64_t d = 0; identity && d < rank(); ++d) identity = dim_map[d] == d;
  if (identity) return *this;
  std::vector<int64_t> tiles;
  for (int64_t src : dim_map) tiles.push_back(src < 0 ? 1 : tiles_[src]);
  int64_t partial = partial_;
  for (int64_t d : partial_dims) partial *= tiles_[d];
  if (!t_) {
    const int64_t new_rank = static_cast<int64_t>(dim_map.size());
    TileLayout l;
    l.tiles_ = tiles;
    l.partial_ = partial;
    l.partial_kind_ = partial_ > 1 ? partial_kind_ : kind;
    l.num_devices_ = n;
    l.axes_.assign(new_rank + 2, {});
    std::vector<bool> taken(rank(), false);
    auto take = [&](int64_t d) {
      if (taken[d] && tiles_[d] > 1) {
        throw Error("internal: projection of " + ToString() + " is not a layout");
      }
      taken[d] = true;
      return axes_[d];
    };
    for (int64_t i = 0; i < new_rank; ++i) {
      if (dim_map[i] >= 0) l.axes_[i] = take(dim_map[i]);
    }
    std::vector<ir::StridedMode>& pa = l.axes_[new_rank];
    pa = axes_[rank()];
    for (int64_t d : partial_dims) {
      std::vector<ir::StridedMode> m = take(d);
      pa.insert(pa.end(), m.begin(), m.end());
    }
    // Replicas in partition order: every digit nobody took, major first.
    std::vector<ir::StridedMode> rest = axes_[rank() + 1];
    for (int64_t d = 0; d < rank(); ++d) {
      if (!taken[d]) rest.insert(rest.end(), axes_[d].begin(), axes_[d].end());
    }
    std::sort(rest.begin(), rest.end(), [](const ir::StridedMode& x, const ir::StridedMode& y) {
      return x.stride > y.stride;
    });
    l.axes_[new_rank + 1] = ir::CanonicalModes(rest);
    l.replicas_ = ir::ModesSize(l.axes_[new_rank + 1]);
    return l;
  }
  std::vector<int64_t> coords;
  coords.reserve(n * dim_map.size());
  std::vector<int64_t> pidx(n);
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t src : dim_map) coords.push_back(src < 0 ? 0 : Coord(p, src));
    int64_t lin = PartialIndex(p);
    for (int64_t d : partial_dims) lin = lin * tiles_[d] + Coord(p, d);
    pidx[p] = lin;
  }
  const ir::ReduceKind k = partial_ > 1 ? partial_kind_ : kind;
  std::optional<TileLayout> l =
      FromCoords(n, std::move(tiles), partial, k, std::move(coords), pidx);
  if (!l) throw Error("internal: projection of " + ToString() + " is not a layout");
  return *l;
}

ir::Sharding TileLayout::ToSharding() const {
  if (partial_ > 1) throw Error("internal: partial layout " + ToString() + " has no sharding");
  if (NumTiles() == 1) return ir::Sharding::Replicated();
  std::vector<int64_t> dims = tiles_;
  if (replicas_ > 1) dims.push_back(replicas_);
  if (!t_) {
    std::vector<ir::StridedMode> modes;
    for (int64_t d = 0; d < rank(); ++d) {
      modes.insert(modes.end(), axes_[d].begin(), axes_[d].end());
    }
    modes.insert(modes.end(), axes_[rank() + 1].begin(), axes_[rank() + 1].end());
    std::optional<ir::IotaDevices> devices = ir::IotaDevices::FromModes(modes);
    if (!devices) throw Error("internal: layout does not cover its partitions");
    return ir::Sharding::Tiled(std::move(dims), ir::DeviceList(std::move(*devices)),
                               replicas_ > 1);
  }
  std::vector<int64_t> devices(num_devices());
  for (int64_t p = 0; p < num_devices(); ++p) {
    int64_t lin = 0;
    for (int64_t d = 0; d < rank(); ++d) lin = lin * tiles_[d] + Coord(p, d);
    lin = lin * replicas_ + ReplicaIndex(p);
    devices[lin] = p;
  }
  return ir::Sharding::Tiled(std::move(dims), std::move(devices), replicas_ > 1);
}

std::string TileLayout::ToString() const {
  if (partial_ == 1) return ToSharding().ToString();
  // The partial partitions shown as replicas, then what they hold.
  std::string base = AllReduced().ToSharding().ToString();
  base.pop_back();
  return base + " partial " + std::string(ir::ReduceKindName(partial_kind_)) + " over " +
         std::to_string(partial_) + "}";
}

int64_t TileLayout::ShardStart(const ir::Shape& global, int64_t device, int64_t d) const {
  return Coord(device, d) * ShardExtent(global.dims[d], tiles_[d]);
}

ir::Shape TileLayout::ShardShape(const ir::Shape& global) const {
  ir::Shape s = global;
  for (int64_t d = 0; d < rank(); ++d) s.dims[d] = ShardExtent(global.dims[d], tiles_[d]);
  return s;
}

}  // namespace podsim::partitioner
