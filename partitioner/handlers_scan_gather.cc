// SPMD handlers for ops that scan or select along one dim, when that dim is split (otherwise
// they are dim-wise ops, handlers_dimwise.cc). Each runs the op on its tile, exchanges one small
// summary per tile and finishes locally; every collective comes from Reshard:
//
//  cumsum   tile padding masked to 0; local cumsum (inclusive or exclusive, as the op); the
//           tile totals (one element per tile along the dim) all-gathered along the dim,
//           masked to the tiles before this one and summed: the exclusive prefix of the tile
//           totals, added to the local cumsum. One AllGather of T elements per row.
//  argmax   tile padding masked to the lowest value (-inf, or INT_MIN for s32); local argmax
//           made global (+ tile start) and local max; both all-gathered along the dim; the
//           first tile holding the maximum (argmax over the gathered maxima: NaN counts as the
//           maximum and the first wins, as in the op) picks its index. Two AllGathers of T.
//  top-k    tile padding masked as for argmax; local top-k' (k' = min(k, tile)), indices made
//           global; the k' * T candidates per row all-gathered; top-k again over them (ties go
//           to the earlier candidate, i.e. the lower global index, as in the op); indices
//           picked by a one-hot mask. When k' is the whole tile nothing is saved over
//           gathering the dim, and the op falls back to that.
//  gather   along a split axis (GShard's pattern for a sharded table): indices made whole and
//           clamped like the op's, shifted by this partition's tile start; each partition
//           gathers from its tile and zeroes the rows it does not hold; the partial result is
//           summed (or-ed for pred) by the AllReduce, or ReduceScatter, that Reshard emits to
//           reach the declared layout.
//  sort     along a split dim falls back to gathering the dim (handlers_dimwise.cc). A distributed
//           sort (bitonic merge over partitions) needs O(log^2 D) exchange rounds, so a program
//           whose size grows with D; not worth it for the sizes podsim sorts.

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::DType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

namespace {

// 0..n-1.
std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> out(n);
  for (int64_t k = 0; k < n; ++k) out[k] = k;
  return out;
}

// 0..n-1 without `d`.
std::vector<int64_t> IotaWithout(int64_t n, int64_t d) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < n; ++k) {
    if (k != d) out.push_back(k);
  }
  return out;
}

}  // namespace

// One element per tile along split dim `d` of `x`, gathered: the local [.., T, ..] values of
// every tile of this partition's row (the other dims as x's tile).
ShardedValue SpmdVisitor::GatherPerTile(const Instruction& user, Instruction* per_tile,
                                        const ShardedValue& x, int64_t d, const std::string& what) {
  std::vector<int64_t> keep = per_tile->shape.dims;
  keep.insert(keep.begin() + d, 1);
  Shape global = x.global;
  global.dims[d] = x.layout.tiles(d);
  global.dtype = per_tile->shape.dtype;
  const ShardedValue v{b().Reshape(per_tile, keep), global, x.layout};
  return Reshard(v, x.layout.Gathered(d), {user.name, "operand 0", what});
}

PartitionedValue SpmdVisitor::HandleCumsum(const Instruction& i) {
  const ShardedValue& x = Operand(i, 0);
  const int64_t d = i.dimensions[0];
  if (x.layout.tiles(d) == 1) return HandleDimWise(i).array;
  const TileLayout& l = x.layout;
  Instruction* xm = sb().MaskPadding(x.local, x.global, l, {d}, 0);
  Instruction* scan = b().Cumsum(xm, d, i.exclusive);
  Instruction* totals = b().Reduce(xm, {d}, ir::ReduceKind::kAdd);
  const ShardedValue all = GatherPerTile(
      i, totals, x, d, "cumsum along split dim " + std::to_string(d) + ": tile totals");
  // Sum of the totals of the tiles before this one.
  const Shape index_shape(DType::kS32, all.local->shape.dims);
  Instruction* before =
      b().Compare(b().Iota(index_shape, d),
                  b().BroadcastScalar(sb().TileCoord(l, d), index_shape.dims), ir::Comparison::kLt);
  Instruction* masked = b().Select(before, all.local, sb().Filled(all.local->shape, 0));
  Instruction* prefix = b().Reduce(masked, {d}, ir::ReduceKind::kAdd);
  Instruction* out =
      b().Add(scan, b().Broadcast(prefix, scan->shape.dims, IotaWithout(scan->shape.rank(), d)));
  return ShardedValue{out, i.shape, l};
}

PartitionedValue SpmdVisitor::HandleArgmax(const Instruction& i) {
  const ShardedValue& x = Operand(i, 0);
  const int64_t a = i.dimensions[0];
  if (x.layout.tiles(a) == 1) return HandleDimWise(i).array;
  const TileLayout& l = x.layout;
  const double lowest = ir::ReduceIdentity(ir::ReduceKind::kMax);
  Instruction* xm = sb().MaskPadding(x.local, x.global, l, {a}, lowest);
  Instruction* local_index = b().Argmax(xm, a);
  Instruction* index = b().Add(
      local_index, b().BroadcastScalar(sb().ShardStart(x.global, l, a), local_index->shape.dims));
  Instruction* value = b().Reduce(xm, {a}, ir::ReduceKind::kMax);
  const std::string what = "argmax along split dim " + std::to_string(a);
  const ShardedValue values = GatherPerTile(i, value, x, a, what + ": tile maxima");
  const ShardedValue indices = GatherPerTile(i, index, x, a, what + ": tile argmaxes");
  // The first tile holding the maximum picks its index.
  Instruction* winner = b().Argmax(values.local, a);
  const std::vector<int64_t>& dims = indices.local->shape.dims;
  Instruction* pick = b().Compare(b().Iota(Shape(DType::kS32, dims), a),
                                  b().Broadcast(winner, dims, IotaWithout(x.global.rank(), a)),
                                  ir::Comparison::kEq);
  Instruction* out =
      b().Reduce(b().Select(pick, indices.local, sb().Filled(indices.local->shape, 0)), {a},
                 ir::ReduceKind::kAdd);
  return ShardedValue{out, i.shape, l.Gathered(a).Projected(IotaWithout(x.global.rank(), a))};
}

PartitionedValue SpmdVisitor::HandleTopK(const Instruction& i) {
  const ShardedValue& x = Operand(i, 0);
  const int64_t r = x.global.rank(), d = r - 1;
  const TileLayout& l = x.layout;
  const int64_t tile = l.ShardShape(x.global).dims[d];
  const int64_t kk = std::min(i.k, tile);
  if (l.tiles(d) == 1 || kk >= tile) return HandleDimWise(i);
  Instruction* xm =
      sb().MaskPadding(x.local, x.global, l, {d}, ir::ReduceIdentity(ir::ReduceKind::kMax));
  Instruction* local = b().TopK(xm, kk);
  Instruction* local_values = b().GetTupleElement(local, 0);
  Instruction* local_index = b().GetTupleElement(local, 1);
  Instruction* local_global = b().Add(
      local_index, b().BroadcastScalar(sb().ShardStart(x.global, l, d), local_index->shape.dims));
  // Candidates: kk per tile, all gathered along the (now T * kk long) last dim.
  Shape cand_values = x.global;
  cand_values.dims[d] = l.tiles(d) * kk;
  Shape cand_index(DType::kS32, cand_values.dims);
  const ReshardReason why{i.name, "operand 0",
                          "top-k along split dim " + std::to_string(d) + ": " + std::to_string(kk) +
                              " candidates per tile"};
  const TileLayout whole = l.Gathered(d);
  Instruction* values = Reshard({local_values, cand_values, l}, whole, why).local;
  Instruction* index = Reshard({local_global, cand_index, l}, whole, why).local;
  Instruction* best = b().TopK(values, i.k);
  Instruction* best_values = b().GetTupleElement(best, 0);
  Instruction* best_pos = b().GetTupleElement(best, 1);
  // index[.., best_pos[.., j]] by a one-hot mask over [.., k, T * kk].
  std::vector<int64_t> big = best_pos->shape.dims;
  big.push_back(index->shape.dims[d]);
  std::vector<int64_t> index_map = Range(r);
  index_map[d] = r;
  Instruction* pick = b().Compare(b().Iota(Shape(DType::kS32, big), r),
                                  b().Broadcast(best_pos, big, Range(r)), ir::Comparison::kEq);
  Instruction* chosen = b().Select(pick, b().Broadcast(index, big, index_map),
                                   sb().Filled(Shape(DType::kS32, big), 0));
  Instruction* best_index = b().Reduce(chosen, {r}, ir::ReduceKind::kAdd);
  PartitionedValue v;
  v.tuple = b().Tuple({best_values, best_index});
  Instruction* elements[] = {best_values, best_index};
  for (size_t e = 0; e < 2; ++e) {
    PartitionedValue ev;
    ev.array = ShardedValue{elements[e], i.shape.tuple_shapes[e], whole};
    v.elements.push_back(std::move(ev));
  }
  return v;
}

PartitionedValue SpmdVisitor::HandleGather(const Instruction& i) {
  const ShardedValue& x = Operand(i, 0);
  const int64_t axis = i.dimensions[0];
  if (x.layout.tiles(axis) == 1) return HandleDimWise(i).array;
  const int64_t index_rank = i.operands[1]->shape.rank();
  const int64_t out_rank = i.shape.rank();
  // Result dim -> x dim (index dims: -1); the axis's tiles become the partial axis.
  std::vector<int64_t> from_x(out_rank, -1);
  for (int64_t o = 0; o < out_rank; ++o) {
    if (o < axis) from_x[o] = o;
    if (o >= axis + index_rank) from_x[o] = o - index_rank + 1;
  }
  const bool pred = x.global.dtype == DType::kPred;
  const ir::ReduceKind kind = pred ? ir::ReduceKind::kOr : ir::ReduceKind::kAdd;
  const TileLayout partial = x.layout.Projected(from_x, {axis}, kind);
  std::vector<int64_t> index_dims(index_rank);
  for (int64_t m = 0; m < index_rank; ++m) index_dims[m] = axis + m;
  Instruction* idx = OperandAs(i, 1, TileLayout::Replicated(index_rank, num_partitions())).local;
  const std::vector<int64_t>& idims = idx->shape.dims;
  // Clamp like the op, then index into this partition's tile.
  auto s32 = [&](int64_t v) { return b().BroadcastScalar(sb().S32(v), idims); };
  Instruction* clamped = b().Min(b().Max(idx, s32(0)), s32(x.global.dims[axis] - 1));
  Instruction* local_idx =
      b().Sub(clamped, b().BroadcastScalar(sb().ShardStart(x.global, x.layout, axis), idims));
  const int64_t tile = x.local->shape.dims[axis];
  Instruction* mine = b().And(b().Compare(local_idx, s32(0), ir::Comparison::kGe),
                              b().Compare(local_idx, s32(tile), ir::Comparison::kLt));
  Instruction* rows = b().Gather(x.local, local_idx, axis);
  Instruction* out = b().Select(b().Broadcast(mine, rows->shape.dims, index_dims), rows,
                                sb().Filled(rows->shape, 0));
  return Reshard({out, i.shape, partial}, Declared(i),
                 {i.name, "result",
                  "gather along split axis " + std::to_string(axis) +
                      ": each partition gathered the rows it holds"});
}

}  // namespace podsim::partitioner
