#include "sim/collectives/group_geometry.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace podsim::sim {
namespace {

using Coords = std::vector<int64_t>;

// Boustrophedon order over a box of `sizes` (axis 0 fastest): consecutive entries differ by one
// in exactly one coordinate.
std::vector<Coords> Snake(const std::vector<int64_t>& sizes) {
  std::vector<Coords> order = {Coords()};
  for (int64_t size : sizes) {
    std::vector<Coords> next;
    next.reserve(order.size() * static_cast<size_t>(size));
    for (int64_t v = 0; v < size; ++v) {
      for (size_t i = 0; i < order.size(); ++i) {
        Coords c = (v % 2 == 0) ? order[i] : order[order.size() - 1 - i];
        c.push_back(v);
        next.push_back(std::move(c));
      }
    }
    order = std::move(next);
  }
  return order;
}

// True if a and b are one hop apart on a box of `sizes` whose axes wrap when `closed`.
bool Adjacent(const Coords& a, const Coords& b, const std::vector<int64_t>& sizes,
              const std::vector<bool>& closed) {
  int differing = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    ++differing;
    const int64_t d = std::abs(a[i] - b[i]);
    if (d != 1 && !(closed[i] && d == sizes[i] - 1)) return false;
  }
  return differing == 1;
}

struct ChipCycle {
  std::vector<Coords> order;  // chip-axis coordinates, in cycle order
  bool single_hops = false;
  std::string how;
};

// A cycle over the chips of a box with chip axes of `sizes` (see the header for the rule).
ChipCycle MakeChipCycle(const std::vector<int64_t>& sizes, const std::vector<bool>& closed,
                        const std::vector<std::string>& names) {
  ChipCycle cycle;
  const size_t k = sizes.size();
  if (k == 0) {
    cycle.order = {Coords()};
    cycle.single_hops = true;
    cycle.how = "one chip";
    return cycle;
  }
  if (k == 1) {
    cycle.order = Snake(sizes);
    cycle.single_hops = closed[0];
    cycle.how = "along " + names[0] +
                (closed[0] ? " (closed by its wraparound)" : " (line: the closing hop goes back)");
    return cycle;
  }
  int line = -1;  // the comb's row axis: the last axis of even size
  for (size_t a = 0; a < k; ++a) {
    if (sizes[a] % 2 == 0) line = static_cast<int>(a);
  }
  if (line < 0) {
    cycle.order = Snake(sizes);
    cycle.single_hops = Adjacent(cycle.order.back(), cycle.order.front(), sizes, closed);
    cycle.how = "snake (every axis odd: no comb)";
    return cycle;
  }
  std::vector<int64_t> path_sizes;
  std::vector<size_t> path_axes;
  for (size_t a = 0; a < k; ++a) {
    if (static_cast<int>(a) == line) continue;
    path_sizes.push_back(sizes[a]);
    path_axes.push_back(a);
  }
  const std::vector<Coords> path = Snake(path_sizes);
  const int64_t m = static_cast<int64_t>(path.size());
  const int64_t rows = sizes[static_cast<size_t>(line)];
  auto at = [&](int64_t x, int64_t y) {
    Coords c(k);
    for (size_t i = 0; i < path_axes.size(); ++i) c[path_axes[i]] = path[static_cast<size_t>(x)][i];
    c[static_cast<size_t>(line)] = y;
    return c;
  };
  cycle.order.push_back(at(0, 0));
  for (int64_t y = 0; y < rows; ++y) {
    for (int64_t i = 1; i < m; ++i) cycle.order.push_back(at(y % 2 == 0 ? i : m - i, y));
  }
  for (int64_t y = rows - 1; y >= 1; --y) cycle.order.push_back(at(0, y));
  cycle.single_hops = true;
  cycle.how =
      "comb: rows along " + names[static_cast<size_t>(line)] + ", snake over the other axes";
  return cycle;
}

std::string AxisName(int dim) { return dim < 0 ? "cores" : "dim" + std::to_string(dim); }

}  // namespace

std::vector<int64_t> PartitionCoords(const topo::Topology& topology, int64_t partition) {
  std::vector<int64_t> c = {topology.LocalCore(partition)};
  for (int64_t x : topology.ChipCoords(topology.ChipOfCore(partition))) c.push_back(x);
  return c;
}

int64_t BoxGroup::BoxIndex(const std::vector<int64_t>& c) const {
  int64_t index = 0;
  for (size_t a = axes.size(); a-- > 0;) index = index * axes[a].size + c[a];
  return index;
}

std::string BoxGroup::Describe() const {
  if (axes.empty()) return "a single partition";
  std::string s;
  for (const GroupAxis& a : axes) {
    if (!s.empty()) s += " x ";
    s += AxisName(a.dim) + "[" + std::to_string(a.lo) + ".." + std::to_string(a.lo + a.size) + ")";
    if (a.dim >= 0) s += a.closed ? " (ring)" : " (line)";
  }
  return s;
}

std::optional<BoxGroup> AnalyzeBox(const topo::Topology& topology,
                                   const std::vector<int64_t>& group) {
  const topo::GridShape* grid = topology.grid();
  if (grid == nullptr || group.empty()) return std::nullopt;
  const size_t n_ext = grid->dims.size() + 1;  // local core + chip dims
  std::vector<int64_t> lo(n_ext, std::numeric_limits<int64_t>::max()), hi(n_ext, -1);
  std::vector<Coords> ext(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    ext[i] = PartitionCoords(topology, group[i]);
    for (size_t e = 0; e < n_ext; ++e) {
      lo[e] = std::min(lo[e], ext[i][e]);
      hi[e] = std::max(hi[e], ext[i][e]);
    }
  }
  BoxGroup box;
  std::vector<size_t> ext_of_axis;
  int64_t volume = 1;
  for (size_t e = 0; e < n_ext; ++e) {
    const int64_t size = hi[e] - lo[e] + 1;
    if (size < 2) continue;
    GroupAxis axis;
    axis.dim = static_cast<int>(e) - 1;
    axis.lo = lo[e];
    axis.size = size;
    if (axis.dim < 0 || size == 2) {
      axis.closed = true;
    } else {
      const size_t d = static_cast<size_t>(axis.dim);
      axis.closed = size == grid->dims[d] && grid->wraparound[d] && !grid->Twisted(d);
    }
    box.axes.push_back(axis);
    ext_of_axis.push_back(e);
    volume *= size;
  }
  if (volume != static_cast<int64_t>(group.size())) return std::nullopt;
  box.member_at.assign(static_cast<size_t>(volume), -1);
  box.coords.resize(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    Coords c(box.axes.size());
    for (size_t a = 0; a < box.axes.size(); ++a) c[a] = ext[i][ext_of_axis[a]] - box.axes[a].lo;
    int64_t& slot = box.member_at[static_cast<size_t>(box.BoxIndex(c))];
    if (slot >= 0) return std::nullopt;  // a duplicate: not a box (validation reports it)
    slot = static_cast<int64_t>(i);
    box.coords[i] = std::move(c);
  }
  return box;
}

std::optional<BoxGroup> TwistedView(const topo::Topology& topology, const BoxGroup& box,
                                    size_t axis) {
  const topo::GridShape* grid = topology.grid();
  if (grid == nullptr || axis >= box.axes.size() || box.axes[axis].dim < 0) return std::nullopt;
  const size_t d = static_cast<size_t>(box.axes[axis].dim);
  if (!grid->Twisted(d) || box.axes[axis].size != grid->dims[d]) return std::nullopt;
  int e = -1;
  int64_t shift = 0;
  for (size_t x = 0; x < grid->dims.size(); ++x) {
    const int64_t o = ((grid->twist_offsets[d][x] % grid->dims[x]) + grid->dims[x]) % grid->dims[x];
    if (o == 0) continue;
    if (e >= 0) return std::nullopt;  // the twist moves two dimensions
    e = static_cast<int>(x);
    shift = o;
  }
  if (e < 0) return std::nullopt;
  size_t e_axis = box.axes.size();
  for (size_t a = 0; a < box.axes.size(); ++a) {
    if (box.axes[a].dim == e) e_axis = a;
  }
  const int64_t n = grid->dims[d], n_e = grid->dims[static_cast<size_t>(e)];
  if (e_axis == box.axes.size() || box.axes[e_axis].size != n_e) return std::nullopt;
  const int64_t g = std::gcd(shift, n_e), m = n_e / g;
  if (g < 2) return std::nullopt;
  // h of each x_e - (x_e mod g): the multiples of g reached by h = 0, 1, ..., m - 1 steps of o.
  std::vector<int64_t> h_of(static_cast<size_t>(m), -1);
  for (int64_t h = 0; h < m; ++h) h_of[static_cast<size_t>(h * shift % n_e / g)] = h;
  BoxGroup view;
  view.axes = box.axes;
  view.axes[axis] = {static_cast<int>(d), 0, n * m, /*closed=*/true};
  view.axes[e_axis] = {e, 0, g, /*closed=*/g == 2};
  view.member_at.assign(box.member_at.size(), -1);
  view.coords.resize(box.coords.size());
  for (size_t i = 0; i < box.coords.size(); ++i) {
    Coords c = box.coords[i];
    const int64_t x_e = c[e_axis];
    c[axis] += n * h_of[static_cast<size_t>(x_e / g)];
    c[e_axis] = x_e % g;
    view.member_at[static_cast<size_t>(view.BoxIndex(c))] = static_cast<int64_t>(i);
    view.coords[i] = std::move(c);
  }
  return view;
}

RingOrder ChooseRingOrder(const topo::Topology& topology, const std::vector<int64_t>& group) {
  RingOrder ring;
  if (topology.grid() == nullptr) {
    // A tour that follows the graph, independent of how the group is listed: from the lowest
    // partition id, always on to the nearest member not yet visited (fewest hops; ties: lowest
    // id). Large groups are taken in id order, which is also independent of the listing.
    std::vector<int64_t> left = group;
    std::sort(left.begin(), left.end());
    constexpr size_t kMaxTourMembers = 1024;
    if (left.size() > kMaxTourMembers) {
      ring.members = left;
      ring.how = "partition id order (a custom graph; group of more than 1024)";
    } else {
      ring.members.push_back(left.front());
      left.erase(left.begin());
      while (!left.empty()) {
        const int64_t at = ring.members.back();
        size_t best = 0;
        int64_t best_hops = topology.Hops(at, left[0]);
        for (size_t i = 1; i < left.size(); ++i) {
          const int64_t h = topology.Hops(at, left[i]);
          if (h < best_hops) {
            best = i;
            best_hops = h;
          }
        }
        ring.members.push_back(left[best]);
        left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
      }
      ring.how = "nearest-neighbour tour of the custom graph from the lowest id";
    }
    ring.single_hops = true;
    for (size_t i = 0; i < ring.members.size() && ring.members.size() > 1; ++i) {
      const int64_t next = ring.members[(i + 1) % ring.members.size()];
      if (topology.Hops(ring.members[i], next) != 1) ring.single_hops = false;
    }
    return ring;
  }
  if (std::optional<BoxGroup> box = AnalyzeBox(topology, group)) {
    std::vector<int64_t> sizes;
    std::vector<bool> closed;
    std::vector<std::string> names;
    std::vector<size_t> chip_axes;
    int core_axis = -1;
    for (size_t a = 0; a < box->axes.size(); ++a) {
      if (box->axes[a].dim < 0) {
        core_axis = static_cast<int>(a);
        continue;
      }
      chip_axes.push_back(a);
    }
    // The cycle depends on the axes' sizes and closure, not on how the dimensions are numbered:
    // axes sorted by size, then closed before open, then dimension (a relabelled torus gets the
    // same ring shape, so the same time).
    std::stable_sort(chip_axes.begin(), chip_axes.end(), [&](size_t a, size_t b) {
      const GroupAxis& x = box->axes[a];
      const GroupAxis& y = box->axes[b];
      if (x.size != y.size) return x.size < y.size;
      return x.closed && !y.closed;
    });
    for (size_t a : chip_axes) {
      sizes.push_back(box->axes[a].size);
      closed.push_back(box->axes[a].closed);
      names.push_back(AxisName(box->axes[a].dim));
    }
    const ChipCycle cycle = MakeChipCycle(sizes, closed, names);
    const int64_t cores = core_axis < 0 ? 1 : box->axes[static_cast<size_t>(core_axis)].size;
    Coords c(box->axes.size(), 0);
    for (const Coords& chip : cycle.order) {
      for (size_t i = 0; i < chip_axes.size(); ++i) c[chip_axes[i]] = chip[i];
      for (int64_t core = 0; core < cores; ++core) {
        if (core_axis >= 0) c[static_cast<size_t>(core_axis)] = core;
        ring.members.push_back(group[static_cast<size_t>(box->MemberAt(c))]);
      }
    }
    ring.single_hops = cycle.single_hops;
    ring.how = "box " + box->Describe() + "; chips: " + cycle.how +
               (cores > 1 ? "; each chip's cores consecutively" : "");
    return ring;
  }
  // Not a box: follow the ring order of the whole pod.
  std::vector<int64_t> all(static_cast<size_t>(topology.num_cores()));
  for (size_t p = 0; p < all.size(); ++p) all[p] = static_cast<int64_t>(p);
  const RingOrder pod = ChooseRingOrder(topology, all);
  std::vector<int64_t> position(all.size());
  for (size_t i = 0; i < pod.members.size(); ++i)
    position[static_cast<size_t>(pod.members[i])] = static_cast<int64_t>(i);
  ring.members = group;
  std::sort(ring.members.begin(), ring.members.end(), [&](int64_t a, int64_t b) {
    return position[static_cast<size_t>(a)] < position[static_cast<size_t>(b)];
  });
  ring.how = "not a box: members in the order of the whole pod's ring";
  return ring;
}

}  // namespace podsim::sim
