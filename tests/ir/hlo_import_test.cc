// The XLA HLO importer (ir/hlo_import.h) on small modules written in XLA's own syntax for these
// tests: the syntax, reductions, control flow, collectives, element types, shardings,
// custom-calls and errors; shapes, attributes and values (interpreted) derived by hand in the
// comments. Data-movement and contraction ops are in hlo_import_ops_test.cc, the ops that keep a
// computation in hlo_import_regions_test.cc.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/cost.h"
#include "ir/hlo_import.h"
#include "ir/interpreter.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/hlo_import_util.h"

namespace podsim::ir {
namespace {

TEST_CASE("bare names, layouts and a one-line module import and run") {
  // XLA's tools/data/add.hlo, as written there.
  const auto r = Import(
      "HloModule f\n\nENTRY f {\n  arg = f32[2,2]{1,0} parameter(0)\n"
      "  ROOT add_result = f32[2,2]{1,0} add(arg, arg)\n}\n");
  CHECK_FALSE(r.partitioned);
  CHECK(r.module->InstructionCount() == 2);
  // x + x = 2x.
  CHECK(Run(*r.module, {F32({2, 2}, {1, 2, 3, 4})}).values == std::vector<double>{2, 4, 6, 8});
}

TEST_CASE("comments, typed operands, %-names, instructions over lines, header attributes") {
  const auto r = Import(R"(HloModule m, is_scheduled=true, entry_computation_layout={(f32[3]{0})->f32[3]{0}}
// a line comment
%sq (p: f32[3]) -> f32[3] {
  %p = f32[3]{0} parameter(0)
  ROOT %m = f32[3]{0} multiply(f32[3]{0} %p, f32[3]{0} %p)
}
ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3]{0} parameter(0), sharding={replicated}, metadata={op_name="jit(f)/layer_0/mlp/mul" source_file="/a.py" source_line=3}
  %c1 = f32[3]{0} call(%x), to_apply=%sq
  ROOT %c2 = f32[3]{0}
      call(/*index=0*/%c1),
      to_apply=%sq, frontend_attributes={_xla_stream="1"}
}
)");
  // call is inlined twice: x^2 then (x^2)^2 = x^4, two multiplies named apart.
  CHECK(Count(*r.module, Opcode::kMultiply) == 2);
  CHECK(Run(*r.module, {F32({3}, {1, 2, -3})}).values == std::vector<double>{1, 16, 81});
  // op_name without its last component (the primitive) is the scope.
  REQUIRE(Find(*r.module, "x") != nullptr);
  CHECK(Find(*r.module, "x")->scope == "jit(f)/layer_0/mlp");
  CHECK(Find(*r.module, "x")->sharding == Sharding::Replicated());
}

TEST_CASE("reductions: to_apply recognised, init folded in when it is not the identity") {
  const std::string text = R"(HloModule m
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
max { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(b, a) }
ENTRY e {
  x = f32[2,2] parameter(0)
  ten = f32[] constant(10)
  ninf = f32[] constant(-inf)
  s = f32[2] reduce(x, ten), dimensions={1}, to_apply=add
  m = f32[2] reduce(x, ninf), dimensions={0}, to_apply=max
  ROOT t = (f32[2], f32[2]) tuple(s, m)
})";
  const auto r = Import(text);
  // Row sums plus the init: [1+2+10, 3+4+10]; column maxima (init -inf is max's identity, so
  // one reduce and no combine): [3, 4].
  const Literal out = Run(*r.module, {F32({2, 2}, {1, 2, 3, 4})});
  CHECK(out.elements[0].values == std::vector<double>{13, 17});
  CHECK(out.elements[1].values == std::vector<double>{3, 4});
  CHECK(Count(*r.module, Opcode::kReduce) == 2);
  CHECK(Count(*r.module, Opcode::kAdd) == 1);      // the init 10 combined once
  CHECK(Count(*r.module, Opcode::kMaximum) == 0);  // -inf changes nothing

  // A reduce with another computation is an opaque kernel (tested below), but a collective
  // reduces with podsim's kinds only: an error at to_apply's name.
  const std::string bad =
      "HloModule m\nmul { a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT m = f32[] multiply(a, b) }\nENTRY e {\n  x = f32[2] parameter(0)\n"
      "  ROOT y = f32[2] all-reduce(x), replica_groups={}, to_apply=mul\n}\n";
  const std::string m = ImportError(bad);
  CHECK_MESSAGE(m.find("t.hlo:7:62: to_apply=%mul of y is not an add, maximum, minimum, and or or") == 0, m);
}

constexpr const char* kWhileBody = R"(HloModule m
body {
  p = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[2] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x2 = f32[2] add(x, x)
  ROOT n = (s32[], f32[2]) tuple(i1, x2)
}
cond {
  p = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  lim = s32[] constant(LIMIT)
  ROOT lt = pred[] compare(i, lim), direction=LT
}
ENTRY e {
  x = f32[2] parameter(0)
  zero = s32[] constant(START)
  t = (s32[], f32[2]) tuple(zero, x)
  w = (s32[], f32[2]) while(t), condition=cond, body=body CONFIG
  ROOT r = f32[2] get-tuple-element(w), index=1
})";

std::string WhileModule(const std::string& start, const std::string& limit,
                        const std::string& config) {
  std::string s = kWhileBody;
  s.replace(s.find("LIMIT"), 5, limit);
  s.replace(s.find("START"), 5, start);
  s.replace(s.find(" CONFIG"), 7, config);
  return s;
}

TEST_CASE("while: trip count from the condition, from known_trip_count, or given") {
  const Literal x = F32({2}, {1, -3});
  {
    // i from 0 while i < 5, step 1: 5 iterations, x doubled 5 times = 32x.
    const auto r = Import(WhileModule("0", "5", ""));
    REQUIRE(Count(*r.module, Opcode::kLoop) == 1);
    CHECK(Run(*r.module, {x}).values == std::vector<double>{32, -96});
  }
  {
    // From 2 while < 5: 3 iterations, 8x.
    const auto r = Import(WhileModule("2", "5", ""));
    CHECK(Run(*r.module, {x}).values == std::vector<double>{8, -24});
  }
  {
    // backend_config's known_trip_count wins over the condition: 2 iterations, 4x.
    const auto r = Import(WhileModule(
        "0", "5", R"(, backend_config={"known_trip_count":{"n":"2"}})"));
    CHECK(Run(*r.module, {x}).values == std::vector<double>{4, -12});
  }
  // A counter that does not start at a constant: an error naming the loop and the way out.
  std::string unknown = WhileModule("0", "5", "");
  unknown.replace(unknown.find("zero = s32[] constant(0)"), 24, "zero = s32[] parameter(1)");
  const std::string message = ImportError(unknown);
  CHECK(message.find("while w: its trip count is not in the module") != std::string::npos);
  CHECK(message.find("--trip-count w=N") != std::string::npos);
  // A known_trip_count that is not a count, and a condition with 2^40 iterations: errors.
  CHECK(ImportError(WhileModule("0", "5", R"(, backend_config={"known_trip_count":{"n":"x"}})"))
            .find("known_trip_count is not a count") != std::string::npos);
  std::string s64 = WhileModule("0", "1099511627776", "");
  for (size_t at = s64.find("s32"); at != std::string::npos; at = s64.find("s32", at)) {
    s64.replace(at, 3, "s64");
  }
  CHECK(ImportError(s64).find("more than 2^31 iterations") != std::string::npos);
  // ... which --trip-count answers: 1 iteration, 2x.
  HloImportOptions options;
  options.trip_counts["w"] = 1;
  const auto r = Import(unknown, options);
  CHECK(Run(*r.module, {x, Literal::Scalar(DType::kS32, 0)}).values ==
        std::vector<double>{2, -6});
}

TEST_CASE("collectives make an SPMD program: iota replica groups, all-to-all dimensions") {
  const auto r = Import(R"(HloModule m
sum { a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b) }
ENTRY e {
  x = bf16[8,4] parameter(0)
  ar = bf16[8,4] all-reduce(x), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=sum
  ROOT a2a = bf16[8,4] all-to-all(ar), channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}
})");
  CHECK(r.partitioned);
  CHECK(r.num_partitions == 8);  // the iota [2,4]<=[8] addresses devices 0..7
  const Instruction* ar = Find(*r.module, "ar");
  REQUIRE(ar != nullptr);
  CHECK(ar->reduce_kind == ReduceKind::kAdd);
  CHECK(ReplicaGroupsOf(*ar) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  const Instruction* a2a = Find(*r.module, "a2a");
  REQUIRE(a2a != nullptr);
  CHECK(a2a->split_dimension == 0);
  CHECK(a2a->concat_dimension == 0);
}

TEST_CASE("clamp, iota, u32 partition-id and the ops added for imported programs") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  c = f32[3] clamp(lo, x, hi)
  s = f32[3] sine(x)
  fl = f32[3] floor(x)
  ce = f32[3] ceil(x)
  lg = f32[3] logistic(x)
  fin = pred[3] is-finite(x)
  io = s32[3] iota(), iota_dimension=0
  one = s32[3] constant({1, 1, 1})
  sl = s32[3] shift-left(one, io)
  neg = s32[3] constant({-8, -8, 5})
  srl = s32[3] shift-right-logical(neg, one)
  sra = s32[3] shift-right-arithmetic(neg, one)
  xo = s32[3] xor(neg, io)
  nt = s32[3] not(io)
  ROOT t = (f32[3], f32[3], f32[3], f32[3], f32[3], pred[3], s32[3], s32[3], s32[3], s32[3], s32[3]) tuple(c, s, fl, ce, lg, fin, sl, srl, sra, xo, nt)
})");
  const Literal out = Run(*r.module, {F32({3}, {-1.5, 0, 2})});
  CHECK(out.elements[0].values == std::vector<double>{0, 0, 1});  // clamped to [0, 1]
  const double sin_m15 = static_cast<float>(std::sin(-1.5));
  CHECK(out.elements[1].values == std::vector<double>{sin_m15, 0, static_cast<float>(std::sin(2.0))});
  CHECK(out.elements[2].values == std::vector<double>{-2, 0, 2});  // floor
  CHECK(out.elements[3].values == std::vector<double>{-1, 0, 2});  // ceil
  CHECK(out.elements[4].values[1] == 0.5);                         // logistic(0) = 1/2
  CHECK(out.elements[5].values == std::vector<double>{1, 1, 1});
  CHECK(out.elements[6].values == std::vector<double>{1, 2, 4});   // 1 << {0,1,2}
  // -8 = 0xfffffff8: logical >> 1 = 0x7ffffffc = 2147483644; arithmetic >> 1 = -4; 5 >> 1 = 2.
  CHECK(out.elements[7].values == std::vector<double>{2147483644, 2147483644, 2});
  CHECK(out.elements[8].values == std::vector<double>{-4, -4, 2});
  // -8 ^ 0 = -8; -8 ^ 1 = -7 (0x...f9); 5 ^ 2 = 7. ~{0,1,2} = {-1,-2,-3}.
  CHECK(out.elements[9].values == std::vector<double>{-8, -7, 7});
  CHECK(out.elements[10].values == std::vector<double>{-1, -2, -3});
}

TEST_CASE("element types beyond f32/bf16/s32/pred: widths, f16 rounding, not interpretable") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  a = u8[100] parameter(0)
  b = f8e4m3fn[10] parameter(1)
  c = f64[3] parameter(2)
  d = s64[2] parameter(3)
  h = f16[] constant(0.1)
  ROOT t = (u8[100], f8e4m3fn[10], f64[3], s64[2], f16[]) tuple(a, b, c, d, h)
})");
  const auto params = r.module->entry()->parameters();
  CHECK(params[0]->shape.ByteSize() == 100);  // 1 byte each
  CHECK(params[1]->shape.ByteSize() == 10);
  CHECK(params[2]->shape.ByteSize() == 24);   // 8 bytes each
  CHECK(params[3]->shape.ByteSize() == 16);
  // f16 keeps 10 mantissa bits: 0.1 = 1.6 * 2^-4, 1.6 * 1024 = 1638.4 -> 1638, so
  // 1638 / 1024 / 16 = 0.0999755859375.
  CHECK(Find(*r.module, "h")->literal.values[0] == 0.0999755859375);
  // The whole module verifies, costs and prints back to text that parses.
  Verify(*r.module);
  CHECK(AnalyzeCost(*r.module, 1).total.bytes_read >= 0);
  const auto back = ParseModule(PrintModule(*r.module), "back.hlo");
  CHECK(back->InstructionCount() == r.module->InstructionCount());
  // The interpreter refuses u8 with an error naming the instruction.
  try {
    Interpret(*r.module, RandomArguments(*r.module, 1));
    FAIL("expected the interpreter to refuse u8");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("element type u8 is not interpretable") != std::string::npos);
  }
}

TEST_CASE("Sharding custom-calls annotate a global program; manual regions map") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  x = f32[8,16] parameter(0)
  s = f32[8,16] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,1]<=[2]}
  m = f32[4,16] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[4,16] negate(m)
  ROOT f = f32[8,16] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]<=[2]}
})");
  CHECK_FALSE(r.partitioned);
  const Instruction* s = Find(*r.module, "s");
  REQUIRE(s != nullptr);
  CHECK(s->opcode == Opcode::kReshape);  // an annotation that moves no data
  CHECK(s->sharding == Sharding::TiledIota({2, 1}));
  CHECK(Find(*r.module, "m")->opcode == Opcode::kAutoToManual);
  CHECK(Find(*r.module, "m")->tiling == Sharding::TiledIota({2, 1}));
  CHECK(Find(*r.module, "f")->opcode == Opcode::kManualToAuto);
}

TEST_CASE("a tuple sharding annotates each element; one that does not fit is dropped, warned") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  x = f32[8,16] parameter(0)
  y = f32[8,16] negate(x)
  ROOT t = (f32[8,16], f32[8,16]) tuple(x, y), sharding={{replicated}, {devices=[1,2]<=[2]}}
})");
  CHECK(r.warnings.empty());
  const Instruction* root = r.module->entry()->root();
  REQUIRE(root->opcode == Opcode::kTuple);
  REQUIRE(root->operands.size() == 2);
  // Each output through a same-shape reshape carrying its sharding, in y's scope.
  CHECK(root->operands[0]->opcode == Opcode::kReshape);
  CHECK(root->operands[0]->sharding == Sharding::Replicated());
  CHECK(root->operands[1]->sharding == Sharding::TiledIota({1, 2}));
  CHECK(root->operands[1]->operands[0] == Find(*r.module, "y"));
  const auto bad = Import(R"(HloModule m
ENTRY e {
  x = f32[8,16] parameter(0)
  ROOT t = (f32[8,16], f32[8,16]) tuple(x, x), sharding={{replicated}}
})");
  REQUIRE(bad.warnings.size() == 1);
  CHECK(bad.warnings[0].find("t.hlo:4:3: t: a tuple sharding of 1 elements for") == 0);
  CHECK(bad.module->entry()->root()->operands[0]->opcode == Opcode::kParameter);
}

TEST_CASE("malformed and unsupported modules: FILE:LINE:COL and what was expected") {
  const std::string head = "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n";
  // Columns of "  ROOT y = f32[2] add(x, z)": the shape at 12, the opcode at 19, the second
  // operand at 26. A missing operand: at the ')' where it should be.
  CHECK(ImportError(head + "  ROOT y = f32[2] add(x, )\n}\n").rfind("t.hlo:4:26: expected an operand name", 0) == 0);
  // A declared shape the rules disagree with: at the shape.
  const std::string shape = ImportError(head + "  ROOT y = f32[3] add(x, x)\n}\n");
  CHECK(shape.rfind("t.hlo:4:12: ", 0) == 0);
  CHECK(shape.find("does not match the add shape rule, which gives f32[2]") != std::string::npos);
  // An operand that is not defined: at its name.
  CHECK(ImportError(head + "  ROOT y = f32[2] add(x, z)\n}\n").rfind("t.hlo:4:26: %z is not defined", 0) == 0);
  // An opcode podsim does not take yet: at the opcode.
  CHECK(ImportError(head + "  ROOT y = f32[2] fft(x), fft_type=FFT\n}\n").rfind(
            "t.hlo:4:19: opcode 'fft' is not supported", 0) == 0);
  // An attribute value cut off at the end of the file (a fuzzer's find: it read past the end).
  CHECK(ImportError(head + "  ROOT y = f32[2] negate(x), sharding=").find(
            "t.hlo:4:39: expected '{', '(' or '[' to open sharding={...}, got end of input") == 0);
  // An unknown element type at its token.
  CHECK(ImportError(head + "  ROOT y = c64[2] convert(x)\n}\n").find("t.hlo:4:12: unknown element type 'c64'") == 0);
  // A size that overflows, and a dynamic dimension: at the shape, never a crash.
  CHECK(ImportError("HloModule m\nENTRY e {\n  ROOT x = f32[4611686018427387904,4] parameter(0)\n}\n")
            .rfind("t.hlo:3:12: ", 0) == 0);
  CHECK(ImportError("HloModule m\nENTRY e {\n  ROOT x = f32[<=8] parameter(0)\n}\n")
            .find("t.hlo:3:16: dynamic dimensions") == 0);
}

TEST_CASE("other custom-calls are kept with the flops they are given, and a warning") {
  const std::string text =
      "HloModule m\nENTRY e {\n  x = bf16[4,8] parameter(0)\n"
      "  ROOT y = (bf16[4,8], u8[16]) custom-call(x, x), custom_call_target=\"fused_attn\", "
      "api_version=API_VERSION_TYPED_FFI, backend_config={causal=true}\n}\n";
  const auto plain = Import(text);
  const Instruction* y = Find(*plain.module, "y");
  REQUIRE(y != nullptr);
  CHECK(y->opcode == Opcode::kCustomCall);
  CHECK(y->custom_call_target == "fused_attn");
  REQUIRE(plain.warnings.size() == 1);
  CHECK(plain.warnings[0].find("t.hlo:4:32: custom-call target \"fused_attn\" is not modelled") == 0);
  HloImportOptions options;
  options.custom_call_flops["fused_attn"] = 1e9;
  const auto given = Import(text, options);
  CHECK(given.warnings.empty());
  // Cost: the given flops on the matrix unit; reads both operands (2 x 4*8*2 B = 128 B), writes
  // the result (64 B + 16 B).
  const Cost c = InstructionCost(*Find(*given.module, "y"));
  CHECK(c.flops == 1e9);
  CHECK(c.bytes_read == 128);
  CHECK(c.bytes_written == 80);
  CHECK(c.unit == Unit::kMatrix);
  // podsim's text keeps target and flops.
  const auto back = ParseModule(PrintModule(*given.module), "back.hlo");
  CHECK(Find(*back, "y")->custom_call_flops == 1e9);
  CHECK(Find(*back, "y")->custom_call_target == "fused_attn");
  // The interpreter refuses it by name.
  try {
    Interpret(*given.module, {Literal::Zeros(Shape(DType::kBF16, {4, 8}))});
    FAIL("expected the interpreter to refuse a custom-call");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("%y (custom-call)") != std::string::npos);
  }
}

TEST_CASE("fusion inlines; conditional picks a constant branch or selects between all") {
  const auto r = Import(R"(HloModule m
fused { a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a) }
double { a = f32[4] parameter(0)
  ROOT d = f32[4] add(a, a) }
square { a = f32[4] parameter(0)
  ROOT s = f32[4] multiply(a, a) }
ENTRY e {
  x = f32[4] parameter(0)
  p = pred[] parameter(1)
  i = s32[] parameter(2)
  f = f32[4] fusion(x), kind=kLoop, calls=fused
  t = pred[] constant(true)
  k = f32[4] conditional(t, x, x), true_computation=double, false_computation=square
  c = f32[4] conditional(p, x, x), true_computation=double, false_computation=square
  b = f32[4] conditional(i, x, x, x), branch_computations={double, square, fused}
  ROOT r = (f32[4], f32[4], f32[4], f32[4]) tuple(f, k, c, b)
})");
  // The constant selector inlines its branch only: one multiply (c's) and one more for b.
  CHECK(Count(*r.module, Opcode::kMultiply) == 2);
  REQUIRE(r.warnings.size() == 2);
  CHECK(r.warnings[0].find("t.hlo:15:14: conditional c: its 2 branches are all computed") == 0);
  const Literal x = F32({4}, {1, 2, -3, 0.5});
  auto run = [&](bool p, int32_t i) {
    return Run(*r.module, {x, Literal::Scalar(DType::kPred, p), Literal::Scalar(DType::kS32, i)});
  };
  const Literal a = run(true, 1);
  CHECK(a.elements[0].values == std::vector<double>{-1, -2, 3, -0.5});
  CHECK(a.elements[1].values == std::vector<double>{2, 4, -6, 1});
  CHECK(a.elements[2].values == std::vector<double>{2, 4, -6, 1});    // pred true: branch 0
  CHECK(a.elements[3].values == std::vector<double>{1, 4, 9, 0.25});  // index 1: square
  const Literal b = run(false, 7);
  CHECK(b.elements[2].values == std::vector<double>{1, 4, 9, 0.25});  // pred false: square
  CHECK(b.elements[3].values == std::vector<double>{-1, -2, 3, -0.5});  // out of range: last
  CHECK(run(false, -1).elements[3].values == std::vector<double>{-1, -2, 3, -0.5});
  CHECK(run(false, 0).elements[3].values == std::vector<double>{2, 4, -6, 1});
}

TEST_CASE("async start/done pairs are one collective; the tuple all-to-all moves whole arrays") {
  const auto r = Import(R"(HloModule m, num_partitions=2
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
wrapped { y = f32[4,2] parameter(0)
  ROOT rs = f32[2,2] reduce-scatter(y), replica_groups={{0,1}}, dimensions={0}, to_apply=add }
ENTRY e {
  x = f32[4,2] parameter(0)
  ars = f32[4,2] all-reduce-start(x), replica_groups={{0,1}}, to_apply=add
  ard = f32[4,2] all-reduce-done(ars)
  ags = (f32[4,2], f32[8,2]) all-gather-start(x), replica_groups={{0,1}}, dimensions={0}
  agd = f32[8,2] all-gather-done(ags)
  cps = (f32[4,2], f32[4,2], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1},{1,0}}
  cpd = f32[4,2] collective-permute-done(cps)
  as = ((f32[4,2]), f32[2,2], s32[]) async-start(x), calls=wrapped
  ad = f32[2,2] async-done(as)
  a2a = (f32[4,2], f32[4,2]) all-to-all(x, ard), replica_groups={{0,1}}
  ROOT t = (f32[4,2], f32[8,2], f32[4,2], f32[2,2], (f32[4,2], f32[4,2])) tuple(ard, agd, cpd, ad, a2a)
})");
  CHECK(r.partitioned);
  CHECK(Count(*r.module, Opcode::kAllReduce) == 1);
  CHECK(Count(*r.module, Opcode::kAllGather) == 1);
  CHECK(Count(*r.module, Opcode::kCollectivePermute) == 1);
  CHECK(Count(*r.module, Opcode::kReduceScatter) == 1);
  CHECK(Count(*r.module, Opcode::kAllToAll) == 1);
  // Partition p holds x = p * 10 + [0..7]. all-to-all: result j is partition j's array p.
  std::vector<Literal> args;
  for (int p = 0; p < 2; ++p) {
    std::vector<double> v(8);
    for (int k = 0; k < 8; ++k) v[k] = p * 10 + k;
    args.push_back(F32({4, 2}, v));
  }
  const std::vector<Literal> out = InterpretSpmd(*r.module, {{args[0]}, {args[1]}}, 2);
  // all-reduce: 10 + 2k; all-gather: both; permute: the other's; reduce-scatter: rows 2p..2p+1
  // of the sum; all-to-all: result j on partition p is partition j's operand p, so partition 0
  // gets (x of 0, x of 1) and partition 1 (ard of 0, ard of 1).
  CHECK(out[0].elements[0].values[3] == 10 + 2 * 3);
  CHECK(out[1].elements[1].values[9] == 11);
  CHECK(out[0].elements[2].values[0] == 10);
  CHECK(out[1].elements[3].values[0] == 10 + 2 * 4);
  CHECK(out[0].elements[4].elements[1].values[1] == 11);      // x of partition 1
  CHECK(out[1].elements[4].elements[0].values[1] == 10 + 2);  // ard of partition 0
}

TEST_CASE("LooksLikeXlaHlo tells XLA's text from podsim's") {
  CHECK(LooksLikeXlaHlo("HloModule f\nENTRY f {\n  arg = f32[2] parameter(0)\n}\n"));
  CHECK(LooksLikeXlaHlo("HloModule f\nENTRY %f {\n  %a = f32[2]{0} parameter(0)\n}\n"));
  const auto r = Import("HloModule f\nENTRY f {\n  a = f32[2]{0} parameter(0)\n  ROOT n = f32[2] negate(a)\n}\n");
  CHECK_FALSE(LooksLikeXlaHlo(PrintModule(*r.module)));
  // podsim's get-tuple-element prints index= as XLA's does, and custom-call is an op of both:
  // neither is a sign of XLA text.
  CHECK_FALSE(LooksLikeXlaHlo(
      "HloModule m\nENTRY %e {\n  %t = f32[2] parameter(0)\n"
      "  ROOT %g = f32[2] custom-call(%t), custom_call_target=\"k\"\n}\n"));
  CHECK_FALSE(LooksLikeXlaHlo(
      "HloModule m\nENTRY %e {\n  %t = (f32[2]) parameter(0)\n"
      "  ROOT %g = f32[2] get-tuple-element(%t), index=0\n}\n"));
}

}  // namespace
}  // namespace podsim::ir
