#include "topologies/shortest_paths.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "base/config.h"
#include "base/memory.h"

// GCC 12 reports a false -Wmaybe-uninitialized inside Boost.Graph's adjacency_list edge
// iterator (a boost::optional) when dijkstra_shortest_paths is instantiated; silence it for
// this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/visitors.hpp>

namespace podsim::topo {

constexpr int64_t kUnreachable = std::numeric_limits<int64_t>::max();

// Edges run from a link's destination to its source, so one search from a destination gives
// every chip's distance to it.
struct ShortestPathRouter::Graph {
  using Type = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                     boost::property<boost::edge_weight_t, int64_t>>;
  Type g;
};

ShortestPathRouter::ShortestPathRouter(int64_t num_chips, const std::vector<Link>& links,
                                       RouteMetric metric)
    : num_chips_(num_chips),
      metric_(metric),
      out_begin_(num_chips + 1, 0),
      link_dst_(links.size(), -1),
      link_cost_(links.size(), 1),
      reverse_graph_(std::make_unique<Graph>()),
      once_(std::make_unique<std::once_flag[]>(num_chips)),
      next_(num_chips) {
  reverse_graph_->g = Graph::Type(num_chips);
  for (const Link& l : links) {
    if (l.kind != LinkKind::kIci) continue;
    ++out_begin_[l.src_chip + 1];
    link_dst_[l.id] = l.dst_chip;
    link_cost_[l.id] = metric == RouteMetric::kLatency ? l.latency.picos() : 1;
    boost::add_edge(l.dst_chip, l.src_chip, link_cost_[l.id], reverse_graph_->g);
  }
  std::partial_sum(out_begin_.begin(), out_begin_.end(), out_begin_.begin());
  out_ids_.resize(out_begin_.back());
  std::vector<int64_t> fill(out_begin_.begin(), out_begin_.end() - 1);
  for (const Link& l : links) {  // links are in ascending id order, so each chip's list is too
    if (l.kind == LinkKind::kIci) out_ids_[fill[l.src_chip]++] = static_cast<int32_t>(l.id);
  }
}

ShortestPathRouter::~ShortestPathRouter() = default;

std::vector<int64_t> ShortestPathRouter::Distances(int64_t dst) const {
  const Graph::Type& g = reverse_graph_->g;
  std::vector<int64_t> dist(num_chips_, kUnreachable);
  if (metric_ == RouteMetric::kHops) {
    dist[dst] = 0;
    boost::breadth_first_search(g, boost::vertex(dst, g),
                                boost::visitor(boost::make_bfs_visitor(
                                    boost::record_distances(dist.data(), boost::on_tree_edge()))));
  } else {
    boost::dijkstra_shortest_paths(g, boost::vertex(dst, g),
                                   boost::distance_map(boost::make_iterator_property_map(
                                       dist.begin(), boost::get(boost::vertex_index, g))));
  }
  return dist;
}

const std::vector<int32_t>& ShortestPathRouter::NextHops(int64_t dst) const {
  std::call_once(once_[dst], [this, dst] {
    const std::vector<int64_t> dist = Distances(dst);
    std::vector<int32_t> next(num_chips_, -1);
    for (int64_t u = 0; u < num_chips_; ++u) {
      if (u == dst || dist[u] == kUnreachable) continue;
      for (int64_t k = out_begin_[u]; k < out_begin_[u + 1]; ++k) {
        const int32_t link = out_ids_[k];
        const int64_t v = link_dst_[link];
        if (dist[v] != kUnreachable && dist[v] + link_cost_[link] == dist[u]) {
          next[u] = link;
          break;
        }
      }
    }
    next_[dst] = std::move(next);
  });
  return next_[dst];
}

std::vector<int64_t> ShortestPathRouter::Route(int64_t src_chip, int64_t dst_chip) const {
  std::vector<int64_t> route;
  if (src_chip == dst_chip) return route;
  const std::vector<int32_t>& next = NextHops(dst_chip);
  route.reserve(16);
  for (int64_t cur = src_chip; cur != dst_chip; cur = link_dst_[route.back()]) {
    if (next[cur] < 0) {
      throw ConfigError("no route from chip " + std::to_string(src_chip) + " to chip " +
                        std::to_string(dst_chip));
    }
    route.push_back(next[cur]);
  }
  return route;
}

int64_t ShortestPathRouter::Hops(int64_t src_chip, int64_t dst_chip) const {
  const std::vector<int32_t>& next = NextHops(dst_chip);
  int64_t hops = 0;
  for (int64_t cur = src_chip; cur != dst_chip; cur = link_dst_[next[cur]]) {
    if (next[cur] < 0) {
      throw ConfigError("no route from chip " + std::to_string(src_chip) + " to chip " +
                        std::to_string(dst_chip));
    }
    ++hops;
  }
  return hops;
}

std::vector<int64_t> ShortestPathRouter::HopsTo(int64_t dst) const {
  const std::vector<int32_t>& next = NextHops(dst);
  const std::vector<int64_t> dist = Distances(dst);
  // A chip's next hop is strictly closer (costs are >= 1), so ascending distance order visits
  // it first.
  std::vector<int64_t> order(num_chips_);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return dist[a] < dist[b]; });
  std::vector<int64_t> hops(num_chips_, -1);
  for (int64_t u : order) {
    if (u == dst) {
      hops[u] = 0;
    } else if (next[u] >= 0) {
      hops[u] = hops[link_dst_[next[u]]] + 1;
    }
  }
  return hops;
}

void ShortestPathRouter::RequireAllTables() const {
  const double chips = static_cast<double>(num_chips_);
  RequireMemory(chips * chips * sizeof(int32_t),
                "the next-hop tables of all " + std::to_string(num_chips_) +
                    " chips (for the diameter and mean hops)");
}

int64_t ShortestPathRouter::Diameter() const {
  RequireAllTables();
  int64_t diameter = 0;
  for (int64_t dst = 0; dst < num_chips_; ++dst) {
    for (int64_t h : HopsTo(dst)) diameter = std::max(diameter, h);
  }
  return diameter;
}

double ShortestPathRouter::MeanHops() const {
  if (num_chips_ < 2) return 0;
  RequireAllTables();
  double total = 0;
  for (int64_t dst = 0; dst < num_chips_; ++dst) {
    for (int64_t h : HopsTo(dst)) total += static_cast<double>(std::max<int64_t>(h, 0));
  }
  return total / (static_cast<double>(num_chips_) * static_cast<double>(num_chips_ - 1));
}

}  // namespace podsim::topo
