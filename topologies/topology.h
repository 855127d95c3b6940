#pragma once
// A pod as a graph: chips with coordinates, cores (the partitions) on chips, and directed links.
// It answers Route(src_core, dst_core) as a list of directed link ids; it knows nothing of time.
//
// Numbering (all topologies):
// - Core (= partition id) c lives on chip c / cores_per_chip(), as local core c % cores_per_chip().
// - Grid topologies number chips row-major over their coordinates, the last coordinate varying
//   fastest: chip = ((x0 * d1 + x1) * d2 + x2) ... (ChipCoords / ChipAt convert).
// - Link ids are dense, 0 .. links().size()-1; links()[i].id == i.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/units.h"

namespace podsim::topo {

enum class LinkKind : uint8_t { kIci, kOnChip };

// One direction of one physical link.
struct Link {
  int64_t id = 0;
  int64_t src_chip = 0;
  int64_t dst_chip = 0;
  LinkKind kind = LinkKind::kIci;
  BytesPerSecond bandwidth;          // per direction, > 0; already multiplied by parallel_links
  Time latency;                      // per hop, > 0
  int dim = -1;                      // torus dimension it runs along (-1: custom / on-chip)
  int direction = 0;                 // +1 or -1 along dim (0: custom / on-chip)
  int64_t src_core = -1;             // on-chip links: the sending core (-1 for ICI links)
  int64_t dst_core = -1;             // on-chip links: the receiving core (-1 for ICI links)
  int parallel_links = 1;            // physical links merged into this one (links_per_neighbor)
};

// How a route picks a direction when the destination is exactly half a ring away.
// kPositive: always +1. kSplit: Route() takes the + half, RouteSplit() both at 0.5 each.
// kAlternate: + when (source chip's coordinate on that dimension + source local core) is even.
enum class TieBreak : uint8_t { kPositive, kSplit, kAlternate };

// The shape of a torus / mesh (grid) topology.
struct GridShape {
  std::vector<int64_t> dims;     // chips along each dimension, each >= 1
  std::vector<bool> wraparound;  // per dimension: ring (true) or line (false)
  // Twisted torus: crossing the wraparound of a twisted dimension d in the + direction also
  // shifts every other coordinate e by twist_offsets[d][e] (mod dims[e]); the - direction shifts
  // back. twist_offsets[d] is empty when d is not twisted (and twist_offsets is empty when no
  // dimension is).
  std::vector<std::vector<int64_t>> twist_offsets;

  bool Twisted(size_t d) const { return d < twist_offsets.size() && !twist_offsets[d].empty(); }
  bool AnyTwist() const { return !twist_offsets.empty(); }
};

class Topology {
 public:
  virtual ~Topology() = default;

  virtual std::string name() const = 0;
  virtual int64_t num_chips() const = 0;
  virtual int64_t cores_per_chip() const = 0;
  int64_t num_cores() const { return num_chips() * cores_per_chip(); }
  // Core (partition id) c lives on chip c / cores_per_chip().
  int64_t ChipOfCore(int64_t core) const { return core / cores_per_chip(); }
  // Index of the core on its chip, 0 .. cores_per_chip()-1.
  int64_t LocalCore(int64_t core) const { return core % cores_per_chip(); }

  virtual const std::vector<Link>& links() const = 0;
  // Directed link ids from src_core's chip to dst_core's chip, in hop order. Same chip, different
  // cores: the on-chip link. Same core: empty. With TieBreak::kSplit a tie returns one of the
  // halves; RouteSplit gives both with their byte fractions.
  virtual std::vector<int64_t> Route(int64_t src_core, int64_t dst_core) const = 0;
  // Appends Route(src_core, dst_core) to `out`: lets a caller keep every route of a collective
  // in one flat array. Tori do it without allocating (beyond growing `out`).
  virtual void AppendRoute(int64_t src_core, int64_t dst_core, std::vector<int64_t>& out) const {
    const std::vector<int64_t> route = Route(src_core, dst_core);
    out.insert(out.end(), route.begin(), route.end());
  }
  // All paths a transfer is split over, with the fraction of bytes on each (fractions sum to 1).
  struct WeightedPath {
    std::vector<int64_t> links;
    double fraction = 1.0;
  };
  virtual std::vector<WeightedPath> RouteSplit(int64_t src_core, int64_t dst_core) const {
    return {{Route(src_core, dst_core), 1.0}};
  }
  // RouteSplit into reusable storage: sets out[0 .. n) to the paths and returns n. `out` keeps
  // any longer tail, so a caller that passes the same vector every time reuses its path buffers
  // (tori route without allocating once they have grown).
  virtual size_t RouteSplitInto(int64_t src_core, int64_t dst_core,
                                std::vector<WeightedPath>& out) const {
    std::vector<WeightedPath> paths = RouteSplit(src_core, dst_core);
    if (out.size() < paths.size()) out.resize(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) out[i] = std::move(paths[i]);
    return paths.size();
  }
  // Number of links on Route(src_core, dst_core) (every split path has the same length).
  virtual int64_t Hops(int64_t src_core, int64_t dst_core) const {
    return static_cast<int64_t>(Route(src_core, dst_core).size());
  }

  // Torus / mesh shape; nullptr for custom graphs.
  virtual const GridShape* grid() const { return nullptr; }
  // Coordinates of a chip on the grid (row-major, last fastest); {chip} for custom graphs.
  std::vector<int64_t> ChipCoords(int64_t chip) const {
    const GridShape* g = grid();
    if (g == nullptr) return {chip};
    std::vector<int64_t> coords(g->dims.size());
    for (size_t d = g->dims.size(); d-- > 0;) {
      coords[d] = chip % g->dims[d];
      chip /= g->dims[d];
    }
    return coords;
  }
  // Inverse of ChipCoords (coordinates must be in range).
  int64_t ChipAt(const std::vector<int64_t>& coords) const {
    const GridShape* g = grid();
    if (g == nullptr) return coords.empty() ? 0 : coords[0];
    int64_t chip = 0;
    for (size_t d = 0; d < g->dims.size(); ++d) chip = chip * g->dims[d] + coords[d];
    return chip;
  }

  // The fully resolved config: LoadTopology(ToJson(), ...) rebuilds an identical topology.
  virtual nlohmann::json ToJson() const;
  // Human-readable description: dims, wraparound, links, core numbering.
  virtual std::string Describe() const = 0;
};

}  // namespace podsim::topo
