#pragma once
// Where a replica group sits on a grid (torus / mesh) topology, as the collective algorithms see
// it: a partition (core) has coordinates (local core, chip coordinates...). A group is a *box*
// when its members are exactly a product of coordinate ranges, one per axis, e.g. one row of a
// 2D torus, a 4x4 sub-block, every partition, or the two cores of each chip in a column.
//
// Ring order (ChooseRingOrder), so that ring neighbours are physically adjacent:
//  - box group: a Hamiltonian cycle over its chips, each chip's cores visited consecutively
//    (cores of one chip are joined by on-chip links):
//      1 chip axis: 0, 1, ..., s-1 (the closing hop uses the wraparound link when the axis is a
//        whole wrapped ring; otherwise it travels back s-1 hops);
//      >= 2 chip axes, one of even size L (the last such axis): a "comb" on the grid P x L,
//        where P is a boustrophedon (snake) path over the other axes: row y = 0 runs along P
//        from P[1] to P[end], row 1 back to P[1], ..., row L-1 ends at P[1]; then the column
//        P[0] runs back from row L-1 to row 0, next to the start. It uses no wraparound link,
//        so it is a cycle of single hops on meshes too; each directed link carries one ring
//        edge at most, so the reverse ring (bidirectional algorithms) uses the opposite links.
//      all chip axes odd: a snake over all axes (the closing hop may be multi-hop).
//    E.g. 4x4 chips, as (x0, x1), P along x0 and the comb rows along x1: (0,0) (1,0) (2,0)
//    (3,0) (3,1) (2,1) (1,1) (1,2) (2,2) (3,2) (3,3) (2,3) (1,3) (0,3) (0,2) (0,1).
//  - any other group on a grid: its members sorted by their position in the ring order of the
//    whole pod (a locality-preserving order; some hops are multi-hop);
//  - a custom (non-grid) topology: the group order.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace podsim::sim {

// One axis a box group spans (only axes with >= 2 members are listed).
struct GroupAxis {
  int dim = 0;       // -1: the cores of a chip; d >= 0: chip grid dimension d
  int64_t lo = 0;    // first coordinate on the axis (local core index for dim -1)
  int64_t size = 2;  // members along the axis, >= 2
  // Consecutive members and the last -> first pair are single hops: the axis is a whole
  // wraparound ring of the grid, has 2 members, or is the (fully connected) core axis.
  bool closed = false;
};

struct BoxGroup {
  std::vector<GroupAxis> axes;               // the core axis first, then chip dims ascending
  std::vector<std::vector<int64_t>> coords;  // [group index][axis]: 0 .. axes[a].size-1
  std::vector<int64_t> member_at;  // [box index] -> group index (box index: axis 0 fastest)

  int64_t size() const { return static_cast<int64_t>(member_at.size()); }
  int64_t BoxIndex(const std::vector<int64_t>& c) const;
  // Group index of the member at box coordinates c.
  int64_t MemberAt(const std::vector<int64_t>& c) const {
    return member_at[static_cast<size_t>(BoxIndex(c))];
  }
  // "cores[0..2) x dim1[0..8) (ring) x dim0[4..8) (line)".
  std::string Describe() const;
};

// The box a group forms; nullopt when the topology is not a grid, or the group is not a box.
std::optional<BoxGroup> AnalyzeBox(const topo::Topology& topology,
                                   const std::vector<int64_t>& group);

// A box group on a twisted torus seen along the closed walk of one of its twisted dimensions.
// Crossing the wraparound of twisted dimension d (size n) in the + direction also moves o along
// one other dimension e (size n_e): walking +d from a chip returns to it after n * m hops,
// m = n_e / g, g = gcd(o, n_e), visiting the chips whose e coordinates differ by multiples of o.
// When the box covers d and e whole, it is the grid
//   d: a ring of n * m (position x_d + n * h), e: a line of g (x_e mod g), the other axes as
// they are, where h in [0, m) solves h * o = x_e - (x_e mod g) (mod n_e). Every step along the
// ring, the wraparound crossing included, is one link of dimension d; a step along the line is one
// link of dimension e; so the dimension-wise algorithms see a ring of n * m where the plain box
// has a line of n (whose closing hop would travel back n - 1 hops).
// `axis` indexes box.axes. nullopt when that axis is not a whole twisted dimension, its twist
// moves more than one other dimension, the box does not cover that dimension whole, or g < 2.
std::optional<BoxGroup> TwistedView(const topo::Topology& topology, const BoxGroup& box,
                                    size_t axis);

struct RingOrder {
  std::vector<int64_t> members;  // partition ids, in ring order
  bool single_hops = false;      // every ring edge, the closing one included, is one hop
  std::string how;               // how it was chosen ("comb over dim0 x dim1 ...")
};

// The ring order of a group (see the file comment).
RingOrder ChooseRingOrder(const topo::Topology& topology, const std::vector<int64_t>& group);

// Coordinates of a partition: {local core, chip coordinates...} (grid topologies).
std::vector<int64_t> PartitionCoords(const topo::Topology& topology, int64_t partition);

}  // namespace podsim::sim
