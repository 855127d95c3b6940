#pragma once
// Test helpers for the network models: a hand-built topology with explicit routes, a hand-built
// 2D torus, and a loop that runs a model to completion.

#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/network/network_model.h"
#include "topologies/topology.h"

namespace podsim::sim::testing {

constexpr int64_t kPsPerSecond = 1'000'000'000'000;
constexpr int64_t kPsPerMicro = 1'000'000;

// Chips joined by hand-made directed links, routes given explicitly; one core per chip.
class HandTopology : public topo::Topology {
 public:
  explicit HandTopology(int64_t chips, std::string name = "hand") : chips_(chips), name_(std::move(name)) {}

  // Adds a directed link; returns its id.
  int64_t AddLink(int64_t src, int64_t dst, double bandwidth, int64_t latency_ps) {
    topo::Link link;
    link.id = static_cast<int64_t>(links_.size());
    link.src_chip = src;
    link.dst_chip = dst;
    link.bandwidth = BytesPerSecond{bandwidth};
    link.latency = Time::Picos(latency_ps);
    links_.push_back(link);
    return link.id;
  }
  void SetRoute(int64_t src, int64_t dst, std::vector<int64_t> links) { routes_[{src, dst}] = {{std::move(links), 1.0}}; }
  void SetSplitRoute(int64_t src, int64_t dst, std::vector<WeightedPath> paths) { routes_[{src, dst}] = std::move(paths); }

  std::string name() const override { return name_; }
  int64_t num_chips() const override { return chips_; }
  int64_t cores_per_chip() const override { return 1; }
  const std::vector<topo::Link>& links() const override { return links_; }
  std::vector<int64_t> Route(int64_t src, int64_t dst) const override { return RouteSplit(src, dst).front().links; }
  std::vector<WeightedPath> RouteSplit(int64_t src, int64_t dst) const override {
    if (src == dst) return {{{}, 1.0}};
    auto it = routes_.find({src, dst});
    if (it == routes_.end()) throw std::logic_error("HandTopology: no route " + std::to_string(src) + "->" + std::to_string(dst));
    return it->second;
  }
  std::string Describe() const override { return name_; }

 private:
  int64_t chips_;
  std::string name_;
  std::vector<topo::Link> links_;
  std::map<std::pair<int64_t, int64_t>, std::vector<WeightedPath>> routes_;
};

// An x-by-y 2D torus of chips (chip = i * y + j), one core per chip, links in both directions
// of both dimensions, all with one bandwidth and latency. Dimension-order routes (i first), the
// shorter way round, ties (half a ring) in the + direction.
class HandTorus : public topo::Topology {
 public:
  HandTorus(int64_t x, int64_t y, double bandwidth, int64_t latency_ps) : dims_{x, y} {
    for (int64_t c = 0; c < x * y; ++c) {
      for (int d = 0; d < 2; ++d) {
        for (int dir : {+1, -1}) {
          topo::Link link;
          link.id = static_cast<int64_t>(links_.size());
          link.src_chip = c;
          link.dst_chip = Step(c, d, dir);
          link.bandwidth = BytesPerSecond{bandwidth};
          link.latency = Time::Picos(latency_ps);
          link.dim = d;
          link.direction = dir;
          links_.push_back(link);
        }
      }
    }
  }
  std::string name() const override { return "hand-torus"; }
  int64_t num_chips() const override { return dims_[0] * dims_[1]; }
  int64_t cores_per_chip() const override { return 1; }
  const std::vector<topo::Link>& links() const override { return links_; }
  std::vector<int64_t> Route(int64_t src, int64_t dst) const override {
    std::vector<int64_t> route;
    int64_t at = src;
    for (int d = 0; d < 2; ++d) {
      const int64_t n = dims_[d];
      const int64_t forward = ((Coord(dst, d) - Coord(at, d)) % n + n) % n;
      const int dir = forward <= n - forward ? +1 : -1;
      for (int64_t s = 0; s < (dir > 0 ? forward : n - forward); ++s) {
        route.push_back(at * 4 + d * 2 + (dir > 0 ? 0 : 1));
        at = Step(at, d, dir);
      }
    }
    return route;
  }
  std::string Describe() const override { return "hand torus"; }

 private:
  int64_t Coord(int64_t chip, int d) const { return d == 0 ? chip / dims_[1] : chip % dims_[1]; }
  int64_t Step(int64_t chip, int d, int dir) const {
    int64_t i = Coord(chip, 0), j = Coord(chip, 1);
    if (d == 0) i = (i + dir + dims_[0]) % dims_[0];
    else j = (j + dir + dims_[1]) % dims_[1];
    return i * dims_[1] + j;
  }
  int64_t dims_[2];
  std::vector<topo::Link> links_;
};

// Runs `model` until idle; returns each transfer's completion time.
inline std::map<TransferId, Time> RunToCompletion(NetworkModel& model) {
  std::map<TransferId, Time> done;
  for (Time t = model.NextEventTime(); t != Time::Max(); t = model.NextEventTime()) {
    for (TransferId id : model.Advance(t)) done[id] = t;
  }
  return done;
}

// |a - b| <= tolerance picoseconds (rounding of rates to whole picoseconds).
inline bool NearPs(Time a, int64_t b, int64_t tolerance = 4) { return std::llabs(a.picos() - b) <= tolerance; }

}  // namespace podsim::sim::testing
