#pragma once
// A topology from a JSON edge list: chips 0 .. num_chips-1, each edge a bidirectional link
// (edge i is directed links 2i: a->b and 2i+1: b->a), on-chip links after them. Routed by
// shortest paths (Boost.Graph BFS on hops, or Dijkstra on latency), ties to the lowest link id.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "topologies/config.h"
#include "topologies/topology.h"

namespace podsim::topo {

class ShortestPathRouter;

class CustomTopology final : public Topology {
 public:
  // config.kind must be "custom"; Validate("topology") runs first (edges name existing chips,
  // no self loops or duplicates, connected graph).
  explicit CustomTopology(TopologyConfig config);
  ~CustomTopology() override;

  std::string name() const override { return name_; }
  int64_t num_chips() const override { return config_.num_chips; }
  int64_t cores_per_chip() const override { return config_.cores_per_chip; }
  const std::vector<Link>& links() const override { return links_; }
  std::vector<int64_t> Route(int64_t src_core, int64_t dst_core) const override;
  int64_t Hops(int64_t src_core, int64_t dst_core) const override;
  nlohmann::json ToJson() const override;
  std::string Describe() const override;

  const TopologyConfig& config() const { return config_; }
  // Largest chip-to-chip route length (builds every next-hop table).
  int64_t Diameter() const;
  // Mean chip-to-chip route length over ordered pairs of distinct chips.
  double MeanHops() const;

 private:
  void CheckCore(int64_t core) const;

  TopologyConfig config_;
  std::string name_;
  std::vector<Link> links_;
  int64_t first_on_chip_link_ = 0;
  std::unique_ptr<ShortestPathRouter> router_;
};

}  // namespace podsim::topo
