// Sharding propagation through contractions and reductions (dot/einsum, convolution, reduce,
// argmax, cumsum, sort, top-k, reduce-window, gather), and the MoE layer of GShard Algorithm 2
// with its three annotations. Expected shardings derived by hand in the comments.

#include <doctest/doctest.h>

#include "tests/partitioner/propagation_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::Comparison;
using ir::DType;
using ir::Opcode;
using ir::ReduceKind;
using ir::Shape;
using testing::ModuleFixture;
using testing::Propagate;
using testing::Listed;
using testing::S;

// Rows over {0,1}|{2,3} and columns over {0,2}|{1,3} of a 2x2 grid (device d at row d/2,
// column d%2), as partial shardings of a rank-2 tensor.
constexpr const char* kRowPairs = "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}";

TEST_CASE("dot GSM,ME->GSE with x split on G gives an output split on G; wg replicated") {
  ModuleFixture f;
  auto* x = Split(f.Param({4, 8, 16}, "x"), 0, 4);
  auto* wg = f.Param({16, 6}, "wg");
  auto* logits = f.b.Einsum("GSM,ME->GSE", x, wg);
  REQUIRE(logits->opcode == Opcode::kDot);
  Propagate(*f.m, 4);
  CHECK(S(logits) == "{devices=[4,1,1]0,1,2,3}");
  CHECK(S(wg) == "{replicated}");  // E is not cut in the output, M not in x
}

TEST_CASE("dot: batch dims come from both operands") {
  // BMK,BKN->BMN with the rhs split on B: output split on B, lhs takes B backward.
  ModuleFixture f;
  auto* a = f.Param({4, 8, 6}, "a");
  auto* b = Split(f.Param({4, 6, 5}, "b"), 0, 4);
  auto* out = f.b.Einsum("BMK,BKN->BMN", a, b);
  Propagate(*f.m, 4);
  CHECK(S(out) == "{devices=[4,1,1]0,1,2,3}");
  CHECK(S(a) == "{devices=[4,1,1]0,1,2,3}");
}

TEST_CASE("dot: lhs free and rhs free dims combine into a 2-D output tile") {
  // lhs [M,K] rows over {0,1}|{2,3}; rhs [K,N] cols over {0,2}|{1,3}: out [M,N] is [2,2].
  ModuleFixture f;
  auto* lhs = Shard(f.Param({8, 6}, "lhs"), {2, 1, 2}, {0, 1, 2, 3}, true);
  auto* rhs = Shard(f.Param({6, 4}, "rhs"), {1, 2, 2}, {0, 2, 1, 3}, true);
  auto* out = f.b.Einsum("MK,KN->MN", lhs, rhs);
  Propagate(*f.m, 4);
  CHECK(S(out) == "{devices=[2,2]0,1,2,3}");
}

TEST_CASE("dot: a contracting-dim split carries to the other operand, not to the output") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 16}, "x"), 1, 4);
  auto* w = f.Param({16, 4}, "w");
  auto* out = f.b.Einsum("MK,KN->MN", x, w);
  Propagate(*f.m, 4);
  CHECK(S(w) == "{devices=[4,1]0,1,2,3}");
  CHECK(S(out) == "{replicated}");
}

TEST_CASE("dot: the output's cut flows back to the operand dims it came from") {
  ModuleFixture f;
  auto* x = f.Param({8, 16}, "x");
  auto* w = f.Param({16, 4}, "w");
  Split(f.b.Einsum("MK,KN->MN", x, w), 1, 4);  // N cut
  Propagate(*f.m, 4);
  CHECK(S(x) == "{replicated}");
  CHECK(S(w) == "{devices=[1,4]0,1,2,3}");
}

TEST_CASE("einsum with a label summed away first: ABC,CD->AD reduces B, then dots") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 3, 6}, "x"), 0, 4);
  auto* w = f.Param({6, 5}, "w");
  auto* out = f.b.Einsum("ABC,CD->AD", x, w);
  REQUIRE(out->opcode == Opcode::kDot);
  REQUIRE(out->operand(0)->opcode == Opcode::kReduce);
  Propagate(*f.m, 4);
  CHECK(S(out->operand(0)) == "{devices=[4,1]0,1,2,3}");  // reduce keeps A
  CHECK(S(out) == "{devices=[4,1]0,1,2,3}");
  CHECK(S(w) == "{replicated}");
}

TEST_CASE("reduce AB->A keeps A's tiles; reduced dims' tiles become replication") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 4}, "x"), 0, 4);
  auto* r = f.b.Reduce(x, {1}, ReduceKind::kAdd);
  // 2x2 array [[0,1],[2,3]]: dropping dim 1 groups rows; dropping dim 0 groups columns, whose
  // devices in order are 0,2 | 1,3.
  auto* y = Shard(f.Param({8, 4}, "y"), {2, 2}, {0, 1, 2, 3});
  auto* keep_rows = f.b.Reduce(y, {1}, ReduceKind::kMax);
  auto* keep_cols = f.b.Reduce(y, {0}, ReduceKind::kAdd);
  auto* all = f.b.Reduce(y, {0, 1}, ReduceKind::kAdd);
  Propagate(*f.m, 4);
  CHECK(S(r) == "{devices=[4]0,1,2,3}");
  CHECK(S(keep_rows) == "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(S(keep_cols) == "{devices=[2,2]0,2,1,3 last_tile_dim_replicate}");
  CHECK(S(all) == "{replicated}");
}

TEST_CASE("reduce backward: the kept dims carry back, reduced dims stay whole") {
  ModuleFixture f;
  auto* x = f.Param({8, 4, 6}, "x");
  Split(f.b.Reduce(x, {1}, ReduceKind::kAdd), 1, 2);  // output [8,6] cut on 6 = x's dim 2
  Propagate(*f.m, 2);
  CHECK(S(x) == "{devices=[1,1,2]0,1}");
}

TEST_CASE("argmax, cumsum and sort") {
  ModuleFixture f;
  auto* x = Shard(f.Param({4, 8}, "x"), {2, 2}, {0, 1, 2, 3});
  auto* am = f.b.Argmax(x, 1);
  auto* cs = f.b.Cumsum(x, 1, /*exclusive=*/true);  // scans across shards: cut kept
  auto* sorted_cols = f.b.Sort(x, 1);               // the sorted dim is never cut
  auto* sorted_rows = f.b.Sort(x, 0);
  Propagate(*f.m, 4);
  CHECK(S(am) == "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(S(cs) == "{devices=[2,2]0,1,2,3}");
  CHECK(S(sorted_cols) == kRowPairs);
  CHECK(S(sorted_rows) == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
}

TEST_CASE("top-k: values and indices keep the operand's other dims, never the last") {
  ModuleFixture f;
  auto* x = Shard(f.Param({4, 8}, "x"), {2, 2}, {0, 1, 2, 3});
  auto* tk = f.b.TopK(x, 2);
  auto* values = f.b.GetTupleElement(tk, 0);
  auto* indices = f.b.GetTupleElement(tk, 1);
  auto* y = f.Param({8, 8}, "y");
  auto* tk2 = f.b.TopK(y, 3);
  Split(f.b.Neg(f.b.GetTupleElement(tk2, 0)), 0, 4);
  Propagate(*f.m, 4);
  CHECK(S(values) == kRowPairs);
  CHECK(S(indices) == kRowPairs);
  CHECK(S(tk) == "{replicated}");  // tuple placeholder
  CHECK(Listed(TupleElementSharding(*tk, 1)) == kRowPairs);
  CHECK(S(y) == "{devices=[4,1]0,1,2,3}");  // backward from the values' user
}

// Input b01f [8,16,16,4], kernel 01io [3,3,4,8], window 3x3 stride 1 pad 1: output [8,16,16,8].
struct ConvFixture : ModuleFixture {
  ir::Instruction* in = Param({8, 16, 16, 4}, "in");
  ir::Instruction* kernel = Param({3, 3, 4, 8}, "kernel");
  ir::Instruction* out = nullptr;
  ConvFixture() {
    ir::ConvDims d;
    d.input_batch = 0;
    d.input_feature = 3;
    d.input_spatial = {1, 2};
    d.kernel_spatial = {0, 1};
    d.kernel_input_feature = 2;
    d.kernel_output_feature = 3;
    d.output_batch = 0;
    d.output_feature = 3;
    d.output_spatial = {1, 2};
    ir::WindowDim w{3, 1, 1, 1, 1, 1};
    out = b.Convolution(in, kernel, d, {w, w});
  }
};

TEST_CASE("convolution: batch, spatial and output feature cuts") {
  ConvFixture batch;
  Split(batch.in, 0, 2);
  Propagate(*batch.m, 2);
  CHECK(S(batch.out) == "{devices=[2,1,1,1]0,1}");
  ConvFixture spatial;  // H cut 4 ways; the lowering exchanges halos
  Split(spatial.in, 1, 4);
  Propagate(*spatial.m, 4);
  CHECK(S(spatial.out) == "{devices=[1,4,1,1]0,1,2,3}");
  ConvFixture feature;
  Split(feature.kernel, 3, 2);
  Propagate(*feature.m, 2);
  CHECK(S(feature.out) == "{devices=[1,1,1,2]0,1}");
  ConvFixture contracting;  // input features cut: the kernel's input features follow
  Split(contracting.in, 3, 2);
  Propagate(*contracting.m, 2);
  CHECK(S(contracting.kernel) == "{devices=[1,1,2,1]0,1}");
  CHECK(S(contracting.out) == "{replicated}");
  ConvFixture both;  // batch over {0,1}|{2,3}, output features over {0,2}|{1,3}
  Shard(both.in, {2, 1, 1, 1, 2}, {0, 1, 2, 3}, true);
  Shard(both.kernel, {1, 1, 1, 2, 2}, {0, 2, 1, 3}, true);
  Propagate(*both.m, 4);
  CHECK(S(both.out) == "{devices=[2,1,1,2]0,1,2,3}");
}

TEST_CASE("reduce-window keeps cuts on windowed dims unless spatial partitioning is off") {
  ModuleFixture f;
  auto* x = Split(f.Param({16, 16}, "x"), 0, 4);
  ir::WindowDim w3{3, 1, 1, 1, 1, 1}, w1{};
  auto* pooled = f.b.ReduceWindow(x, {w3, w1}, ReduceKind::kMax);
  Propagate(*f.m, 4);
  CHECK(S(pooled) == "{devices=[4,1]0,1,2,3}");
  ModuleFixture g;
  auto* x2 = Split(g.Param({16, 16}, "x"), 0, 4);
  auto* pooled2 = g.b.ReduceWindow(x2, {w3, w1}, ReduceKind::kMax);
  PropagationOptions no_spatial;
  no_spatial.spatial_partitioning = false;
  Propagate(*g.m, 4, no_spatial);
  CHECK(S(pooled2) == "{replicated}");
}

TEST_CASE("gather: table dims besides the axis and index dims both carry") {
  // table [V,M] cols over {0,2}|{1,3}; indices [B,S] rows over {0,1}|{2,3}; out [B,S,M]:
  // device d holds (B block d/2, M block d%2) = [2,1,2]0,1,2,3.
  ModuleFixture f;
  auto* table = Shard(f.Param({16, 8}, "table"), {1, 2, 2}, {0, 2, 1, 3}, true);
  auto* idx = Shard(f.Param({4, 6}, "idx", DType::kS32), {2, 1, 2}, {0, 1, 2, 3}, true);
  auto* out = f.b.Gather(table, idx, 0);
  Propagate(*f.m, 4);
  CHECK(S(out) == "{devices=[2,1,2]0,1,2,3}");
  ModuleFixture g;  // backward: the axis dim of the table stays whole
  auto* table2 = g.Param({16, 8}, "table");
  auto* idx2 = g.Param({4, 6}, "idx", DType::kS32);
  Shard(g.b.Gather(table2, idx2, 0), {2, 1, 2}, {0, 1, 2, 3});
  Propagate(*g.m, 4);
  CHECK(S(table2) == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  CHECK(S(idx2) == kRowPairs);
}

// GShard Algorithm 2 (paper section 3.2) with top-1 gating, D = 4 devices, G = E = D.
struct MoeLayer {
  static constexpr int64_t D = 4, G = 4, S = 8, M = 16, E = 4, C = 4, H = 32;
  ModuleFixture f;
  ir::Instruction *inputs, *wg, *wi, *wo, *logits, *gates, *iota_e, *mask, *dispatch_mask,
      *combine_weights, *dispatch_dot, *dispatched, *h_dot, *h, *expert_dot, *expert_outputs,
      *outputs;

  MoeLayer() {
    ir::Builder& b = f.b;
    inputs = Split(f.Param({G, S, M}, "inputs"), 0, D);  // annotation 1: split on G
    wg = Replicate(f.Param({M, E}, "wg"));               // annotation 2: replicate wg
    wi = f.Param({E, M, H}, "wi");
    wo = f.Param({E, H, M}, "wo");
    logits = b.Einsum("GSM,ME->GSE", inputs, wg);
    // softmax over E
    auto* mx = b.Broadcast(b.Reduce(logits, {2}, ReduceKind::kMax), {G, S, E}, {0, 1});
    auto* ex = b.Exp(b.Sub(logits, mx));
    gates = b.Div(ex, b.Broadcast(b.Reduce(ex, {2}, ReduceKind::kAdd), {G, S, E}, {0, 1}));
    // top-1 expert, its position in the expert's buffer (cumsum over S), capacity C
    auto* top = b.Broadcast(b.Argmax(gates, 2), {G, S, E}, {0, 1});
    iota_e = b.Iota(Shape(DType::kS32, {G, S, E}), 2);
    auto* onehot = b.Convert(b.Compare(top, iota_e, Comparison::kEq), DType::kF32);
    auto* pos = b.Cumsum(onehot, 1, /*exclusive=*/true);
    auto* cap = b.BroadcastScalar(b.ConstantScalar(DType::kF32, C), {G, S, E});
    mask = b.Mul(onehot, b.Convert(b.Compare(pos, cap, Comparison::kLt), DType::kF32));
    auto* slot = b.Convert(b.Reduce(b.Mul(pos, mask), {2}, ReduceKind::kAdd), DType::kS32);
    auto* slot_onehot = b.Convert(
        b.Compare(b.Broadcast(slot, {G, S, C}, {0, 1}), b.Iota(Shape(DType::kS32, {G, S, C}), 2),
                  Comparison::kEq),
        DType::kF32);
    dispatch_mask = b.Mul(b.Broadcast(mask, {G, S, E, C}, {0, 1, 2}),
                          b.Broadcast(slot_onehot, {G, S, E, C}, {0, 1, 3}));
    auto* gate = b.Reduce(b.Mul(gates, mask), {2}, ReduceKind::kAdd);
    combine_weights = b.Mul(b.Broadcast(gate, {G, S, E, C}, {0, 1}), dispatch_mask);
    // annotation 3: split the dispatched expert inputs on E
    dispatched = Split(b.Einsum("GSEC,GSM->EGCM", dispatch_mask, inputs), 0, D);
    dispatch_dot = dispatched->operand(0);
    h_dot = b.Einsum("EGCM,EMH->EGCH", dispatched, wi);
    h = b.Max(h_dot, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0), {E, G, C, H}));
    expert_outputs = b.Einsum("EGCH,EHM->GECM", h, wo);
    expert_dot = expert_outputs->operand(0);
    outputs = b.Einsum("GSEC,GECM->GSM", combine_weights, expert_outputs);
  }
};

TEST_CASE("MoE layer (Algorithm 2): three annotations propagate to the paper's shardings") {
  MoeLayer l;
  Propagate(*l.f.m, MoeLayer::D);
  const std::string g3 = "{devices=[4,1,1]0,1,2,3}", g4 = "{devices=[4,1,1,1]0,1,2,3}";
  // Gating: G-split like the inputs (wg replicated, so the einsum's only cut is G).
  CHECK(S(l.logits) == g3);
  CHECK(S(l.gates) == g3);
  CHECK(S(l.iota_e) == g3);  // iota takes its user's sharding
  CHECK(S(l.mask) == g3);
  CHECK(S(l.dispatch_mask) == g4);
  CHECK(S(l.combine_weights) == g4);
  // Dispatch einsum GSEC,GSM->EGCM = dot (GECM) + transpose. The dot stays G-split (forward
  // beats the equally specific backward E-split); the annotated transpose is E-split, so the
  // lowering's Reshard at the transpose is the first AllToAll.
  REQUIRE(l.dispatch_dot->opcode == Opcode::kDot);
  CHECK(S(l.dispatch_dot) == g4);
  CHECK(S(l.dispatched) == g4);  // E is dim 0 of EGCM
  // Experts: E-split; wi and wo inferred E-split without annotations.
  CHECK(S(l.wi) == g3);
  CHECK(S(l.wo) == g3);
  CHECK(S(l.h_dot) == g4);
  CHECK(S(l.h) == g4);
  CHECK(S(l.expert_dot) == g4);  // EGCM, E-split
  CHECK(S(l.expert_outputs) == "{devices=[1,4,1,1]0,1,2,3}");  // GECM: E is dim 1
  // Combine einsum GSEC,GECM->GSM: batch G from the combine weights; expert_outputs is cut on
  // the contracting E, which the lowering resolves (the second AllToAll).
  REQUIRE(l.outputs->opcode == Opcode::kDot);
  CHECK(S(l.outputs) == g3);
}

TEST_CASE("MoE layer: propagation is deterministic") {
  MoeLayer a, b;
  Propagate(*a.f.m, MoeLayer::D);
  Propagate(*b.f.m, MoeLayer::D);
  const auto& ia = a.f.c->instructions();
  const auto& ib = b.f.c->instructions();
  REQUIRE(ia.size() == ib.size());
  for (size_t k = 0; k < ia.size(); ++k) CHECK(S(ia[k].get()) == S(ib[k].get()));
}

}  // namespace
}  // namespace podsim::partitioner
