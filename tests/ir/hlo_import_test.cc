// The XLA HLO importer (ir/hlo_import.h) on small modules written in XLA's own syntax for these
// tests: shapes, attributes, values (interpreted) and errors, each expectation derived by hand
// in its comment.

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

TEST_CASE("dots whose result type is not their operands'") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  a = f8e4m3fn[4,8] parameter(0)
  b = f8e4m3fn[8,2] parameter(1)
  c = f8e5m2[8,2] parameter(2)
  x = bf16[4,8] parameter(3)
  y = bf16[8,2] parameter(4)
  same = bf16[4,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  mixed = bf16[4,2] dot(a, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  wide = f32[4,2] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (bf16[4,2], bf16[4,2], f32[4,2]) tuple(same, mixed, wide)
})");
  // One operand type: the dot in f8e4m3fn (the matrix unit's rate and the operands' bytes), then
  // a convert to bf16.
  const Instruction* same = Find(*r.module, "same");
  REQUIRE(same != nullptr);
  CHECK(same->opcode == Opcode::kConvert);
  CHECK(same->operand(0)->opcode == Opcode::kDot);
  CHECK(same->operand(0)->shape.dtype == DType::kF8E4M3FN);
  // Two operand types: both converted to bf16, then a bf16 dot.
  const Instruction* mixed = Find(*r.module, "mixed");
  REQUIRE(mixed != nullptr);
  CHECK(mixed->opcode == Opcode::kDot);
  CHECK(mixed->operand(0)->opcode == Opcode::kConvert);
  CHECK(mixed->operand(1)->shape.dtype == DType::kBF16);
  // bf16 x bf16 -> f32 is interpretable: the rounding to bf16 first gets a warning.
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("dot wide (bf16 operands, f32 result)") != std::string::npos);
}

TEST_CASE("batch-norm-training by hand, batch-norm-grad against finite differences") {
  {
    // Feature 0 holds {1, 3}: mean 2, biased variance 1; feature 1 holds {2, 6}: mean 4,
    // variance 4. With eps 0, scale {2, 1}, offset {0.5, -1}:
    // y = (x - mean) / sqrt(var) * scale + offset = {{-1.5, -2}, {2.5, 0}}.
    const auto r = Import(R"(HloModule m
ENTRY e {
  x = f32[2,2] parameter(0)
  s = f32[2] parameter(1)
  o = f32[2] parameter(2)
  ROOT bn = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), epsilon=0, feature_index=1
})");
    const Literal out = Run(*r.module, {F32({2, 2}, {1, 2, 3, 6}), F32({2}, {2, 1}),
                                        F32({2}, {0.5, -1})});
    CHECK(out.elements[0].values == std::vector<double>{-1.5, -2, 2.5, 0});
    CHECK(out.elements[1].values == std::vector<double>{2, 4});
    CHECK(out.elements[2].values == std::vector<double>{1, 4});
  }
  // batch-norm-grad is the vector-Jacobian product of batch-norm-training's output: checked
  // against central differences of L = sum(dy * y) in f64, where y is the imported training op.
  const auto train = Import(R"(HloModule m
ENTRY e {
  x = f64[3,2] parameter(0)
  s = f64[2] parameter(1)
  o = f64[2] parameter(2)
  ROOT bn = (f64[3,2], f64[2], f64[2]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
})");
  const auto grad = Import(R"(HloModule m
ENTRY e {
  x = f64[3,2] parameter(0)
  s = f64[2] parameter(1)
  m = f64[2] parameter(2)
  v = f64[2] parameter(3)
  dy = f64[3,2] parameter(4)
  ROOT g = (f64[3,2], f64[2], f64[2]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index=1
})");
  const Shape xs(DType::kF64, {3, 2}), fs(DType::kF64, {2});
  std::vector<double> x = {0.3, -1.2, 2.0, 0.7, -0.4, 1.9}, s = {1.5, -0.8}, o = {0.1, 0.2};
  const std::vector<double> dy = {0.5, -1.0, 0.25, 2.0, -0.75, 0.3};
  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& sv,
                  const std::vector<double>& ov) {
    const Literal y = Run(*train.module, {Literal(xs, xv), Literal(fs, sv), Literal(fs, ov)});
    double l = 0;
    for (size_t k = 0; k < dy.size(); ++k) l += dy[k] * y.elements[0].values[k];
    return l;
  };
  const Literal stats = Run(*train.module, {Literal(xs, x), Literal(fs, s), Literal(fs, o)});
  const Literal g = Run(*grad.module, {Literal(xs, x), Literal(fs, s), stats.elements[1],
                                       stats.elements[2], Literal(xs, dy)});
  const double h = 1e-6;
  auto diff = [&](std::vector<double>& p, size_t k) {
    const double keep = p[k];
    p[k] = keep + h;
    const double up = loss(x, s, o);
    p[k] = keep - h;
    const double down = loss(x, s, o);
    p[k] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t k = 0; k < x.size(); ++k) CHECK(g.elements[0].values[k] == doctest::Approx(diff(x, k)).epsilon(1e-6));
  for (size_t k = 0; k < s.size(); ++k) CHECK(g.elements[1].values[k] == doctest::Approx(diff(s, k)).epsilon(1e-6));
  for (size_t k = 0; k < o.size(); ++k) CHECK(g.elements[2].values[k] == doctest::Approx(diff(o, k)).epsilon(1e-6));
}

TEST_CASE("bitcast-convert and batch-group convolutions are opaque kernels with their cost") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  u = u32[4] parameter(0)
  same = u32[4] bitcast-convert(u)
  f = f32[4] bitcast-convert(same)
  a = f32[8,6,6,4] parameter(1)
  dy = f32[8,4,4,4] parameter(2)
  w = f32[3,3,1,4] convolution(a, dy), window={size=4x4}, dim_labels=f01b_i01o->01bf, batch_group_count=4
  ROOT t = (f32[4], f32[3,3,1,4]) tuple(f, w)
})");
  // u32 -> u32 is the value itself; u32 -> f32 reinterprets bits: a kernel moving 16 B each way.
  CHECK(Find(*r.module, "same") == nullptr);
  const Instruction* f = Find(*r.module, "f");
  REQUIRE(f != nullptr);
  CHECK(f->opcode == Opcode::kCustomCall);
  CHECK(f->custom_call_target == "xla:bitcast-convert");
  CHECK(InstructionCost(*f).bytes_read == 16);
  // The filter gradient: 36 output elements, each a sum over the kernel's input features (8,
  // the 'i' of f01b_i01o is dy's dim 0) and its 4x4 window: 2 * 36 * 8 * 16 = 9216 flops.
  const Instruction* w = Find(*r.module, "w");
  REQUIRE(w != nullptr);
  CHECK(w->opcode == Opcode::kCustomCall);
  CHECK(InstructionCost(*w).flops == 9216);
  // Without dim_labels the kernel's dims are unknown: an error, not a guess.
  CHECK(ImportError("HloModule m\nENTRY e {\n  a = f32[8,6] parameter(0)\n  k = f32[] parameter(1)\n"
                    "  ROOT w = f32[3] convolution(a, k), batch_group_count=4\n}\n")
            .find("dim_labels do not fit its kernel f32[]") != std::string::npos);
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

TEST_CASE("windowed gather: an indexed dim reads slice-size elements from its clamped start") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  x = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  pts = s32[2,2] parameter(2)
  rows = f32[2,2,3] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2,3}
  tiles = f32[2,2,2] gather(x, pts), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}
  last = f32[2,2,2] gather(x, pts), offset_dims={0,1}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}
  mixed = f32[2,2] gather(x, pts), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,2}
  ROOT t = (f32[2,2,3], f32[2,2,2], f32[2,2,2], f32[2,2]) tuple(rows, tiles, last, mixed)
})");
  // x[i][j] = 3i + j: rows [0,1,2], [3,4,5], [6,7,8], [9,10,11].
  const Literal x = F32({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const Literal i(Shape(DType::kS32, {2, 1}), {1, 3});
  const Literal pts(Shape(DType::kS32, {2, 2}), {0, 1, 3, 2});
  const Literal out = Run(*r.module, {x, i, pts});
  REQUIRE(out.elements.size() == 4);
  // Two rows from 1 (rows 1, 2) and from 3, clamped to 4 - 2 = 2 (rows 2, 3).
  CHECK(out.elements[0].values == std::vector<double>{3, 4, 5, 6, 7, 8, 6, 7, 8, 9, 10, 11});
  // 2x2 tiles at (0,1) and at (3,2), clamped to (2,1): [[1,2],[4,5]] and [[7,8],[10,11]].
  CHECK(out.elements[1].values == std::vector<double>{1, 2, 4, 5, 7, 8, 10, 11});
  // The same tiles with the batch dim last: out[r][c][b].
  CHECK(out.elements[2].values == std::vector<double>{1, 7, 2, 8, 4, 10, 5, 11});
  // Row 0 (collapsed), columns 1-2; row 3, columns clamped to 1-2.
  CHECK(out.elements[3].values == std::vector<double>{1, 2, 10, 11});
}

TEST_CASE("gather with full dimension numbers: embedding, point, column, batched, windowed rest") {
  const auto r = Import(R"(HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  rows = s32[2,1] parameter(1)
  pts = s32[3,2] parameter(2)
  cols = s32[2] parameter(3)
  emb = f32[2,3] gather(x, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  pt = f32[3] gather(x, pts), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}
  col = f32[2,2] gather(x, cols), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={2,1}
  bat = f32[2] gather(x, rows), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
  part = f32[2,2] gather(x, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
  keep = f32[2,1,3] gather(x, rows), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  ROOT t = (f32[2,3], f32[3], f32[2,2], f32[2], f32[2,2], f32[2,1,3]) tuple(emb, pt, col, bat, part, keep)
})");
  // x = [[0,1,2],[3,4,5]] (x[i][j] = 3i + j).
  const Literal x = F32({2, 3}, {0, 1, 2, 3, 4, 5});
  const Literal rows(Shape(DType::kS32, {2, 1}), {1, 0});
  // Points (0,2) -> 2, (1,0) -> 3, (5,-1) clamps to (1,0) -> 3.
  const Literal pts(Shape(DType::kS32, {3, 2}), {0, 2, 1, 0, 5, -1});
  const Literal cols(Shape(DType::kS32, {2}), {2, 0});
  const Literal out = Run(*r.module, {x, rows, pts, cols});
  REQUIRE(out.elements.size() == 6);
  // Rows 1 and 0.
  CHECK(out.elements[0].values == std::vector<double>{3, 4, 5, 0, 1, 2});
  CHECK(out.elements[1].values == std::vector<double>{2, 3, 3});
  // The offset dim (x's rows) first: col[r][b] = x[r][cols[b]] = [[2,0],[5,3]].
  CHECK(out.elements[2].values == std::vector<double>{2, 0, 5, 3});
  // Batched: bat[b] = x[b][rows[b]] = x[0][1], x[1][0] = 1, 3.
  CHECK(out.elements[3].values == std::vector<double>{1, 3});
  // The first two columns of rows 1 and 0.
  CHECK(out.elements[4].values == std::vector<double>{3, 4, 0, 1});
  // An indexed dim not collapsed: a size-1 dim in the result.
  CHECK(out.elements[5].values == std::vector<double>{3, 4, 5, 0, 1, 2});
  // The embedding lookup is podsim's gather itself (one row each: 2 x 12 B read and written).
  const Instruction* emb = Find(*r.module, "emb");
  REQUIRE(emb != nullptr);
  CHECK(emb->opcode == Opcode::kGather);
  CHECK(InstructionCost(*emb).bytes_written == 24);
  // A collapsed dim must take one element.
  const std::string collapsed = ImportError(
      "HloModule m\nENTRY e {\n  x = f32[4,3] parameter(0)\n  i = s32[2,1] parameter(1)\n"
      "  ROOT g = f32[2,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
      "start_index_map={0}, index_vector_dim=1, slice_sizes={2,3}\n}\n");
  CHECK_MESSAGE(collapsed.find("t.hlo:5:21: gather g: dim 0 is collapsed or batching with slice "
                               "size 2") == 0, collapsed);
  // Dimension numbers that do not give the declared shape: at the shape.
  const std::string wrong = ImportError(
      "HloModule m\nENTRY e {\n  x = f32[4,3] parameter(0)\n  i = s32[2,1] parameter(1)\n"
      "  ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
      "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n}\n");
  CHECK_MESSAGE(wrong.find("t.hlo:5:12: ") == 0, wrong);
  CHECK(wrong.find("which give f32[2,3]") != std::string::npos);
  // A dim named twice: an error, not a silently ignored index component.
  CHECK(ImportError("HloModule m\nENTRY e {\n  x = f32[4,3] parameter(0)\n  i = s32[2,2] parameter(1)\n"
                    "  ROOT g = f32[2,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
                    "start_index_map={0,0}, index_vector_dim=1, slice_sizes={1,3}\n}\n")
            .find("a dim is named twice") != std::string::npos);
}

TEST_CASE("scatter's and a multi-array sort's costs; one-array sorts and reduce-precision are "
          "podsim ops") {
  const auto r = Import(R"(HloModule m
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
put { a = f32[] parameter(0)
  ROOT b = f32[] parameter(1) }
gt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GT }
lt_swapped { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(b, a), direction=LT }
kv { a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT e = pred[] compare(a, b), direction=LT }
ENTRY e {
  x = f32[8,4] parameter(0)
  i = s32[6,1] parameter(1)
  u = f32[6,4] parameter(2)
  s_add = f32[8,4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  s_put = f32[8,4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=put
  v = f32[4] parameter(3)
  down = f32[4] sort(v), dimensions={0}, is_stable=true, to_apply=gt
  down2 = f32[4] sort(v), dimensions={0}, to_apply=lt_swapped
  k = s32[4] parameter(4)
  pair = (f32[4], s32[4]) sort(v, k), dimensions={0}, to_apply=kv
  w = bf16[4] parameter(5)
  same = bf16[4] reduce-precision(w), exponent_bits=8, mantissa_bits=7
  rp = f32[4] reduce-precision(v), exponent_bits=8, mantissa_bits=7
  half = f32[4] reduce-precision(v), exponent_bits=5, mantissa_bits=10
  ROOT t = (f32[8,4], f32[8,4], f32[4], f32[4], (f32[4], s32[4]), bf16[4], f32[4], f32[4]) tuple(s_add, s_put, down, down2, pair, same, rp, half)
})");
  const Instruction* s_add = Find(*r.module, "s_add");
  REQUIRE(s_add != nullptr);
  CHECK(s_add->opcode == Opcode::kCustomCall);
  CHECK(s_add->custom_call_target == "xla:scatter");
  // Rows of x are what it indexes: no transpose, the kernel itself. Reads x (128 B), the row
  // index (6 x s32, 24 B) and u (96 B); writes 128 B; one add per update element (24).
  const Cost ca = InstructionCost(*s_add);
  CHECK(ca.bytes_read == 248);
  CHECK(ca.bytes_written == 128);
  CHECK(ca.flops == 24);
  // An overwriting combiner adds nothing.
  CHECK(InstructionCost(*Find(*r.module, "s_put")).flops == 0);
  CHECK(Find(*r.module, "pair")->custom_call_target == "xla:sort");
  CHECK(Find(*r.module, "half")->custom_call_target == "xla:reduce-precision");
  // bf16 at (8, 7) is bf16 itself: no instruction.
  CHECK(Find(*r.module, "same") == nullptr);
  CHECK(Count(*r.module, Opcode::kSort) == 2);
  // Values, on a module of the interpretable part (the opaque kernels are refused by name).
  const auto s = Import(R"(HloModule m
gt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GT }
lt_swapped { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(b, a), direction=LT }
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT }
ENTRY e {
  v = f32[4] parameter(0)
  down = f32[4] sort(v), dimensions={0}, is_stable=true, to_apply=gt
  down2 = f32[4] sort(v), dimensions={0}, to_apply=lt_swapped
  up = f32[4] sort(v), dimensions={0}, to_apply=lt
  rp = f32[4] reduce-precision(v), exponent_bits=8, mantissa_bits=7
  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(down, down2, up, rp)
})");
  // 1 + 2^-10 rounds to 1 in 7 mantissa bits; 1 + 2^-7 is exact; 3 and -2 are exact.
  const Literal v = F32({4}, {1 + std::ldexp(1.0, -10), 3, -2, 1 + std::ldexp(1.0, -7)});
  const Literal out = Run(*s.module, {v});
  const double a = 1 + std::ldexp(1.0, -10), b = 1 + std::ldexp(1.0, -7);
  CHECK(out.elements[0].values == std::vector<double>{3, b, a, -2});
  CHECK(out.elements[1].values == std::vector<double>{3, b, a, -2});
  CHECK(out.elements[2].values == std::vector<double>{-2, a, b, 3});
  CHECK(out.elements[3].values == std::vector<double>{1, 3, -2, b});
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
