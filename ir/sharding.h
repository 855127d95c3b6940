#pragma once
// How a tensor is laid out over devices (GShard / XLA HloSharding): replicated, maximal (on one
// device), tiled over a device array (one tile dim per tensor dim, optionally a trailing
// replicated tile dim), or manual (per-partition code the partitioner leaves as written).
//
// A tiled sharding's device array (the tile assignment, row-major over tile_dims) is either an
// explicit list or the compact iota form of ir/iota.h (XLA's IotaTileAssignment): Split(x, 0, D)
// is "{devices=[D,1]<=[D]}" whatever D, so shardings, and everything the partitioner derives
// from them, cost O(rank) instead of O(D). Both forms answer the same questions (the device at a
// tile, the tile of a device, equality) and compare equal when they list the same devices.

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/iota.h"

namespace podsim::ir {

// The devices of a tile assignment in row-major tile order: explicit, or an IotaDevices.
class DeviceList {
 public:
  DeviceList() = default;
  DeviceList(std::vector<int64_t> devices) : list_(std::move(devices)) {}  // NOLINT: implicit
  DeviceList(std::initializer_list<int64_t> devices) : list_(devices) {}
  explicit DeviceList(IotaDevices iota) : iota_(std::move(iota)) {}

  bool is_iota() const { return iota_.has_value(); }
  // The compact form; requires is_iota().
  const IotaDevices& iota() const { return *iota_; }
  int64_t size() const {
    return iota_ ? iota_->size() : static_cast<int64_t>(list_.size());
  }
  bool empty() const { return size() == 0; }
  // Device at position k in [0, size()).
  int64_t operator[](int64_t k) const { return iota_ ? iota_->At(k) : list_[k]; }
  // Position of `device`, -1 when absent: O(rank) for the iota form, O(N) for a list.
  int64_t PositionOf(int64_t device) const;
  // The devices as a list (O(N): for printing, protobuf and small-mesh code only).
  std::vector<int64_t> ToVector() const { return iota_ ? iota_->ToVector() : list_; }
  // "0,1,2,3" or "<=[2,2]T(1,0)".
  std::string ToString() const;
  // Same devices in the same order (whatever the forms).
  bool operator==(const DeviceList& o) const;
  // Lexicographic order of the device sequences (compares only up to the first difference).
  bool operator<(const DeviceList& o) const;

  // Reads the devices one by one (computed for the iota form).
  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = int64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = const int64_t*;
    using reference = int64_t;
    const_iterator() = default;
    const_iterator(const DeviceList* list, int64_t k) : list_(list), k_(k) {}
    int64_t operator*() const { return (*list_)[k_]; }
    const_iterator& operator++() {
      ++k_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++k_;
      return old;
    }
    bool operator==(const const_iterator& o) const { return k_ == o.k_; }

   private:
    const DeviceList* list_ = nullptr;
    int64_t k_ = 0;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

 private:
  std::vector<int64_t> list_;
  std::optional<IotaDevices> iota_;
};

struct Sharding {
  enum class Kind : uint8_t { kReplicated, kMaximal, kTiled, kManual };
  Kind kind = Kind::kReplicated;
  int64_t device = 0;                   // kMaximal
  std::vector<int64_t> tile_dims;       // kTiled: tile-assignment shape
  DeviceList devices;                   // kTiled: row-major tile assignment, a permutation
  bool last_tile_dim_replicate = false; // kTiled: trailing tile dim replicates

  static Sharding Replicated() { return {}; }
  static Sharding Manual() { Sharding s; s.kind = Kind::kManual; return s; }
  static Sharding Maximal(int64_t device);
  static Sharding Tiled(std::vector<int64_t> tile_dims, DeviceList devices,
                        bool last_tile_dim_replicate = false);
  // Tiled over devices 0..N-1 in order (N = product of tile_dims), in the iota form.
  static Sharding TiledIota(std::vector<int64_t> tile_dims, bool last_tile_dim_replicate = false);

  // Number of devices in the tile assignment (tiled), else 0.
  int64_t NumDevices() const { return kind == Kind::kTiled ? devices.size() : 0; }
  // Device at tile coordinates `index` (one per tile dim, row-major); requires kTiled.
  int64_t DeviceAt(const std::vector<int64_t>& index) const;
  // Tile coordinates of `device` (one per tile dim); empty when it is not in the assignment or
  // the sharding is not tiled.
  std::vector<int64_t> TileIndexOf(int64_t device) const;
  // Per-device extents of a tensor of `dims` (ceil division by the tiles; `dims` unchanged
  // unless tiled with a tile dim per tensor dim).
  std::vector<int64_t> ShardDims(std::vector<int64_t> dims) const;

  // "{replicated}", "{maximal device=0}", "{manual}", "{devices=[4,1]0,1,2,3}",
  // "{devices=[4,1]<=[4]}", "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}".
  std::string ToString() const;
  // Parses ToString's form; throws podsim::Error saying what is wrong (offset into text).
  static Sharding Parse(std::string_view text);

  bool operator==(const Sharding&) const = default;
};

// The sharding of a stack [n, dims...] of values sharded like `s`: the stacking dim whole, the
// rest as `s` (a tiled sharding gains a leading tile dim of 1; any other is unchanged).
std::optional<Sharding> StackedSharding(std::optional<Sharding> s);

}  // namespace podsim::ir
