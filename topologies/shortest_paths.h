#pragma once
// Shortest-path routing over a chip graph (twisted tori, custom topologies), with Boost.Graph:
// BFS for hop count, Dijkstra for latency. Next-hop tables are built per destination on first
// use (thread-safe) and kept: 4 bytes per (chip, destination) pair.
//
// Deterministic ties: from each chip, the route takes the lowest-id link that starts a shortest
// path to the destination.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "topologies/config.h"
#include "topologies/topology.h"

namespace podsim::topo {

class ShortestPathRouter {
 public:
  // Routes over the ICI links (LinkKind::kIci) of `links` between chips 0 .. num_chips-1.
  ShortestPathRouter(int64_t num_chips, const std::vector<Link>& links, RouteMetric metric);
  ~ShortestPathRouter();
  ShortestPathRouter(const ShortestPathRouter&) = delete;
  ShortestPathRouter& operator=(const ShortestPathRouter&) = delete;

  // Directed link ids from src_chip to dst_chip in hop order; empty when they are equal.
  // Throws ConfigError if dst_chip cannot be reached.
  std::vector<int64_t> Route(int64_t src_chip, int64_t dst_chip) const;
  // Length of Route(src_chip, dst_chip).
  int64_t Hops(int64_t src_chip, int64_t dst_chip) const;
  // The largest Hops over all chip pairs (builds every table: O(chips^2) memory).
  int64_t Diameter() const;
  // Mean Hops over all ordered pairs of distinct chips (builds every table).
  double MeanHops() const;

 private:
  struct Graph;
  // Cost of the shortest path from every chip to dst (INT64_MAX: unreachable).
  std::vector<int64_t> Distances(int64_t dst) const;
  // next[chip] = the link to take from chip towards dst (-1 at dst or when unreachable).
  const std::vector<int32_t>& NextHops(int64_t dst) const;
  // RequireMemory for every table (Diameter and MeanHops build them all).
  void RequireAllTables() const;
  // Route lengths of every chip to dst.
  std::vector<int64_t> HopsTo(int64_t dst) const;

  int64_t num_chips_;
  RouteMetric metric_;
  std::vector<int64_t> out_begin_;  // CSR: links out of chip c are out_ids_[out_begin_[c]..]
  std::vector<int32_t> out_ids_;    // ascending link id per chip
  std::vector<int64_t> link_dst_;   // by link id
  std::vector<int64_t> link_cost_;  // by link id: 1 (hops) or latency_ps
  std::unique_ptr<Graph> reverse_graph_;
  std::unique_ptr<std::once_flag[]> once_;
  mutable std::vector<std::vector<int32_t>> next_;  // [dst][chip]
};

}  // namespace podsim::topo
