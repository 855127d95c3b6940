#pragma once
// A verified module that uses every opcode, most with non-default attributes, plus a loop body,
// tuples, shardings of every kind, name scopes and special floats (-0, +-inf, NaN with a
// payload, a denormal). For round-trip tests of the proto and text forms.

#include <bit>
#include <cstdint>
#include <limits>
#include <memory>

#include "ir/builder.h"
#include "ir/verifier.h"

namespace podsim::ir::testing {

// A NaN whose payload (0x123) and sign must survive a round trip.
inline double NanWithPayload() { return std::bit_cast<double>(uint64_t{0xfff8000000000123}); }

inline std::unique_ptr<Module> BuildAllOpsModule() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto m = std::make_unique<Module>("all_ops");
  const Shape f32_48(DType::kF32, {4, 8});
  const Shape s32_scalar(DType::kS32, {});

  // Loop body: (iteration, acc f32[4,8], w f32[8,8]) -> (tanh(acc . w), w).
  Computation* body = m->AddComputation("body");
  {
    Builder b(body);
    Builder::ScopeGuard scope(b, "layer/body");
    b.Parameter(0, s32_scalar, "iteration");
    auto* acc = b.Parameter(1, f32_48, "acc");
    auto* w = b.Parameter(2, Shape(DType::kF32, {8, 8}), "w_in");
    DotDims mm;
    mm.lhs_contracting = {1};
    mm.rhs_contracting = {0};
    auto* t = b.Tanh(b.Dot(acc, w, mm));
    b.Tuple({t, w});
  }

  Computation* main = m->AddComputation("main", /*is_entry=*/true);
  Builder b(main);
  auto* x = b.Parameter(0, f32_48, "x");
  x->sharding = Sharding::Tiled({2, 1}, {1, 0});
  auto* w = b.Parameter(1, Shape(DType::kF32, {8, 8}), "w");
  w->sharding = Sharding::Replicated();
  auto* idx = b.Parameter(2, Shape(DType::kS32, {3}), "idx");
  idx->sharding = Sharding::Maximal(1);
  auto* img = b.Parameter(3, Shape(DType::kBF16, {2, 5, 5, 3}), "img");
  img->sharding = Sharding::Tiled({2, 1, 1, 1, 2}, {0, 2, 1, 3}, /*last_tile_dim_replicate=*/true);
  auto* kernel = b.Parameter(4, Shape(DType::kBF16, {3, 3, 1, 6}), "kernel");
  kernel->sharding = Sharding::Manual();
  auto* mask = b.Parameter(5, Shape(DType::kPred, {4, 8}), "mask");

  // Leaves.
  auto* special = b.Constant(Literal(Shape(DType::kF32, {8}),
                                     {-0.0, kInf, -kInf, NanWithPayload(), 1e-40, 0.1, 1.5, -3}));
  special->scope = "consts";
  auto* zero = b.ConstantScalar(DType::kS32, 0);
  auto* one = b.ConstantScalar(DType::kS32, 1);
  auto* fzero = b.ConstantScalar(DType::kF32, -0.0);
  b.Iota(Shape(DType::kS32, {4, 8}), 1);
  b.PartitionId();
  b.RandomUniform(f32_48, 0xdeadbeefcafef00dull, -0.5, 2.0, {one, zero}, {8, 16});

  // Elementwise.
  Builder::ScopeGuard scope(b, "moe/elementwise");
  for (Opcode op : {Opcode::kNegate, Opcode::kExp, Opcode::kLog, Opcode::kSqrt, Opcode::kRsqrt,
                    Opcode::kTanh, Opcode::kAbs}) {
    b.Unary(op, x);
  }
  b.Convert(x, DType::kBF16);
  for (Opcode op : {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide,
                    Opcode::kMaximum, Opcode::kMinimum, Opcode::kPower}) {
    b.Binary(op, x, x);
  }
  b.Compare(x, x, Comparison::kGe);
  b.And(mask, mask);
  b.Or(mask, mask);
  b.Select(mask, x, x);
  // The ops and element types of imported XLA programs.
  for (Opcode op : {Opcode::kSine, Opcode::kCosine, Opcode::kLogistic, Opcode::kFloor,
                    Opcode::kCeil, Opcode::kIsFinite}) {
    b.Unary(op, x);
  }
  b.Convert(x, DType::kF16);
  b.Convert(x, DType::kF8E4M3FN);
  auto* ints = b.Iota(Shape(DType::kS32, {4, 8}), 0);
  b.Unary(Opcode::kNot, ints);
  b.Unary(Opcode::kNot, mask);
  b.Binary(Opcode::kXor, mask, mask);
  for (Opcode op : {Opcode::kXor, Opcode::kShiftLeft, Opcode::kShiftRightLogical,
                    Opcode::kShiftRightArithmetic}) {
    b.Binary(op, ints, ints);
  }
  {
    auto call = std::make_unique<Instruction>();
    call->opcode = Opcode::kCustomCall;
    call->shape = Shape::Tuple({f32_48, Shape(DType::kU8, {16})});
    call->operands = {x, ints};
    call->custom_call_target = "te_fused_attn \"fwd\"";
    call->custom_call_flops = 1.5e9;
    b.computation()->Add(std::move(call));
  }

  // Data movement.
  b.set_scope("moe/dispatch");
  b.BroadcastScalar(fzero, {4, 8});
  auto* x3 = b.Broadcast(x, {2, 4, 8}, {1, 2});
  b.Reshape(x, {32});
  b.Transpose(x, {1, 0});
  b.Slice(x, {1, 0}, {4, 8}, {2, 3});
  b.DynamicSlice(x, {one, zero}, {2, 4});
  auto* update = b.Slice(x, {0, 0}, {2, 4});
  b.DynamicUpdateSlice(x, update, {one, one});
  b.Pad(x, fzero, {{1, -1, 1}, {0, 2, 0}});
  b.Concatenate({x, x, x}, 0);
  b.Reverse(x, {0, 1});
  b.Gather(x, idx, 0);

  // Contractions and reductions.
  b.set_scope("");
  DotDims batched;
  batched.lhs_batch = {0};
  batched.rhs_batch = {0};
  batched.lhs_contracting = {2};
  batched.rhs_contracting = {1};
  b.Dot(x3, b.Broadcast(w, {2, 8, 8}, {1, 2}), batched);
  ConvDims cd;  // b01f_01io->b01f
  cd.input_batch = 0;
  cd.input_feature = 3;
  cd.input_spatial = {1, 2};
  cd.kernel_input_feature = 2;
  cd.kernel_output_feature = 3;
  cd.kernel_spatial = {0, 1};
  cd.output_batch = 0;
  cd.output_feature = 3;
  cd.output_spatial = {1, 2};
  WindowDim cw;
  cw.size = 3;
  cw.stride = 2;
  cw.pad_low = 1;
  cw.pad_high = 1;
  cw.window_dilation = 2;
  b.Convolution(img, kernel, cd, {cw, cw}, /*feature_group_count=*/3);
  b.Reduce(x, {1}, ReduceKind::kMax);
  b.Reduce(mask, {0, 1}, ReduceKind::kAnd);
  b.Argmax(x, 1);
  WindowDim r0;
  r0.size = 2;
  r0.pad_high = 1;
  WindowDim r1;
  r1.size = 3;
  r1.stride = 2;
  r1.pad_low = 1;
  r1.pad_high = 1;
  r1.base_dilation = 2;
  b.ReduceWindow(x, {r0, r1}, ReduceKind::kMin);
  b.Cumsum(x, 1, /*exclusive=*/true);
  b.Sort(x, 0, /*descending=*/true);
  b.GetTupleElement(b.TopK(x, 3), 1);

  // Collectives.
  b.set_scope("collectives");
  b.AllReduce(x, ReduceKind::kMax, {{0, 1}, {2, 3}});
  b.AllGather(x, 0, {{0, 1, 2, 3}});
  b.AllGather(x, 1, {}, /*num_partitions=*/2);
  b.ReduceScatter(x, 1, ReduceKind::kAdd, {{1, 0}});
  b.AllToAll(x, 1, 0, {{0, 1}});
  b.CollectivePermute(x, {{0, 1}, {1, 2}, {2, 0}});
  b.AllReduce(x, ReduceKind::kAdd, IotaReplicaGroupList(2, 2, IotaDevices::Create({2, 2}, {1, 0})));

  // A manual region over 2 devices, tiles of x in the iota form.
  auto* shard = b.AutoToManual(x, Sharding::Tiled({2, 1}, DeviceList(IotaDevices::Range(2))));
  b.ManualToAuto(b.Tanh(shard), Sharding::Tiled({2, 1}, {1, 0}), {4, 8});

  // Control: a loop, and a root that is not the last instruction.
  b.set_scope("");
  auto* loop = b.Loop({x, w}, body, 3);
  auto* result = b.GetTupleElement(loop, 0);
  auto* root = b.Tuple({result, special});
  b.Neg(x);  // after the root
  main->set_root(root);

  Verify(*m);
  return m;
}

}  // namespace podsim::ir::testing
