#include "partitioner/tile_layout.h"

#include <algorithm>

#include "ir/error.h"
#include "partitioner/sharding_util.h"

namespace podsim::partitioner {

int64_t ShardExtent(int64_t global, int64_t tiles) { return (global + tiles - 1) / tiles; }

TileLayout TileLayout::Replicated(int64_t rank, int64_t num_devices) {
  TileLayout l;
  l.tiles_.assign(rank, 1);
  l.replicas_ = num_devices;
  auto t = std::make_shared<Tables>();
  t->coords.assign(rank * num_devices, 0);
  t->partial_index.assign(num_devices, 0);
  t->replica.resize(num_devices);
  for (int64_t p = 0; p < num_devices; ++p) t->replica[p] = static_cast<int32_t>(p);
  l.t_ = std::move(t);
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
  const int64_t listed = static_cast<int64_t>(s.devices.size());
  if (listed < 1 || num_devices % listed != 0) {
    throw Error("sharding " + s.ToString() + " lists " + std::to_string(listed) +
                " devices, which does not divide the " + std::to_string(num_devices) +
                " partitions");
  }
  std::vector<bool> seen(num_devices, false);
  for (int64_t d : s.devices) {
    if (d < 0 || d >= num_devices || seen[d]) {
      throw Error("sharding " + s.ToString() + " must list partitions of 0.." +
                  std::to_string(num_devices - 1) + " at most once each");
    }
    seen[d] = true;
  }
  TileLayout l;
  l.tiles_ = TensorTileDims(s, rank);
  const int64_t given_replicas = ReplicationFactor(s);
  l.replicas_ = given_replicas * (num_devices / listed);
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

std::vector<int64_t> TileLayout::Coords(int64_t device) const {
  return std::vector<int64_t>(t_->coords.begin() + device * rank(),
                              t_->coords.begin() + (device + 1) * rank());
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
  if (t_ != o.t_ && t_->coords != o.t_->coords) return false;
  if (partial_ > 1 && (partial_kind_ != o.partial_kind_ ||
                       (t_ != o.t_ && t_->partial_index != o.t_->partial_index))) {
    return false;
  }
  return true;
}

std::vector<std::vector<int64_t>> TileLayout::GroupsAlong(int64_t d) const {
  const int64_t n = num_devices();
  const int64_t size = d == kPartialAxis ? partial_ : tiles_[d];
  // Key: every coordinate except the one along d, in mixed radix (n / size values).
  std::vector<int64_t> group_of(n / size, -1);
  std::vector<std::vector<int64_t>> out;
  for (int64_t p = 0; p < n; ++p) {
    int64_t key = 0;
    for (int64_t k = 0; k < rank(); ++k) {
      if (k != d) key = key * tiles_[k] + Coord(p, k);
    }
    if (d != kPartialAxis) key = key * partial_ + PartialIndex(p);
    key = key * replicas_ + ReplicaIndex(p);
    int64_t& g = group_of[key];
    if (g < 0) {
      g = static_cast<int64_t>(out.size());
      out.emplace_back(size, -1);
    }
    out[g][d == kPartialAxis ? PartialIndex(p) : Coord(p, d)] = p;
  }
  return out;
}

TileLayout TileLayout::Gathered(int64_t d) const {
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

TileLayout TileLayout::Rotated(int64_t d, int64_t shift) const {
  TileLayout l = *this;
  auto t = std::make_shared<Tables>(*t_);
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
