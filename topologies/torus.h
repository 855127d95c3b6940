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
// Routing (untwisted): dimension order, dim 0 first; on a ring the shorter way round; a
// destination exactly half a ring away is a tie, resolved by the config's TieBreak. Computed
// arithmetically: no allocation beyond the returned vector. Twisted tori are routed by BFS
// shortest paths (ShortestPathRouter; ties to the lowest link id, tie_break does not apply).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "topologies/config.h"
#include "topologies/topology.h"

namespace podsim::topo {

class ShortestPathRouter;

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
  bool twisted() const { return grid_.twist_dim >= 0; }
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
  // Legs of the dimension-order route between two distinct chips; returns the total hops.
  int64_t PlanLegs(int64_t src_chip, int64_t dst_chip, int64_t src_local, Leg* legs) const;
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
  std::unique_ptr<ShortestPathRouter> router_;  // twisted tori only
};

}  // namespace podsim::topo
