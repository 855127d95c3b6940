// SPMD handler for reshape. The operand and result dims fall into minimal groups with equal
// element counts (ReshapeGroups). A group whose result is not split is computed whole. A group
// whose major-most result dim alone is split k ways keeps the split on its major-most operand
// dim; each partition then holds one contiguous block of the group, of S = ceil(in_major / k) *
// in_minor operand elements at c * S and So = ceil(out_major / k) * out_minor result elements
// at c * So:
//  - S == So (k divides both major dims): the local reshape is the answer;
//  - otherwise the blocks are misaligned (uneven tiles: the padding of the operand tiles
//    disappears in the result, GShard Figure 5c, [3,2] -> [6] over 2 partitions): the group is
//    flattened locally and shifted into place by a halo exchange (partitioner/halo.h, a window
//    of size 1 over the flattened group), then reshaped to the result's tile.
// A misalignment larger than a neighbour's block, or a split on a minor result dim, makes the
// group whole (logged as "fallback").

#include <optional>
#include <utility>

#include "base/error.h"
#include "partitioner/halo.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;
using ir::Shape;

namespace {

// Minimal groups of operand dims and output dims of a reshape with equal element counts, in
// order. Size-1 dims not needed to balance a group form groups of their own.
std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ReshapeGroups(
    const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> groups;
  const int64_t ni = static_cast<int64_t>(in.size()), no = static_cast<int64_t>(out.size());
  int64_t a = 0, c = 0;
  while (a < ni || c < no) {
    if (a < ni && in[a] == 1 && (c >= no || out[c] != 1)) {
      groups.push_back({{a++}, {}});
      continue;
    }
    if (c < no && out[c] == 1 && (a >= ni || in[a] != 1)) {
      groups.push_back({{}, {c++}});
      continue;
    }
    std::vector<int64_t> gi = {a}, go = {c};
    int64_t pi = in[a++], po = out[c++];
    while (pi != po) {
      if (pi < po) {
        gi.push_back(a);
        pi *= in[a++];
      } else {
        go.push_back(c);
        po *= out[c++];
      }
    }
    groups.push_back({gi, go});
  }
  return groups;
}

}  // namespace

PartitionedValue SpmdVisitor::HandleReshape(const Instruction& i) {
  const TileLayout declared = Declared(i);
  const Shape& in = i.operands[0]->shape;
  TileLayout layout = declared;
  std::vector<int64_t> dim_map(in.rank(), -1);
  // Per group (in ReshapeGroups order): the halo exchange that aligns it, if it needs one.
  struct Shifted {
    HaloGeometry geometry;
    HaloPlan plan;
  };
  std::vector<std::optional<Shifted>> shifts;
  bool fallback = false;
  const auto groups = in.NumElements() == 0
                          ? std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{}
                          : ReshapeGroups(in.dims, i.shape.dims);
  if (in.NumElements() == 0) layout = TileLayout::Replicated(i.shape.rank(), num_partitions());
  for (const auto& [gi, go] : groups) {
    shifts.emplace_back();
    bool split = false, ok = !gi.empty() && !go.empty();
    for (size_t n = 0; n < go.size(); ++n) {
      if (layout.tiles(go[n]) == 1) continue;
      split = true;
      if (n != 0) ok = false;
    }
    if (!split) continue;
    if (ok) {
      const int64_t k = layout.tiles(go[0]);
      HaloGeometry g;
      g.tiles = k;
      g.in_extent = 1;
      for (int64_t d : gi) g.in_extent *= in.dims[d];
      g.out_extent = g.in_extent;
      g.in_shard = ShardExtent(in.dims[gi[0]], k) * (g.in_extent / in.dims[gi[0]]);
      g.out_shard = ShardExtent(i.shape.dims[go[0]], k) * (g.out_extent / i.shape.dims[go[0]]);
      if (g.in_shard != g.out_shard) {
        std::optional<HaloPlan> plan = PlanHalo(g);
        if (plan) {
          shifts.back() = Shifted{g, *plan};
        } else {
          ok = false;
        }
      }
    }
    if (ok) {
      dim_map[gi[0]] = go[0];
    } else {
      fallback = true;
      for (int64_t d : go) {
        if (layout.tiles(d) > 1) layout = layout.Gathered(d);
      }
    }
  }
  const TileLayout in_layout = layout.Projected(dim_map);
  Instruction* x = OperandAs(i, 0, in_layout,
                             fallback ? "fallback: reshape that moves data across shards, "
                                        "misaligned by more than a tile"
                                      : "")
                       .local;
  bool any_shift = false;
  for (const auto& s : shifts) any_shift = any_shift || s.has_value();
  if (any_shift) {
    // Flatten each shifted group locally (the others keep their local dims), then shift.
    std::vector<int64_t> flat;
    std::vector<int64_t> position(groups.size());
    for (size_t k = 0; k < groups.size(); ++k) {
      position[k] = static_cast<int64_t>(flat.size());
      if (shifts[k]) {
        flat.push_back(shifts[k]->geometry.in_shard);
      } else {
        for (int64_t d : groups[k].first) flat.push_back(x->shape.dims[d]);
      }
    }
    x = b().Reshape(x, flat);
    for (size_t k = 0; k < groups.size(); ++k) {
      if (!shifts[k]) continue;
      x = ExchangeHalo(sb(), resharder_, x, position[k], in_layout, groups[k].first[0],
                       shifts[k]->geometry, shifts[k]->plan, nullptr,
                       {i.name, "operand 0", "reshape of uneven tiles realigned"});
    }
  }
  return ShardedValue{CloneLocal(i, {x}, layout.ShardShape(i.shape)), i.shape, layout};
}

}  // namespace podsim::partitioner
