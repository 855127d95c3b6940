#include "partitioner/sharding_transforms.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "partitioner/sharding_util.h"

namespace podsim::partitioner {

namespace {

using Kind = Sharding::Kind;

// Permutes the axes of a row-major device array: new axis a is old axis perm[a].
std::vector<int64_t> TransposeDevices(const std::vector<int64_t>& devices,
                                      const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& perm) {
  // Axes of size 1 do not affect the order: if the others keep their relative order, it is a
  // copy.
  bool identity = true;
  int64_t last = -1;
  for (int64_t a : perm) {
    if (dims[a] == 1) continue;
    identity = identity && a > last;
    last = a;
  }
  if (identity) return devices;
  const size_t n = dims.size();
  std::vector<int64_t> old_strides(n, 1);
  for (int64_t a = static_cast<int64_t>(n) - 2; a >= 0; --a) {
    old_strides[a] = old_strides[a + 1] * dims[a + 1];
  }
  std::vector<int64_t> new_dims(n), stride_of_new(n);
  for (size_t a = 0; a < n; ++a) {
    new_dims[a] = dims[perm[a]];
    stride_of_new[a] = old_strides[perm[a]];
  }
  std::vector<int64_t> out;
  out.reserve(devices.size());
  std::vector<int64_t> index(n, 0);
  for (size_t k = 0; k < devices.size(); ++k) {
    int64_t old_linear = 0;
    for (size_t a = 0; a < n; ++a) old_linear += index[a] * stride_of_new[a];
    out.push_back(devices[old_linear]);
    for (int64_t a = static_cast<int64_t>(n) - 1; a >= 0; --a) {
      if (++index[a] < new_dims[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

// The tile assignment of `s` with its axes permuted (new axis a = old axis perm[a]). The iota
// form stays an iota (its modes regrouped, O(rank)) unless the tile dims cut its modes at
// points that are not a mixed-radix split; then the list is materialized.
ir::DeviceList TransposedDevices(const Sharding& s, const std::vector<int64_t>& perm) {
  if (s.devices.is_iota()) {
    auto runs = ir::SplitModes(s.devices.iota().Modes(), s.tile_dims);
    if (runs) {
      std::vector<ir::StridedMode> modes;
      for (int64_t a : perm) modes.insert(modes.end(), (*runs)[a].begin(), (*runs)[a].end());
      if (auto iota = ir::IotaDevices::FromModes(modes)) return ir::DeviceList(std::move(*iota));
    }
  }
  return TransposeDevices(s.devices.ToVector(), s.tile_dims, perm);
}

// MergeShardings on two iota forms, by digits instead of by device (see MergeShardings): each
// tile dim of a and b is a run of atoms (common digits of the device ids); the merged sharding
// takes each tensor dim's atoms from whichever cuts it and puts the other atoms, in a's order,
// in the replicated dim. Returns nullopt (no merge) or a sharding; `unknown` is set when the
// digits do not line up and the caller must compare device by device.
std::optional<Sharding> MergeIota(const Sharding& a, const Sharding& b, int64_t rank,
                                  const std::vector<int64_t>& ta, const std::vector<int64_t>& tb,
                                  const std::vector<int64_t>& tc, bool* unknown) {
  *unknown = true;
  auto ra = ir::SplitModes(a.devices.iota().Modes(), a.tile_dims);
  auto rb = ir::SplitModes(b.devices.iota().Modes(), b.tile_dims);
  if (!ra || !rb) return std::nullopt;
  std::vector<std::vector<ir::StridedMode>> lists = *ra;
  lists.insert(lists.end(), rb->begin(), rb->end());
  auto refined = ir::RefineModes(lists, a.devices.size());
  if (!refined) return std::nullopt;
  *unknown = false;
  const size_t na = ra->size();
  std::vector<ir::StridedMode> modes;
  std::vector<int64_t> used;  // strides of the atoms taken
  for (int64_t d = 0; d < rank; ++d) {
    const std::vector<ir::StridedMode>& atoms_a = (*refined)[d];
    const std::vector<ir::StridedMode>& atoms_b = (*refined)[na + d];
    if (ta[d] > 1 && tb[d] > 1 && atoms_a != atoms_b) return std::nullopt;
    const std::vector<ir::StridedMode>& take = ta[d] > 1 ? atoms_a : atoms_b;
    if (tc[d] == 1) continue;
    for (const ir::StridedMode& m : take) {
      if (std::find(used.begin(), used.end(), m.stride) != used.end()) return std::nullopt;
      used.push_back(m.stride);
      modes.push_back(m);
    }
  }
  for (size_t d = 0; d < na; ++d) {
    for (const ir::StridedMode& m : (*refined)[d]) {
      if (std::find(used.begin(), used.end(), m.stride) == used.end()) modes.push_back(m);
    }
  }
  auto iota = ir::IotaDevices::FromModes(modes);
  if (!iota || iota->size() != a.devices.size()) return std::nullopt;
  int64_t parts = 1;
  for (int64_t t : tc) parts *= t;
  Sharding out;
  out.kind = Kind::kTiled;
  out.tile_dims = tc;
  out.devices = ir::DeviceList(std::move(*iota));
  const int64_t replicas = a.devices.size() / parts;
  if (replicas > 1) {
    out.tile_dims.push_back(replicas);
    out.last_tile_dim_replicate = true;
  }
  return Canonicalize(std::move(out), rank);
}

// Moves the listed tile axes (in order) to the front, every other axis after them (tensor axes
// in order, then the old replicated axis), and reshapes to `front_tile_dims` plus one trailing
// replicated dim holding the product of the rest.
Sharding Regroup(const Sharding& s, const std::vector<int64_t>& front_axes,
                 std::vector<int64_t> front_tile_dims, int64_t out_rank) {
  const int64_t num_axes = static_cast<int64_t>(s.tile_dims.size());
  std::vector<bool> used(num_axes, false);
  std::vector<int64_t> perm;
  for (int64_t a : front_axes) {
    used[a] = true;
    perm.push_back(a);
  }
  int64_t rest = 1;
  for (int64_t a = 0; a < num_axes; ++a) {
    if (used[a]) continue;
    perm.push_back(a);
    rest *= s.tile_dims[a];
  }
  Sharding out;
  out.kind = Kind::kTiled;
  out.devices = TransposedDevices(s, perm);
  out.tile_dims = std::move(front_tile_dims);
  if (rest > 1) {
    out.tile_dims.push_back(rest);
    out.last_tile_dim_replicate = true;
  }
  return Canonicalize(std::move(out), out_rank);
}

int64_t Product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t k = begin; k < end; ++k) p *= v[k];
  return p;
}

}  // namespace

int64_t PartitionedTiles(const Sharding& s) {
  return s.kind == Kind::kTiled ? NumTiles(s) / ReplicationFactor(s) : 1;
}

Sharding Canonicalize(Sharding s, int64_t rank) {
  if (s.kind != Kind::kTiled) return s;
  if (s.last_tile_dim_replicate && !s.tile_dims.empty() && s.tile_dims.back() == 1) {
    s.tile_dims.pop_back();
    s.last_tile_dim_replicate = false;
  }
  const int64_t n = std::min<int64_t>(rank, static_cast<int64_t>(s.tile_dims.size()));
  if (Product(s.tile_dims, 0, n) == 1) return Sharding::Replicated();
  return s;
}

Sharding MapTileDims(const Sharding& s, int64_t in_rank,
                     const std::vector<int64_t>& source_of_out_dim) {
  if (s.kind != Kind::kTiled) return s;
  const int64_t out_rank = static_cast<int64_t>(source_of_out_dim.size());
  std::vector<int64_t> front_axes, front_dims;
  std::vector<bool> taken(in_rank, false);
  for (int64_t src : source_of_out_dim) {
    if (src >= 0 && src < in_rank && !taken[src]) {
      taken[src] = true;
      front_axes.push_back(src);
      front_dims.push_back(s.tile_dims[src]);
    } else {
      front_dims.push_back(1);
    }
  }
  return Regroup(s, front_axes, std::move(front_dims), out_rank);
}

Sharding ReshapeSharding(const Sharding& s, const std::vector<int64_t>& in_dims,
                         const std::vector<int64_t>& out_dims) {
  const int64_t out_rank = static_cast<int64_t>(out_dims.size());
  if (s.kind != Kind::kTiled) return s;
  const size_t n = in_dims.size(), m = out_dims.size();
  if (Product(in_dims, 0, n) != Product(out_dims, 0, m) || Product(in_dims, 0, n) == 0) {
    return Sharding::Replicated();
  }
  const std::vector<int64_t> t = TensorTileDims(s, static_cast<int64_t>(n));
  std::vector<int64_t> front_axes;
  std::vector<int64_t> out_tiles(m, 1);
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && in_dims[i] == 1) {  // a size-1 input dim is its own group; its tiles drop
      ++i;
      continue;
    }
    if (j < m && out_dims[j] == 1) {
      ++j;
      continue;
    }
    if (i >= n || j >= m) return Sharding::Replicated();  // unreachable for equal products
    const size_t i0 = i, j0 = j;
    int64_t pi = in_dims[i++], pj = out_dims[j++];
    while (pi != pj) {
      if (pi < pj) {
        if (i >= n) return Sharding::Replicated();
        pi *= in_dims[i++];
      } else {
        if (j >= m) return Sharding::Replicated();
        pj *= out_dims[j++];
      }
    }
    // Input axes of this group that keep their tiles, and the tiles of its output dims.
    std::vector<int64_t> kept;
    std::vector<int64_t> tiles(j - j0, 1);
    if (i - i0 == 1 && j - j0 == 1) {  // 1:1: any tiling carries over, uneven included
      if (t[i0] > 1) kept.push_back(static_cast<int64_t>(i0));
      tiles[0] = t[i0];
    } else {
      // Merge: the major-most run of cut dims, each fully split except the last, which must
      // divide evenly; only size-1 dims may sit before or between them.
      size_t expect_from = i0;  // dims in [expect_from, k) must have size 1
      for (size_t k = i0; k < i; ++k) {
        if (t[k] == 1) continue;
        bool ok = true;
        for (size_t q = expect_from; q < k; ++q) ok = ok && in_dims[q] == 1;
        if (!kept.empty()) ok = ok && in_dims[kept.back()] == t[kept.back()];
        if (!ok) break;
        kept.push_back(static_cast<int64_t>(k));
        expect_from = k + 1;
      }
      if (!kept.empty() && in_dims[kept.back()] % t[kept.back()] != 0) kept.pop_back();
      // Split: the merged tiles go to the major output dims.
      int64_t rem = 1;
      for (int64_t k : kept) rem *= t[k];
      for (size_t o = j0; o < j && rem > 1; ++o) {
        const int64_t extent = out_dims[o];
        if (extent == 1) continue;
        const int64_t take = std::min(rem, extent);
        if (std::max(rem, extent) % take != 0) break;
        tiles[o - j0] = take;
        rem /= take;
      }
      if (rem != 1) {  // the tiles do not line up with the output dims: drop the group's tiles
        kept.clear();
        std::fill(tiles.begin(), tiles.end(), 1);
      }
    }
    front_axes.insert(front_axes.end(), kept.begin(), kept.end());
    std::copy(tiles.begin(), tiles.end(), out_tiles.begin() + j0);
  }
  return Regroup(s, front_axes, std::move(out_tiles), out_rank);
}

std::optional<Sharding> MergeShardings(const Sharding& a, const Sharding& b, int64_t rank) {
  if (a == b) return a;
  if (a.kind == Kind::kReplicated && b.kind == Kind::kTiled) return b;
  if (b.kind == Kind::kReplicated && a.kind == Kind::kTiled) return a;
  if (a.kind != Kind::kTiled || b.kind != Kind::kTiled) return std::nullopt;
  if (a.devices.size() != b.devices.size()) return std::nullopt;
  const std::vector<int64_t> ta = TensorTileDims(a, rank), tb = TensorTileDims(b, rank);
  std::vector<int64_t> tc(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (ta[d] == tb[d] || tb[d] == 1) {
      tc[d] = ta[d];
    } else if (ta[d] == 1) {
      tc[d] = tb[d];
    } else {
      return std::nullopt;
    }
  }
  const int64_t n = a.devices.size();
  const int64_t parts = Product(tc, 0, tc.size());
  if (n % parts != 0) return std::nullopt;
  if (a.devices.is_iota() && b.devices.is_iota()) {
    bool unknown = false;
    std::optional<Sharding> merged = MergeIota(a, b, rank, ta, tb, tc, &unknown);
    if (!unknown) return merged;
  }
  const int64_t replicas = n / parts;
  // Tile coordinates of every device under b.
  std::unordered_map<int64_t, int64_t> b_linear;
  b_linear.reserve(n);
  for (int64_t k = 0; k < n; ++k) b_linear.emplace(b.devices[k], k);
  auto coords = [&](int64_t linear, const std::vector<int64_t>& dims) {
    std::vector<int64_t> c(dims.size());
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      c[d] = linear % dims[d];
      linear /= dims[d];
    }
    return c;
  };
  std::vector<std::vector<int64_t>> groups(parts);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t dev = a.devices[k];
    auto it = b_linear.find(dev);
    if (it == b_linear.end()) return std::nullopt;  // different device sets
    const std::vector<int64_t> ia = coords(k, a.tile_dims), ib = coords(it->second, b.tile_dims);
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (ta[d] > 1 && tb[d] > 1 && ia[d] != ib[d]) return std::nullopt;
      linear = linear * tc[d] + (ta[d] > 1 ? ia[d] : ib[d]);
    }
    groups[linear].push_back(dev);
  }
  Sharding out;
  out.kind = Kind::kTiled;
  out.tile_dims = tc;
  std::vector<int64_t> devices;
  for (const auto& g : groups) {
    if (static_cast<int64_t>(g.size()) != replicas) return std::nullopt;
    devices.insert(devices.end(), g.begin(), g.end());
  }
  out.devices = std::move(devices);
  if (replicas > 1) {
    out.tile_dims.push_back(replicas);
    out.last_tile_dim_replicate = true;
  }
  return Canonicalize(std::move(out), rank);
}

bool CanonicalLess(const Sharding& a, const Sharding& b) {
  return std::tie(a.kind, a.tile_dims, a.devices, a.last_tile_dim_replicate, a.device) <
         std::tie(b.kind, b.tile_dims, b.devices, b.last_tile_dim_replicate, b.device);
}

}  // namespace podsim::partitioner
