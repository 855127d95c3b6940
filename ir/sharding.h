#pragma once
// How a tensor is laid out over devices (GShard / XLA HloSharding): replicated, maximal (on one
// device), tiled over a device array (one tile dim per tensor dim, optionally a trailing
// replicated tile dim), or manual (per-partition code the partitioner leaves as written).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::ir {

struct Sharding {
  enum class Kind : uint8_t { kReplicated, kMaximal, kTiled, kManual };
  Kind kind = Kind::kReplicated;
  int64_t device = 0;                   // kMaximal
  std::vector<int64_t> tile_dims;       // kTiled: tile-assignment shape
  std::vector<int64_t> devices;         // kTiled: row-major tile assignment, a permutation
  bool last_tile_dim_replicate = false; // kTiled: trailing tile dim replicates

  static Sharding Replicated() { return {}; }
  static Sharding Manual() { Sharding s; s.kind = Kind::kManual; return s; }
  static Sharding Maximal(int64_t device);
  static Sharding Tiled(std::vector<int64_t> tile_dims, std::vector<int64_t> devices,
                        bool last_tile_dim_replicate = false);

  // "{replicated}", "{maximal device=0}", "{manual}",
  // "{devices=[4,1]0,1,2,3}", "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}".
  std::string ToString() const;
  // Parses ToString's form; throws podsim::Error saying what is wrong (offset into text).
  static Sharding Parse(std::string_view text);

  bool operator==(const Sharding&) const = default;
};

}  // namespace podsim::ir
