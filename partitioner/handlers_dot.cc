// SPMD handler for dot (einsum). The dot's iteration space has one dim per batch, lhs-free,
// rhs-free and contracting dim (in that order; the output is the first three groups). A
// strategy is a layout of that space over the partitions: from it follow the layouts the
// operands need (dims they lack join the replicas) and the local result's layout, which is
// partial over the contracting dims that are split (Reshard then AllReduces it, or
// ReduceScatters it into a dim the output wants split). Candidates are the spaces implied by
// the declared output, by each operand, and by combinations (lhs + rhs's free splits, the
// output + an operand's contracting split). The cheapest by ReshardCostModel wins (first listed
// on ties). Table 4 of the GShard paper falls out of this:
//   batch dims split alike          -> nothing to move;
//   contracting dim split           -> partial results + AllReduce (or ReduceScatter);
//   one free dim split              -> nothing to move;
//   free dims of both operands split on different dims ("A,C") -> the operand that must be
//     made whole is all-gathered, or, when the gathered operand would exceed
//     PartitionOptions::windowed_einsum_threshold_bytes per partition, streamed through a
//     windowed-einsum loop: trip count = its split count k; each iteration multiplies by the
//     shard at hand, writes that block of the result with dynamic-update-slice and passes the
//     shard to the next partition with a CollectivePermute (same bytes as the all-gather, one
//     shard resident instead of k);
//   output split on a dim other than the operands' (MoE dispatch GSEC,GSM->EGCM) -> compute in
//     the operands' split, then AllToAll the result.
// Contracting dims that are split unevenly are masked to 0 on both operands first.

#include <limits>
#include <optional>
#include <utility>

#include "base/error.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;
using ir::Shape;

namespace {

// Where each operand dim sits in the dot's iteration space.
struct DotSpace {
  int64_t nb = 0, nlf = 0, nrf = 0, nc = 0;
  std::vector<int64_t> lhs_space, rhs_space;  // per operand dim
  std::vector<int64_t> contracting_space;     // space dims of the contracting dims
  int64_t rank() const { return nb + nlf + nrf + nc; }
  int64_t out_rank() const { return nb + nlf + nrf; }
};

DotSpace MakeSpace(const Instruction& i) {
  const ir::DotDims& dd = i.dot;
  const int64_t lr = i.operands[0]->shape.rank(), rr = i.operands[1]->shape.rank();
  DotSpace s;
  s.nb = static_cast<int64_t>(dd.lhs_batch.size());
  s.nc = static_cast<int64_t>(dd.lhs_contracting.size());
  s.nlf = lr - s.nb - s.nc;
  s.nrf = rr - s.nb - s.nc;
  s.lhs_space.assign(lr, -1);
  s.rhs_space.assign(rr, -1);
  for (int64_t k = 0; k < s.nb; ++k) {
    s.lhs_space[dd.lhs_batch[k]] = k;
    s.rhs_space[dd.rhs_batch[k]] = k;
  }
  const int64_t c0 = s.nb + s.nlf + s.nrf;
  for (int64_t k = 0; k < s.nc; ++k) {
    s.lhs_space[dd.lhs_contracting[k]] = c0 + k;
    s.rhs_space[dd.rhs_contracting[k]] = c0 + k;
    s.contracting_space.push_back(c0 + k);
  }
  int64_t next = s.nb;
  for (int64_t d = 0; d < lr; ++d) {
    if (s.lhs_space[d] < 0) s.lhs_space[d] = next++;
  }
  for (int64_t d = 0; d < rr; ++d) {
    if (s.rhs_space[d] < 0) s.rhs_space[d] = next++;
  }
  return s;
}

// Inverse of a space map: space dim -> tensor dim (-1 when the tensor lacks it).
std::vector<int64_t> TensorDimOf(const std::vector<int64_t>& space_of, int64_t space_rank) {
  std::vector<int64_t> inv(space_rank, -1);
  for (size_t d = 0; d < space_of.size(); ++d) inv[space_of[d]] = static_cast<int64_t>(d);
  return inv;
}

struct Strategy {
  TileLayout space;
  TileLayout lhs, rhs, out;  // what the operands need; the local result's (maybe partial) layout
  double cost = 0;
  // Windowed einsum: which operand rotates (0 lhs, 1 rhs; -1 = none) along which of its dims.
  int64_t rotate_operand = -1;
  int64_t rotate_dim = -1;
};

}  // namespace

PartitionedValue SpmdVisitor::HandleDot(const Instruction& i) {
  const int64_t n = num_partitions();
  const DotSpace s = MakeSpace(i);
  const ShardedValue& lhs = Operand(i, 0);
  const ShardedValue& rhs = Operand(i, 1);
  const TileLayout declared = Declared(i);
  const std::vector<int64_t> lhs_dim = TensorDimOf(s.lhs_space, s.rank());
  const std::vector<int64_t> rhs_dim = TensorDimOf(s.rhs_space, s.rank());
  const int64_t c0 = s.out_rank();
  auto is_lf = [&](int64_t sd) { return sd >= s.nb && sd < s.nb + s.nlf; };
  auto is_rf = [&](int64_t sd) { return sd >= s.nb + s.nlf && sd < c0; };

  // Candidate spaces.
  std::vector<std::optional<TileLayout>> spaces;
  using Picks = std::vector<std::pair<const TileLayout*, int64_t>>;
  auto from = [&](auto take) {
    Picks picks(s.rank(), {nullptr, -1});
    for (int64_t sd = 0; sd < s.rank(); ++sd) picks[sd] = take(sd);
    spaces.push_back(TileLayout::FromPicks(picks, n));
  };
  auto out_pick = [&](int64_t sd) -> std::pair<const TileLayout*, int64_t> {
    return sd < c0 ? std::make_pair(&declared, sd) : std::make_pair(nullptr, int64_t{-1});
  };
  auto lhs_pick = [&](int64_t sd) -> std::pair<const TileLayout*, int64_t> {
    return lhs_dim[sd] >= 0 ? std::make_pair(&lhs.layout, lhs_dim[sd])
                            : std::make_pair(nullptr, int64_t{-1});
  };
  auto rhs_pick = [&](int64_t sd) -> std::pair<const TileLayout*, int64_t> {
    return rhs_dim[sd] >= 0 ? std::make_pair(&rhs.layout, rhs_dim[sd])
                            : std::make_pair(nullptr, int64_t{-1});
  };
  from(out_pick);
  from(lhs_pick);
  from(rhs_pick);
  from([&](int64_t sd) { return is_rf(sd) ? rhs_pick(sd) : lhs_pick(sd); });
  from([&](int64_t sd) { return is_lf(sd) ? lhs_pick(sd) : rhs_pick(sd); });
  from([&](int64_t sd) { return sd < c0 ? out_pick(sd) : lhs_pick(sd); });
  from([&](int64_t sd) { return sd < c0 ? out_pick(sd) : rhs_pick(sd); });

  Resharder costs(options_.cost_model, nullptr);
  std::vector<int64_t> out_map(c0);
  for (int64_t d = 0; d < c0; ++d) out_map[d] = d;
  std::optional<Strategy> best;
  for (const auto& space : spaces) {
    if (!space) continue;
    Strategy st{*space, space->Projected(s.lhs_space), space->Projected(s.rhs_space),
                space->Projected(out_map, s.contracting_space, ir::ReduceKind::kAdd)};
    const double lhs_cost = costs.Cost(lhs.global, lhs.layout, st.lhs);
    const double rhs_cost = costs.Cost(rhs.global, rhs.layout, st.rhs);
    st.cost = lhs_cost + rhs_cost + costs.Cost(i.shape, st.out, declared);
    // Windowed einsum instead of gathering one free dim of an operand that would be too big.
    for (int64_t which = 0; which < 2; ++which) {
      const ShardedValue& v = which == 0 ? lhs : rhs;
      const TileLayout& need = which == 0 ? st.lhs : st.rhs;
      const std::vector<int64_t>& space_of = which == 0 ? s.lhs_space : s.rhs_space;
      if (need.ShardShape(v.global).ByteSize() <= options_.windowed_einsum_threshold_bytes) {
        continue;
      }
      for (int64_t d = 0; d < v.global.rank(); ++d) {
        const int64_t sd = space_of[d];
        const bool free = which == 0 ? is_lf(sd) : is_rf(sd);
        if (!free || v.layout.tiles(d) == 1 || st.space.tiles(sd) != 1) continue;
        if (!v.layout.Gathered(d).Equivalent(need)) continue;
        st.rotate_operand = which;
        st.rotate_dim = d;
        break;
      }
      if (st.rotate_operand >= 0) break;
    }
    if (!best || st.cost < best->cost) best = std::move(st);
  }
  if (!best) throw Error("internal: %" + i.name + ": no dot strategy");

  // Operands in place; uneven contracting splits masked to 0.
  std::vector<int64_t> lhs_contracting(i.dot.lhs_contracting),
      rhs_contracting(i.dot.rhs_contracting);
  auto prepare = [&](int64_t k, const TileLayout& need, const std::vector<int64_t>& contracting,
                     bool rotates) {
    ShardedValue v = rotates ? Operand(i, k) : OperandAs(i, k, need);
    v.local = sb().MaskPadding(v.local, v.global, v.layout, contracting, 0.0);
    return v;
  };
  ShardedValue l = prepare(0, best->lhs, lhs_contracting, best->rotate_operand == 0);
  ShardedValue r = prepare(1, best->rhs, rhs_contracting, best->rotate_operand == 1);
  const Shape out_shape = best->out.ShardShape(i.shape);
  if (best->rotate_operand < 0) {
    return ShardedValue{CloneLocal(i, {l.local, r.local}, out_shape), i.shape, best->out};
  }

  // Windowed einsum loop. Carried: (lhs, rhs, accumulator); the rotating operand's shard at
  // iteration `it` on the partition at position q of its ring is block (q + it) mod k.
  const int64_t which = best->rotate_operand, d = best->rotate_dim;
  const ShardedValue& rot = which == 0 ? l : r;
  const int64_t k = rot.layout.tiles(d);
  const int64_t block = ShardExtent(rot.global.dims[d], k);
  const int64_t out_dim = (which == 0 ? s.lhs_space : s.rhs_space)[d];
  Shape acc_shape = out_shape;
  acc_shape.dims[out_dim] = k * block;
  ir::Computation* body = out_->AddComputation(out_->UniqueName(i.name + ".windowed"));
  SpmdBuilder body_sb(body, n);
  ir::Builder& bb = body_sb.b();
  Instruction* it = bb.Parameter(0, Shape(ir::DType::kS32, {}), "iteration");
  Instruction* pl = bb.Parameter(1, l.local->shape, "lhs");
  Instruction* pr = bb.Parameter(2, r.local->shape, "rhs");
  Instruction* acc = bb.Parameter(3, acc_shape, "accumulator");
  Instruction* j = bb.Add(body_sb.TileCoord(rot.layout, d), it);
  Instruction* kk = body_sb.S32(k);
  j = bb.Sub(j, bb.Mul(bb.Div(j, kk), kk));  // (q + it) mod k; both are >= 0
  std::vector<Instruction*> starts(acc_shape.rank(), body_sb.S32(0));
  starts[out_dim] = bb.Mul(j, body_sb.S32(block));
  Instruction* part = bb.Dot(pl, pr, i.dot);
  Instruction* next_acc = bb.DynamicUpdateSlice(acc, part, starts);
  ShardedValue here{which == 0 ? pl : pr, rot.global, rot.layout};
  ShardedValue passed =
      resharder_.Reshard(body_sb, here, rot.layout.Rotated(d, 1),
                         {i.name, "operand " + std::to_string(which),
                          "windowed einsum: pass the shard on, trip count " + std::to_string(k)});
  bb.Tuple({which == 0 ? passed.local : pl, which == 1 ? passed.local : pr, next_acc});
  Instruction* loop = b().Loop({l.local, r.local, sb().Filled(acc_shape, 0)}, body, k);
  Instruction* result = sb().SliceLeading(b().GetTupleElement(loop, 2), out_shape.dims);
  return ShardedValue{result, i.shape, best->out};
}

}  // namespace podsim::partitioner
