#pragma once
// An N-dimensional torus / mesh of chips (wraparound per dimension), optionally twisted.
//
// Links: each chip has one directed ICI link per (dimension, direction) that leads somewhere,
// numbered by (chip, dimension, direction + then -). A mesh dimension has none past its ends; a
// dimension of size 1 has none. A wrapped dimension of size 2 has two distinct links each way
// between its two chips (the direct one and the wraparound one), like any ring: its + and -
// neighbours are the same chip. links_per_neighbor parallel physical links between two chips are
// one Link with links_per_neighbor x link_bandwidth (Link::parallel_links records the count).
// On-chip links follow the ICI links (see on_chip_links.h).
//
// Routing: dimension order, dim 0 first; on a ring the shorter way round; a destination exactly
// half a ring away is a tie, resolved by the config's TieBreak. Computed arithmetically: no
// allocation beyond the returned vector.
//
// Twisted tori are routed in the universal cover. With the twists allowed (a twist shifts only
// untwisted wrapped dimensions) the chips are the group Z^n / L and the links its generators
// +-e_d, where L is spanned by n_d e_d - o_d for each twisted dimension d (o_d: its offsets) and
// n_e e_e for each untwisted wrapped one. The walks from s to t are then the vectors
// (t - s) + L; the shortest routes are the dimension-order walks along those of least L1 length,
// found by choosing how many times (a_d) each twisted wraparound is crossed, the untwisted rings
// then taking the shorter way round. Every minimum is a shortest path of the graph (a test checks
// against BFS); when several choices of a tie (the twisted wrap or the plain way is as short), the
// tie is resolved by tie_break like a half-ring tie, so "split" spreads a transfer over them.
// The choices depend only on t - s in box coordinates and are cached per difference.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "topologies/config.h"
#include "topologies/topology.h"

namespace podsim::topo {

class TorusTopology final : public Topology {
 public:
  // config.kind must be "torus" or "mesh"; Validate("topology") runs first.
  explicit TorusTopology(TopologyConfig config);
  ~TorusTopology() override;

  std::string name() const override { return name_; }
  int64_t num_chips() const override { return num_chips_; }
  int64_t cores_per_chip() const override { return config_.cores_per_chip; }
  const std::vector<Link>& links() const override { return links_; }
  std::vector<int64_t> Route(int64_t src_core, int64_t dst_core) const override;
  void AppendRoute(int64_t src_core, int64_t dst_core, std::vector<int64_t>& out) const override;
  std::vector<WeightedPath> RouteSplit(int64_t src_core, int64_t dst_core) const override;
  size_t RouteSplitInto(int64_t src_core, int64_t dst_core,
                        std::vector<WeightedPath>& out) const override;
  int64_t Hops(int64_t src_core, int64_t dst_core) const override;
  const GridShape* grid() const override { return &grid_; }
  nlohmann::json ToJson() const override;
  std::string Describe() const override;

  const TopologyConfig& config() const { return config_; }
  bool twisted() const { return grid_.AnyTwist(); }
  // The ICI link leaving `chip` along `dim` in `direction` (+1 or -1); -1 if there is none.
  int64_t NeighborLink(int64_t chip, int dim, int direction) const;
  // Largest chip-to-chip hop count over all chip pairs.
  int64_t Diameter() const;
  // Mean chip-to-chip hop count over ordered pairs of distinct chips (0 for one chip).
  double MeanHops() const;

 private:
  static constexpr int kMaxDims = 8;
  // The part of a route along one dimension.
  struct Leg {
    int64_t steps = 0;
    int direction = 0;  // +1 / -1
    bool tie = false;   // exactly half a ring: the other direction is as short
  };
  void BuildLinks();
  // Legs of the dimension-order route between two distinct chips; returns the total hops. On a
  // twisted torus `wraps` holds a_d, the crossings of each twisted wraparound (in the order of
  // twisted_dims_); nullptr on a plain one.
  int64_t PlanLegs(int64_t src_chip, int64_t dst_chip, int64_t src_local, const int16_t* wraps,
                   Leg* legs) const;
  // Twisted tori: the shortest choices of a (twisted_dims_.size() entries each) for the chip
  // pair, `count` of them: in the cache, or (when there is none) solved into `scratch`.
  const int16_t* ShortestWraps(int64_t src_chip, int64_t dst_chip, std::vector<int16_t>& scratch,
                               size_t& count) const;
  // The choices for a box-coordinate difference (cache index `key`), solved afresh.
  void SolveWraps(const int64_t* delta, std::vector<int16_t>& out) const;
  // Twisted tori: chips from which every distance occurs (see Diameter).
  std::vector<int64_t> TwistedRepresentatives() const;
  // Index of the difference between two chips into the wrap cache.
  int64_t DeltaKey(int64_t src_chip, int64_t dst_chip) const;
  // Writes the links of `legs` from src_chip to out[0..hops); legs whose bit is set in `flip`
  // (a tie) go the other way round.
  void WriteLegs(int64_t src_chip, const Leg* legs, uint32_t flip, int64_t* out) const;
  void CheckCore(int64_t core) const;

  TopologyConfig config_;
  std::string name_;
  GridShape grid_;
  int ndims_ = 0;
  int64_t num_chips_ = 0;
  int64_t num_cores_ = 0;
  std::vector<int64_t> strides_;
  std::vector<int32_t> coords_;         // [chip * ndims + dim]: the chip's coordinate  // chip index step per dimension
  std::vector<Link> links_;
  std::vector<int32_t> neighbor_link_;  // [(chip * ndims + dim) * 2 + (direction < 0)]
  int64_t first_on_chip_link_ = 0;
  std::vector<int> twisted_dims_;        // ascending
  // Cached ShortestWraps per box-coordinate difference (when there are at most 2^22 of them):
  // the choices of difference k are wrap_choices_[wrap_begin_[k] .. wrap_begin_[k + 1]).
  std::vector<int32_t> wrap_begin_;
  std::vector<int16_t> wrap_choices_;
};

}  // namespace podsim::topo
