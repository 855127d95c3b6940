// Cost analysis, with every expected value derived by hand in a comment (formulas in
// docs/cost-model.md). f32 = 4 bytes, bf16 = 2, s32 = 4, pred = 1.

#include <doctest/doctest.h>

#include <map>

#include "ir/builder.h"
#include "ir/cost.h"
#include "ir/verifier.h"
#include "tests/ir/all_ops_module.h"

namespace podsim::ir {
namespace {

struct Fixture {
  std::unique_ptr<Module> m = std::make_unique<Module>("cost");
  Computation* c = m->AddComputation("main", true);
  Builder b{c};
  int64_t next_parameter = 0;
  Instruction* Param(std::vector<int64_t> dims, DType t = DType::kF32) {
    return b.Parameter(next_parameter++, Shape(t, std::move(dims)));
  }
};

DotDims Contract(std::vector<int64_t> lhs, std::vector<int64_t> rhs) {
  DotDims d;
  d.lhs_contracting = std::move(lhs);
  d.rhs_contracting = std::move(rhs);
  return d;
}

TEST_CASE("dot flops are 2*M*N*K") {
  Fixture f;
  // [M=4,K=8] . [K=8,N=16]: 2*4*16*8 = 1024 flops; reads (32+128)*4 = 640 B, writes 64*4 = 256.
  auto* d = f.b.Dot(f.Param({4, 8}), f.Param({8, 16}), Contract({1}, {0}));
  Cost c = InstructionCost(*d);
  CHECK(c.unit == Unit::kMatrix);
  CHECK(c.flops == 1024);
  CHECK(c.transcendentals == 0);
  CHECK(c.bytes_read == 640);
  CHECK(c.bytes_written == 256);
  CHECK(c.network_bytes == 0);
}

TEST_CASE("batched dot and several contracting dims") {
  Fixture f;
  // [B=3,M=4,K=5] . [B=3,K=5,N=6]: 2*3*4*6*5 = 720.
  DotDims dd = Contract({2}, {1});
  dd.lhs_batch = {0};
  dd.rhs_batch = {0};
  CHECK(InstructionCost(*f.b.Dot(f.Param({3, 4, 5}), f.Param({3, 5, 6}), dd)).flops == 720);
  // [2,3,4] . [3,4,5] contracting {1,2} x {0,1}: E = 2*5 = 10, K = 3*4 = 12: 2*10*12 = 240.
  auto* d = f.b.Dot(f.Param({2, 3, 4}), f.Param({3, 4, 5}), Contract({1, 2}, {0, 1}));
  CHECK(InstructionCost(*d).flops == 240);
}

TEST_CASE("convolution with feature groups and stride") {
  Fixture f;
  // Input b01f [N=2,H=8,W=8,C=4], kernel 01io [3,3,C/g=2,O=6], groups 2, stride 2, pad 1:
  // out spatial (8+2-3)/2+1 = 4, output [2,4,4,6] = 192 elements.
  // flops = 2 * 192 * (3*3 taps * 2 input features per group) = 6912.
  ConvDims cd;
  cd.input_batch = 0;
  cd.input_feature = 3;
  cd.input_spatial = {1, 2};
  cd.kernel_input_feature = 2;
  cd.kernel_output_feature = 3;
  cd.kernel_spatial = {0, 1};
  cd.output_batch = 0;
  cd.output_feature = 3;
  cd.output_spatial = {1, 2};
  WindowDim w{3, 2, 1, 1, 1, 1};
  auto* conv = f.b.Convolution(f.Param({2, 8, 8, 4}), f.Param({3, 3, 2, 6}), cd, {w, w}, 2);
  REQUIRE(conv->shape.dims == std::vector<int64_t>{2, 4, 4, 6});
  Cost c = InstructionCost(*conv);
  CHECK(c.unit == Unit::kMatrix);
  CHECK(c.flops == 6912);
  CHECK(c.bytes_read == (2 * 8 * 8 * 4 + 3 * 3 * 2 * 6) * 4);  // 2480
  CHECK(c.bytes_written == 192 * 4);
}

TEST_CASE("einsum lowered to dot, transpose and reduce") {
  Fixture f;
  // GSM,ME->GSE with G=2,S=3,M=4,E=5 is one dot: 2*(2*3*5)*4 = 240 flops.
  f.b.Einsum("GSM,ME->GSE", f.Param({2, 3, 4}), f.Param({4, 5}));
  ModuleCost mc = AnalyzeCost(*f.m);
  CHECK(mc.total.flops == 240);
  CHECK(mc.per_unit[static_cast<int>(Unit::kMemory)].bytes_written == 0);  // no transpose

  Fixture g;
  // BSM,BMN->BNS, B=2,S=3,M=4,N=5: dot [B,S,N] 2*(2*3*5)*4 = 240 flops, then a transpose that
  // reads and writes 30*4 = 120 bytes.
  g.b.Einsum("BSM,BMN->BNS", g.Param({2, 3, 4}), g.Param({2, 4, 5}));
  ModuleCost mg = AnalyzeCost(*g.m);
  CHECK(mg.per_unit[static_cast<int>(Unit::kMatrix)].flops == 240);
  CHECK(mg.per_unit[static_cast<int>(Unit::kMemory)].bytes_read == 120);
  CHECK(mg.per_unit[static_cast<int>(Unit::kMemory)].bytes_written == 120);

  Fixture h;
  // AB,BC->C, A=3,B=4,C=5: A is summed away first (reduce [3,4]->[4]: 12-4 = 8 flops), then the
  // dot [4].[4,5] over B: 2*5*4 = 40 flops. Total 48.
  h.b.Einsum("AB,BC->C", h.Param({3, 4}), h.Param({4, 5}));
  ModuleCost mh = AnalyzeCost(*h.m);
  CHECK(mh.per_unit[static_cast<int>(Unit::kVector)].flops == 8);
  CHECK(mh.per_unit[static_cast<int>(Unit::kMatrix)].flops == 40);
  CHECK(mh.total.flops == 48);
}

TEST_CASE("reductions, scans and sorts") {
  Fixture f;
  auto* x = f.Param({4, 8});
  // reduce over {1}: 32 in, 4 out: 28 flops; over both dims: 31.
  CHECK(InstructionCost(*f.b.Reduce(x, {1}, ReduceKind::kAdd)).flops == 28);
  Cost all = InstructionCost(*f.b.Reduce(x, {0, 1}, ReduceKind::kMax));
  CHECK(all.flops == 31);
  CHECK(all.bytes_read == 128);
  CHECK(all.bytes_written == 4);
  // argmax along 1: 28 flops, writes s32[4] = 16 bytes.
  Cost am = InstructionCost(*f.b.Argmax(x, 1));
  CHECK(am.flops == 28);
  CHECK(am.bytes_written == 16);
  // reduce-window 2x3, stride 1, no padding: output [3,6] = 18, each 6 taps: 18*5 = 90.
  WindowDim w0{2, 1, 0, 0, 1, 1}, w1{3, 1, 0, 0, 1, 1};
  CHECK(InstructionCost(*f.b.ReduceWindow(x, {w0, w1}, ReduceKind::kMax)).flops == 90);
  // cumsum along 1 (n = 8, not above XLA's base length 16): one reduce-window of 8 taps per
  // element, every tap counted: 32 * 7 = 224; no intermediate bytes.
  Cost scan = InstructionCost(*f.b.Cumsum(x, 1));
  CHECK(scan.flops == 224);
  CHECK(scan.bytes_read == 128);
  // A long scan, f32[2,300] along 1, as ReduceWindowRewriter builds it with base 16:
  //   level 1: 300 -> 19 blocks, padded to 304: 608 elements; 15 adds each + 1 broadcast add:
  //            608 * 16 = 9728 flops; bytes: the padded copy 2 * 608 * 4 = 4864, the block sums
  //            written and read 4864, the 2 x 19 totals sliced and their scan read / written
  //            4 * 38 * 4 = 608;
  //   level 2: the totals' scan, n = 19 -> 2 blocks, padded to 32: 64 elements: 64 * 16 = 1024
  //            flops; bytes 512 (pad) + 512 + 4 * 4 * 4 = 64;
  //   level 3: n = 2, dense: 2 rows * 2 * 1 = 4 flops.
  // flops 9728 + 1024 + 4 = 10756; extra bytes 4864 + 4864 + 608 + 512 + 512 + 64 = 11424, half
  // read and half written on top of the operand's and result's 2400 B each.
  auto* y = f.Param({2, 300});
  Cost tree = InstructionCost(*f.b.Cumsum(y, 1));
  CHECK(tree.flops == 10756);
  CHECK(tree.bytes_read == 2400 + 5712);
  CHECK(tree.bytes_written == 2400 + 5712);
  // sort along 1: 32 elements * log2(8) = 96; top-k k=2 sorts the rows too: 96, and writes
  // values f32[4,2] + indices s32[4,2] = 32 + 32 bytes.
  CHECK(InstructionCost(*f.b.Sort(x, 1)).flops == 96);
  Cost topk = InstructionCost(*f.b.TopK(x, 2));
  CHECK(topk.flops == 96);
  CHECK(topk.bytes_written == 64);
  CHECK(topk.unit == Unit::kVector);
}

TEST_CASE("elementwise flops and transcendentals") {
  Fixture f;
  auto* x = f.Param({4, 8});
  // add: 32 flops, reads 2*128 B, writes 128 B.
  Cost add = InstructionCost(*f.b.Add(x, x));
  CHECK(add.flops == 32);
  CHECK(add.bytes_read == 256);
  CHECK(add.bytes_written == 128);
  // exp, log, sqrt, rsqrt, tanh, power: 32 transcendentals, no flops.
  for (Opcode op : {Opcode::kExp, Opcode::kLog, Opcode::kSqrt, Opcode::kRsqrt, Opcode::kTanh}) {
    Cost c = InstructionCost(*f.b.Unary(op, x));
    CHECK(c.transcendentals == 32);
    CHECK(c.flops == 0);
  }
  Cost pow = InstructionCost(*f.b.Pow(x, x));
  CHECK(pow.transcendentals == 32);
  CHECK(pow.flops == 0);
  // convert to bf16: 32 flops, reads 128 B, writes 64 B.
  Cost cv = InstructionCost(*f.b.Convert(x, DType::kBF16));
  CHECK(cv.flops == 32);
  CHECK(cv.bytes_written == 64);
  // select(pred[4,8], x, x): reads 32 + 128 + 128 B, 32 flops.
  Cost sel = InstructionCost(*f.b.Select(f.b.Compare(x, x, Comparison::kLt), x, x));
  CHECK(sel.bytes_read == 288);
  CHECK(sel.flops == 32);
  // random-uniform f32[4,8]: one flop per element, writes 128 B; iota writes only.
  Cost rng = InstructionCost(*f.b.RandomUniform(Shape(DType::kF32, {4, 8}), 7));
  CHECK(rng.flops == 32);
  CHECK(rng.bytes_written == 128);
  Cost iota = InstructionCost(*f.b.Iota(Shape(DType::kS32, {4, 8}), 0));
  CHECK(iota.flops == 0);
  CHECK(iota.bytes_written == 128);
}

TEST_CASE("bytes of data movement") {
  Fixture f;
  auto* x = f.Param({8, 16});
  auto* s0 = f.b.ConstantScalar(DType::kS32, 0);
  // slice [2:6, 0:16:4] = [4,4]: reads only what it outputs, 64 B, writes 64 B.
  Cost sl = InstructionCost(*f.b.Slice(x, {2, 0}, {6, 16}, {1, 4}));
  CHECK(sl.bytes_read == 64);
  CHECK(sl.bytes_written == 64);
  CHECK(sl.unit == Unit::kMemory);
  // dynamic-slice [2,4] with two s32 starts: reads 32 + 8 B, writes 32 B.
  Cost ds = InstructionCost(*f.b.DynamicSlice(x, {s0, s0}, {2, 4}));
  CHECK(ds.bytes_read == 40);
  CHECK(ds.bytes_written == 32);
  // dynamic-update-slice of a [2,4] update, in place: reads 32 + 8 B, writes 32 B.
  Cost dus = InstructionCost(*f.b.DynamicUpdateSlice(x, f.Param({2, 4}), {s0, s0}));
  CHECK(dus.bytes_read == 40);
  CHECK(dus.bytes_written == 32);
  // gather 3 rows of 16 from x: reads 3*16*4 = 192 + indices 12 B, writes 192 B.
  Cost ga = InstructionCost(*f.b.Gather(x, f.Param({3}, DType::kS32), 0));
  CHECK(ga.bytes_read == 204);
  CHECK(ga.bytes_written == 192);
  // broadcast of a scalar to [4,8]: reads 4 B, writes 128 B.
  Cost bc = InstructionCost(*f.b.BroadcastScalar(f.b.ConstantScalar(DType::kF32, 1), {4, 8}));
  CHECK(bc.bytes_read == 4);
  CHECK(bc.bytes_written == 128);
  // pad f32[4] by (1,1) with a scalar: reads 16 + 4 B, writes 6*4 = 24 B.
  Cost pad = InstructionCost(
      *f.b.Pad(f.Param({4}), f.b.ConstantScalar(DType::kF32, 0), {PadDim{1, 1, 0}}));
  CHECK(pad.bytes_read == 20);
  CHECK(pad.bytes_written == 24);
  // transpose and reshape copy: 512 B each way.
  Cost tr = InstructionCost(*f.b.Transpose(x, {1, 0}));
  CHECK(tr.bytes_read == 512);
  CHECK(tr.bytes_written == 512);
  CHECK(InstructionCost(*f.b.Reshape(x, {128})).bytes_written == 512);
  // Bookkeeping moves nothing.
  Cost tu = InstructionCost(*f.b.Tuple({x, x}));
  CHECK(tu.bytes_read == 0);
  CHECK(tu.bytes_written == 0);
  CHECK(tu.unit == Unit::kNone);
}

TEST_CASE("collective network bytes per partition") {
  Fixture f;
  auto* x = f.Param({8, 16});  // V = 512 bytes, 128 elements
  Builder::Groups fours = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  // all-reduce, G=4: 2*(3/4)*512 = 768 B sent; 3/4 * 128 = 96 flops of reduction.
  Cost ar = InstructionCost(*f.b.AllReduce(x, ReduceKind::kAdd, fours));
  CHECK(ar.network_bytes == 768);
  CHECK(ar.flops == 96);
  CHECK(ar.unit == Unit::kNetwork);
  // all-gather, G=4: (4-1)*512 = 1536 B; writes [32,16] = 2048 B.
  Cost ag = InstructionCost(*f.b.AllGather(x, 0, fours));
  CHECK(ag.network_bytes == 1536);
  CHECK(ag.bytes_written == 2048);
  // reduce-scatter, G=4: (3/4)*512 = 384 B; 96 flops.
  Cost rs = InstructionCost(*f.b.ReduceScatter(x, 0, ReduceKind::kAdd, fours));
  CHECK(rs.network_bytes == 384);
  CHECK(rs.flops == 96);
  // all-to-all, G=4: (3/4)*512 = 384 B.
  CHECK(InstructionCost(*f.b.AllToAll(x, 0, 1, fours)).network_bytes == 384);
  // collective-permute: a sender sends all 512 B; no pairs, nothing.
  CHECK(InstructionCost(*f.b.CollectivePermute(x, {{0, 1}, {1, 0}})).network_bytes == 512);
  CHECK(InstructionCost(*f.b.CollectivePermute(x, {})).network_bytes == 0);
  // Groups of one send nothing.
  CHECK(InstructionCost(*f.b.AllReduce(x, ReduceKind::kAdd, {{0}, {1}})).network_bytes == 0);
  // Empty groups: all-reduce takes G = num_partitions = 8: 2*(7/8)*512 = 896 B; with the
  // default num_partitions = 1, nothing.
  auto* all = f.b.AllReduce(x, ReduceKind::kAdd);
  CHECK(InstructionCost(*all, 8).network_bytes == 896);
  CHECK(InstructionCost(*all).network_bytes == 0);
  // An all-partitions all-gather's shapes fix G = 2 ([8,16] -> [16,16]): 512 B, whatever
  // num_partitions says.
  auto* ag2 = f.b.AllGather(x, 0, {}, 2);
  CHECK(InstructionCost(*ag2, 8).network_bytes == 512);
}

TEST_CASE("a loop costs its body times trip_count") {
  auto m = std::make_unique<Module>("loop");
  Computation* body = m->AddComputation("body");
  Builder bb(body);
  bb.Parameter(0, Shape(DType::kS32, {}), "i");
  auto* acc = bb.Parameter(1, Shape(DType::kF32, {4, 8}), "acc");
  auto* w = bb.Parameter(2, Shape(DType::kF32, {8, 8}), "w");
  auto* dot = bb.Dot(acc, w, Contract({1}, {0}));  // 2*4*8*8 = 512 flops
  auto* t = bb.Tanh(dot);                          // 32 transcendentals
  bb.Tuple({t, w});
  Builder b(m->AddComputation("main", true));
  auto* loop = b.Loop({b.Parameter(0, Shape(DType::kF32, {4, 8}), "x"),
                       b.Parameter(1, Shape(DType::kF32, {8, 8}), "w")},
                      body, 3);
  b.GetTupleElement(loop, 0);
  Verify(*m);
  ModuleCost mc = AnalyzeCost(*m);
  // Per iteration in the body, times 3 in the loop and the totals.
  CHECK(mc.per_instruction.at(dot).flops == 512);
  CHECK(mc.per_instruction.at(t).transcendentals == 32);
  CHECK(mc.per_instruction.at(loop).flops == 1536);
  CHECK(mc.per_instruction.at(loop).transcendentals == 96);
  CHECK(mc.per_instruction.at(loop).unit == Unit::kNone);
  CHECK(mc.total.flops == 1536);
  CHECK(mc.total.transcendentals == 96);
  CHECK(mc.per_unit[static_cast<int>(Unit::kMatrix)].flops == 1536);
  CHECK(mc.per_unit[static_cast<int>(Unit::kVector)].transcendentals == 96);
  // dot reads (32+64)*4 = 384 B per iteration: 1152 in all.
  CHECK(mc.per_unit[static_cast<int>(Unit::kMatrix)].bytes_read == 1152);
  CHECK(InstructionCost(*loop).flops == 1536);
}

TEST_CASE("nested loops multiply their trip counts") {
  auto m = std::make_unique<Module>("nested");
  const Shape v(DType::kF32, {4});
  const Shape it(DType::kS32, {});
  Computation* inner = m->AddComputation("inner");
  Builder ib(inner);
  ib.Parameter(0, it, "i");
  ib.Tuple({ib.Exp(ib.Parameter(1, v, "a"))});  // 4 transcendentals
  Computation* outer = m->AddComputation("outer");
  Builder ob(outer);
  ob.Parameter(0, it, "j");
  auto* inner_loop = ob.Loop({ob.Parameter(1, v, "b")}, inner, 2);
  ob.Tuple({ob.GetTupleElement(inner_loop, 0)});
  Builder b(m->AddComputation("main", true));
  auto* outer_loop = b.Loop({b.Parameter(0, v, "x")}, outer, 5);
  b.GetTupleElement(outer_loop, 0);
  Verify(*m);
  // 4 * 2 * 5 = 40 transcendentals.
  ModuleCost mc = AnalyzeCost(*m);
  CHECK(mc.per_instruction.at(inner_loop).transcendentals == 8);
  CHECK(mc.per_instruction.at(outer_loop).transcendentals == 40);
  CHECK(mc.total.transcendentals == 40);
  CHECK(mc.per_unit[static_cast<int>(Unit::kVector)].transcendentals == 40);
}

TEST_CASE("every opcode gets its unit, and unit totals add up to the total") {
  const std::map<Opcode, Unit> expected = {
      {Opcode::kParameter, Unit::kNone}, {Opcode::kConstant, Unit::kNone},
      {Opcode::kPartitionId, Unit::kNone}, {Opcode::kTuple, Unit::kNone},
      {Opcode::kGetTupleElement, Unit::kNone}, {Opcode::kLoop, Unit::kNone},
      {Opcode::kIota, Unit::kVector}, {Opcode::kRandomUniform, Unit::kVector},
      {Opcode::kNegate, Unit::kVector}, {Opcode::kExp, Unit::kVector},
      {Opcode::kLog, Unit::kVector}, {Opcode::kSqrt, Unit::kVector},
      {Opcode::kRsqrt, Unit::kVector}, {Opcode::kTanh, Unit::kVector},
      {Opcode::kAbs, Unit::kVector}, {Opcode::kConvert, Unit::kVector},
      {Opcode::kAdd, Unit::kVector}, {Opcode::kSubtract, Unit::kVector},
      {Opcode::kMultiply, Unit::kVector}, {Opcode::kDivide, Unit::kVector},
      {Opcode::kMaximum, Unit::kVector}, {Opcode::kMinimum, Unit::kVector},
      {Opcode::kPower, Unit::kVector}, {Opcode::kCompare, Unit::kVector},
      {Opcode::kAnd, Unit::kVector}, {Opcode::kOr, Unit::kVector},
      {Opcode::kSelect, Unit::kVector}, {Opcode::kReduce, Unit::kVector},
      {Opcode::kArgmax, Unit::kVector}, {Opcode::kReduceWindow, Unit::kVector},
      {Opcode::kCumsum, Unit::kVector}, {Opcode::kSort, Unit::kVector},
      {Opcode::kTopK, Unit::kVector},
      {Opcode::kBroadcast, Unit::kMemory}, {Opcode::kReshape, Unit::kMemory},
      {Opcode::kTranspose, Unit::kMemory}, {Opcode::kSlice, Unit::kMemory},
      {Opcode::kDynamicSlice, Unit::kMemory}, {Opcode::kDynamicUpdateSlice, Unit::kMemory},
      {Opcode::kPad, Unit::kMemory}, {Opcode::kConcatenate, Unit::kMemory},
      {Opcode::kReverse, Unit::kMemory}, {Opcode::kGather, Unit::kMemory},
      {Opcode::kDot, Unit::kMatrix}, {Opcode::kConvolution, Unit::kMatrix},
      {Opcode::kAllReduce, Unit::kNetwork}, {Opcode::kAllGather, Unit::kNetwork},
      {Opcode::kReduceScatter, Unit::kNetwork}, {Opcode::kAllToAll, Unit::kNetwork},
      {Opcode::kCollectivePermute, Unit::kNetwork},
      {Opcode::kAutoToManual, Unit::kNone}, {Opcode::kManualToAuto, Unit::kNone},
      {Opcode::kSine, Unit::kVector}, {Opcode::kCosine, Unit::kVector},
      {Opcode::kLogistic, Unit::kVector}, {Opcode::kFloor, Unit::kVector},
      {Opcode::kCeil, Unit::kVector}, {Opcode::kNot, Unit::kVector},
      {Opcode::kIsFinite, Unit::kVector}, {Opcode::kXor, Unit::kVector},
      {Opcode::kShiftLeft, Unit::kVector}, {Opcode::kShiftRightLogical, Unit::kVector},
      {Opcode::kShiftRightArithmetic, Unit::kVector}, {Opcode::kCustomCall, Unit::kMatrix},
  };
  REQUIRE(static_cast<int>(expected.size()) == kNumOpcodes);
  auto m = testing::BuildAllOpsModule();
  ModuleCost mc = AnalyzeCost(*m, 4);
  for (const auto& c : m->computations()) {
    for (const auto& i : c->instructions()) {
      INFO("instruction %" << i->name);
      REQUIRE(mc.per_instruction.count(i.get()) == 1);
      CHECK(UnitName(mc.per_instruction.at(i.get()).unit) ==
            UnitName(expected.at(i->opcode)));
    }
  }
  // The entry's instructions (loops included whole) add up to the same total as the units.
  Cost by_unit, by_entry;
  for (const Cost& u : mc.per_unit) by_unit += u;
  for (const auto& i : m->entry()->instructions()) by_entry += mc.per_instruction.at(i.get());
  for (const Cost* sum : {&by_unit, &by_entry}) {
    CHECK(sum->flops == doctest::Approx(mc.total.flops));
    CHECK(sum->transcendentals == doctest::Approx(mc.total.transcendentals));
    CHECK(sum->bytes_read == doctest::Approx(mc.total.bytes_read));
    CHECK(sum->bytes_written == doctest::Approx(mc.total.bytes_written));
    CHECK(sum->network_bytes == doctest::Approx(mc.total.network_bytes));
  }
  CHECK(mc.per_unit[static_cast<int>(Unit::kNone)].bytes_read == 0);
  CHECK(mc.total.flops > 0);
  CHECK(mc.total.network_bytes > 0);
}

TEST_CASE("unit names") {
  CHECK(UnitName(Unit::kNone) == "none");
  CHECK(UnitName(Unit::kMatrix) == "matrix");
  CHECK(UnitName(Unit::kVector) == "vector");
  CHECK(UnitName(Unit::kMemory) == "memory");
  CHECK(UnitName(Unit::kNetwork) == "network");
}

}  // namespace
}  // namespace podsim::ir
