// The MoE layer of GShard Algorithm 2 with the paper's three annotations (inputs split on G, wg
// replicated, dispatched inputs split on E). Until propagation is wired in, the test sets the
// sharding every instruction would get by hand: gating and dispatch tensors split on their
// leading G dim, expert tensors on E, the combined output on G. The forward pass must contain
// exactly two AllToAlls (dispatch and combine) and no other collective, match the unpartitioned
// layer numerically, and not grow with D.

#include <doctest/doctest.h>

#include "ir/builder.h"
#include "ir/text.h"
#include "partitioner/propagation.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::Comparison;
using ir::DType;
using ir::Instruction;
using ir::Shape;
using testing::Split;
using testing::With;

struct MoeDims {
  int64_t g = 8, s = 6, m = 4, e = 8, c = 2, h = 5;
};

// Splits every instruction built since `mark` (rank >= 1, not already sharded) on dim 0.
void SplitNewOnDim0(ir::Computation* comp, size_t mark, int64_t d) {
  const auto& instrs = comp->instructions();
  for (size_t n = mark; n < instrs.size(); ++n) {
    Instruction* i = instrs[n].get();
    if (!i->sharding && !i->shape.is_tuple && i->shape.rank() >= 1) {
      i->sharding = Split(i->shape.rank(), 0, d);
    }
  }
}

Instruction* OneHot(ir::Builder& b, Instruction* index, const Shape& shape) {
  // index [G,S] s32 -> [G,S,E] f32 with 1 where e == index.
  Instruction* iota = b.Iota(Shape(DType::kS32, shape.dims), 2);
  Instruction* wide = b.Broadcast(index, shape.dims, {0, 1});
  return b.Convert(b.Compare(wide, iota, Comparison::kEq), DType::kF32);
}

// Algorithm 2 forward pass with a Top-2 gating (argmax, exclusive cumsum positions, capacity).
// by_hand: every instruction gets its sharding here; otherwise only the paper's three
// annotations are set (for PropagateShardings).
std::unique_ptr<ir::Module> MoeLayer(const MoeDims& k, int64_t d, bool by_hand = true) {
  auto m = std::make_unique<ir::Module>("moe_layer");
  ir::Computation* comp = m->AddComputation("main", true);
  ir::Builder b(comp);
  const Shape gse(DType::kF32, {k.g, k.s, k.e});
  const Shape gsec(DType::kF32, {k.g, k.s, k.e, k.c});

  // Phase 1: gating and dispatch, split on G.
  size_t mark = comp->instructions().size();
  auto* inputs =
      With(b.Parameter(0, Shape(DType::kF32, {k.g, k.s, k.m}), "inputs"), Split(3, 0, d));
  auto* wg = With(b.Parameter(1, Shape(DType::kF32, {k.m, k.e}), "wg"), ir::Sharding::Replicated());
  auto split_new = [&](size_t from) {
    if (by_hand) SplitNewOnDim0(comp, from, d);
  };
  auto* wi = b.Parameter(2, Shape(DType::kF32, {k.e, k.m, k.h}), "wi");
  auto* wo = b.Parameter(3, Shape(DType::kF32, {k.e, k.h, k.m}), "wo");
  Instruction* logits = b.Einsum("GSM,ME->GSE", inputs, wg);
  Instruction* mx = b.Broadcast(b.Reduce(logits, {2}, ir::ReduceKind::kMax), gse.dims, {0, 1});
  Instruction* ex = b.Exp(b.Sub(logits, mx));
  Instruction* gates =
      b.Div(ex, b.Broadcast(b.Reduce(ex, {2}, ir::ReduceKind::kAdd), gse.dims, {0, 1}));
  Instruction* one = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1), gse.dims);
  Instruction* cap = b.BroadcastScalar(b.ConstantScalar(DType::kF32, k.c), gse.dims);
  auto below_cap = [&](Instruction* pos) {
    return b.Convert(b.Compare(pos, cap, Comparison::kLt), DType::kF32);
  };
  Instruction* hot1 = OneHot(b, b.Argmax(gates, 2), gse);
  Instruction* pos1 = b.Cumsum(hot1, 1, /*exclusive=*/true);
  Instruction* mask1 = b.Mul(hot1, below_cap(pos1));
  Instruction* hot2 = OneHot(b, b.Argmax(b.Mul(gates, b.Sub(one, hot1)), 2), gse);
  Instruction* used1 = b.Broadcast(b.Reduce(mask1, {1}, ir::ReduceKind::kAdd), gse.dims, {0, 2});
  Instruction* pos2 = b.Add(b.Cumsum(hot2, 1, /*exclusive=*/true), used1);
  Instruction* mask2 = b.Mul(hot2, below_cap(pos2));
  Instruction* g1 = b.Reduce(b.Mul(gates, mask1), {2}, ir::ReduceKind::kAdd);
  Instruction* g2 = b.Reduce(b.Mul(gates, mask2), {2}, ir::ReduceKind::kAdd);
  Instruction* eps = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1e-6), {k.g, k.s});
  Instruction* denom = b.Add(b.Add(g1, g2), eps);
  auto combine_part = [&](Instruction* gate, Instruction* mask, Instruction* pos) {
    Instruction* slot = b.Reduce(b.Mul(pos, mask), {2}, ir::ReduceKind::kAdd);  // [G,S]
    Instruction* iota_c = b.Iota(Shape(DType::kF32, {k.g, k.s, k.c}), 2);
    Instruction* hot_c =
        b.Convert(b.Compare(b.Broadcast(slot, {k.g, k.s, k.c}, {0, 1}), iota_c, Comparison::kEq),
                  DType::kF32);
    Instruction* w = b.Broadcast(b.Div(gate, denom), gsec.dims, {0, 1});
    return b.Mul(b.Mul(w, b.Broadcast(mask, gsec.dims, {0, 1, 2})),
                 b.Broadcast(hot_c, gsec.dims, {0, 1, 3}));
  };
  Instruction* combine = b.Add(combine_part(g1, mask1, pos1), combine_part(g2, mask2, pos2));
  Instruction* zeros = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0), gsec.dims);
  Instruction* dispatch = b.Convert(b.Compare(combine, zeros, Comparison::kGt), DType::kF32);
  Instruction* dispatched = b.Einsum("GSEC,GSM->EGCM", dispatch, inputs);
  // Annotation 3: dispatched inputs split on E (the transpose); the dot before it stays on G.
  With(dispatched, Split(4, 0, d));
  split_new(mark);

  // Phase 2: the experts, split on E.
  mark = comp->instructions().size();
  if (by_hand) {
    With(wi, Split(3, 0, d));
    With(wo, Split(3, 0, d));
  }
  Instruction* hidden = b.Einsum("EGCM,EMH->EGCH", dispatched, wi);
  Instruction* relu =
      b.Max(hidden, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0), hidden->shape.dims));
  Instruction* expert_out = b.Einsum("EGCH,EHM->GECM", relu, wo);
  if (by_hand) With(expert_out, Split(4, 1, d));  // GECM, E is dim 1
  split_new(mark);

  // Phase 3: combine, back on G.
  mark = comp->instructions().size();
  b.Einsum("GSEC,GECM->GSM", combine, expert_out);
  split_new(mark);
  return m;
}

TEST_CASE("MoE layer (Algorithm 2): exactly two AllToAlls, numerically equal") {
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    auto m = MoeLayer(MoeDims{}, d);
    PartitionResult r = testing::Partition(*m, d);
    INFO(ExplainProvenance(r));
    CHECK(testing::CollectiveCounts(*r.module) ==
          std::map<std::string, int64_t>{{"all-to-all", 2}});
    testing::CheckNumerics(*m, r, /*seed=*/11);
  }
}

TEST_CASE("MoE layer: the three annotations through PropagateShardings, then lowered") {
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    auto m = MoeLayer(MoeDims{}, d, /*by_hand=*/false);
    PropagateShardings(*m, d);
    PartitionResult r = testing::Partition(*m, d);
    INFO(ExplainProvenance(r));
    CHECK(testing::CollectiveCounts(*r.module) ==
          std::map<std::string, int64_t>{{"all-to-all", 2}});
    testing::CheckNumerics(*m, r, /*seed=*/3);
  }
}

TEST_CASE("MoE layer: uneven G and E (6 groups, 6 experts over 4 partitions)") {
  MoeDims k;
  k.g = 6;
  k.e = 6;
  auto m = MoeLayer(k, 4);
  PartitionResult r = testing::Partition(*m, 4);
  CHECK(testing::CollectiveCounts(*r.module) == std::map<std::string, int64_t>{{"all-to-all", 2}});
  testing::CheckNumerics(*m, r, /*seed=*/5);
}

TEST_CASE("MoE layer: the SPMD program has the same size for D = 2, 4, 8") {
  std::vector<int64_t> sizes;
  for (int64_t d : {2, 4, 8}) {
    auto m = MoeLayer(MoeDims{}, d);
    sizes.push_back(testing::Partition(*m, d).module->InstructionCount());
  }
  CHECK(sizes[0] == sizes[1]);
  CHECK(sizes[1] == sizes[2]);
}

TEST_CASE("MoE layer: the SPMD program prints and parses back") {
  auto m = MoeLayer(MoeDims{}, 4);
  PartitionResult r = testing::Partition(*m, 4);
  const std::string text = ir::PrintModule(*r.module);
  std::unique_ptr<ir::Module> back = ir::ParseModule(text);
  CHECK(ir::PrintModule(*back) == text);
}

}  // namespace
}  // namespace podsim::partitioner
