// The IR text format: exact round trips over every opcode and attribute, expected printed text
// written by hand, and the canonical form that liberal input prints as.

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/literal.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/all_ops_module.h"
#include "tests/ir/module_equal.h"

namespace podsim::ir {
namespace {

using testing::BuildAllOpsModule;
using testing::ModuleDifference;

constexpr double kInf = std::numeric_limits<double>::infinity();

Shape TextF32(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }
Shape BF16(std::vector<int64_t> dims) { return Shape(DType::kBF16, std::move(dims)); }
Shape TextS32(std::vector<int64_t> dims) { return Shape(DType::kS32, std::move(dims)); }
Shape Pred(std::vector<int64_t> dims) { return Shape(DType::kPred, std::move(dims)); }
uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Prints `m`, parses the text back, and checks that the result equals `m` field by field and
// prints as the same text. Returns the text.
std::string CheckRoundTrip(const Module& m) {
  Verify(m);
  std::string text = PrintModule(m);
  std::unique_ptr<Module> back;
  try {
    back = ParseModule(text, "round_trip.hlo");
  } catch (const Error& e) {
    FAIL_CHECK(e.what() << "\n" << text);
    return text;
  }
  CHECK_MESSAGE(ModuleDifference(m, *back) == "", text);
  CHECK(PrintModule(*back) == text);
  return text;
}

// Parses `text` and checks that it prints as `canonical`, which itself round-trips.
void CheckPrintsAs(const std::string& text, const std::string& canonical) {
  auto m = ParseModule(text);
  CHECK(PrintModule(*m) == canonical);
  CHECK(PrintModule(*ParseModule(canonical)) == canonical);
}

const Instruction* Find(const Module& m, const std::string& name) {
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->name == name) return i.get();
    }
  }
  FAIL("no instruction %" << name);
  return nullptr;
}

TEST_CASE("a small module prints as written by hand") {
  Module m("toy");
  Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, TextS32({}), "i");
    auto* x = b.Parameter(1, TextF32({4}), "x");
    b.Tuple({b.Tanh(x)});
  }
  Builder b(m.AddComputation("main", /*is_entry=*/true));
  auto* x0 = b.Parameter(0, TextF32({4}), "x0");
  x0->sharding = Sharding::Tiled({2}, {0, 1});
  x0->scope = "moe/gate";
  auto* c = b.Constant(Literal(TextF32({4}), {0.5, 1, -kInf, std::nan("")}));
  auto* loop = b.Loop({b.Add(x0, c)}, body, 3);
  b.GetTupleElement(loop, 0);

  const std::string expected =
      "HloModule toy\n"
      "\n"
      "%body {\n"
      "  %i = s32[] parameter(0)\n"
      "  %x = f32[4] parameter(1)\n"
      "  %tanh = f32[4] tanh(%x)\n"
      "  ROOT %tuple = (f32[4]) tuple(%tanh)\n"
      "}\n"
      "\n"
      "ENTRY %main {\n"
      "  %x0 = f32[4] parameter(0), sharding={devices=[2]0,1}, scope=\"moe/gate\"\n"
      "  %constant = f32[4] constant({0.5, 1, -inf, nan})\n"
      "  %add = f32[4] add(%x0, %constant)\n"
      "  %loop = (f32[4]) loop(%add), trip_count=3, body=%body\n"
      "  ROOT %get-tuple-element = f32[4] get-tuple-element(%loop), index=0\n"
      "}\n";
  CHECK(PrintModule(m) == expected);
  CheckRoundTrip(m);
  CHECK(PrintInstruction(*x0) ==
        "%x0 = f32[4] parameter(0), sharding={devices=[2]0,1}, scope=\"moe/gate\"");
  CHECK(PrintInstruction(*m.entry()->root()) ==
        "ROOT %get-tuple-element = f32[4] get-tuple-element(%loop), index=0");
}

TEST_CASE("attributes of every family print as written by hand") {
  // Hand-written canonical text: parsing and printing it gives it back unchanged. Window
  // extents by hand: conv spatial (5 + 1 + 1 - (2*(3-1)+1)) / 2 + 1 = 2; reduce-window dim 0
  // (4 + 0 + 1 - 2) / 1 + 1 = 4, dim 1 ((8-1)*2+1 + 1 + 1 - 3) / 2 + 1 = 8.
  const std::string text =
      "HloModule attrs\n"
      "\n"
      "ENTRY %main {\n"
      "  %x = f32[4,8] parameter(0)\n"
      "  %img = bf16[2,5,5,3] parameter(1)\n"
      "  %k = bf16[3,3,1,6] parameter(2)\n"
      "  %zero = f32[] constant(-0)\n"
      "  %i = s32[] constant(1)\n"
      "  %dot = f32[4,4] dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
      "  %conv = bf16[2,2,2,6] convolution(%img, %k), window={size=3x3 stride=2x2 pad=1_1x1_1 "
      "rhs_dilate=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=3\n"
      "  %rw = f32[4,8] reduce-window(%x), window={size=2x3 stride=1x2 pad=0_1x1_1 "
      "lhs_dilate=1x2}, kind=min\n"
      "  %pad = f32[7,10] pad(%x, %zero), padding=1_-1_1x0_2_0\n"
      "  %slice = f32[2,3] slice(%x), slice={[1:4:2], [0:8:3]}\n"
      "  %ds = f32[2,4] dynamic-slice(%x, %i, %i), dynamic_slice_sizes={2,4}\n"
      "  %red = f32[4] reduce(%x), dimensions={1}, kind=max\n"
      "  %cmp = pred[4,8] compare(%x, %x), direction=LT\n"
      "  %cs = f32[4,8] cumsum(%x), dimensions={1}, exclusive=true\n"
      "  %srt = f32[4,8] sort(%x), dimensions={0}, descending=true\n"
      "  %topk = (f32[4,3], s32[4,3]) top-k(%x), k=3\n"
      "  %rng = f32[4,8] random-uniform(%i, %i), seed=18446744073709551615, low=-0.5, high=2, "
      "global_dims={8,16}\n"
      "  %ar = f32[4,8] all-reduce(%x), replica_groups={{0,1},{2,3}}, kind=add\n"
      "  %ag = f32[8,8] all-gather(%x), dimensions={0}, replica_groups={}\n"
      "  %rs = f32[4,4] reduce-scatter(%x), dimensions={1}, replica_groups={{1,0}}, kind=add\n"
      "  %a2a = f32[8,4] all-to-all(%x), split_dimension=1, concat_dimension=0, "
      "replica_groups={{0,1}}\n"
      "  %cp = f32[4,8] collective-permute(%x), source_target_pairs={{0,1},{1,0}}\n"
      "  ROOT %t = (f32[4,4], bf16[2,2,2,6]) tuple(%dot, %conv), sharding={maximal device=3}\n"
      "}\n";
  auto m = ParseModule(text);
  CHECK(PrintModule(*m) == text);
  const Instruction* conv = Find(*m, "conv");
  CHECK(conv->conv.input_feature == 3);
  CHECK(conv->conv.input_spatial == std::vector<int64_t>{1, 2});
  CHECK(conv->conv.kernel_input_feature == 2);
  CHECK(conv->window[1].window_dilation == 2);
  CHECK(conv->window[1].base_dilation == 1);
  CHECK(conv->feature_group_count == 3);
  const Instruction* pad = Find(*m, "pad");
  CHECK(pad->padding[0] == PadDim{1, -1, 1});
  CHECK(Find(*m, "rng")->seed == ~uint64_t{0});
  CHECK(Find(*m, "slice")->slice_strides == std::vector<int64_t>{2, 3});
  CHECK(Find(*m, "cp")->source_target_pairs ==
        std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}});
  CHECK(Bits(Find(*m, "zero")->literal.values[0]) == Bits(-0.0));
}

TEST_CASE("the all-ops module round-trips exactly") {
  auto m = BuildAllOpsModule();
  std::string text = CheckRoundTrip(*m);
  // Every opcode appears in the text.
  auto back = ParseModule(text);
  std::set<Opcode> seen;
  for (const auto& c : back->computations()) {
    for (const auto& i : c->instructions()) seen.insert(i->opcode);
  }
  CHECK(static_cast<int>(seen.size()) == kNumOpcodes);
  // Special values, shardings of every kind, scopes and a root that is not last.
  CHECK(text.find("constant({-0, inf, -inf, -nan(0x8000000000123), 1e-40d, 0.1d, 1.5, -3})") !=
        std::string::npos);
  CHECK(text.find("sharding={devices=[2,1,1,1,2]0,2,1,3 last_tile_dim_replicate}") !=
        std::string::npos);
  CHECK(text.find("sharding={replicated}") != std::string::npos);
  CHECK(text.find("sharding={maximal device=1}") != std::string::npos);
  CHECK(text.find("sharding={manual}") != std::string::npos);
  CHECK(text.find("scope=\"layer/body\"") != std::string::npos);
  CHECK(back->entry()->root()->opcode == Opcode::kTuple);
  CHECK(back->entry()->instructions().back()->opcode == Opcode::kNegate);
}

TEST_CASE("every attribute variant round-trips") {
  Module m("variants");
  Computation* main = m.AddComputation("main", /*is_entry=*/true);
  Builder b(main);
  auto* x = b.Parameter(0, TextF32({4, 6}), "x");
  auto* p = b.Parameter(1, Pred({4, 6}), "p");
  auto* s = b.Parameter(2, TextF32({}), "s");
  auto* img = b.Parameter(3, TextF32({3, 2, 7}), "img");  // feature, batch, spatial
  auto* ker = b.Parameter(4, TextF32({5, 3, 3}), "ker");  // out, spatial, in
  for (ReduceKind k : {ReduceKind::kAdd, ReduceKind::kMax, ReduceKind::kMin}) {
    b.Reduce(x, {0, 1}, k);
    b.AllReduce(x, k, {});
    WindowDim w;
    w.size = 2;
    b.ReduceWindow(x, {w, w}, k);
  }
  for (ReduceKind k : {ReduceKind::kAnd, ReduceKind::kOr}) b.Reduce(p, {}, k);
  for (Comparison c : {Comparison::kEq, Comparison::kNe, Comparison::kLt, Comparison::kLe,
                       Comparison::kGt, Comparison::kGe}) {
    b.Compare(x, x, c);
  }
  b.Cumsum(x, 0, /*exclusive=*/false);
  b.Sort(x, 1, /*descending=*/false);
  b.ReduceWindow(s, {}, ReduceKind::kMax);  // window={} on a scalar
  b.Pad(s, s, {});                          // padding={} on a scalar
  b.Slice(s, {}, {});                       // slice={}
  b.Transpose(s, {});
  b.Reduce(x, {}, ReduceKind::kAdd);        // dimensions={}
  b.CollectivePermute(x, {});               // source_target_pairs={}
  b.RandomUniform(TextF32({2}), 0, -kInf, 0.0);  // low=-inf, no offsets
  b.RandomUniform(BF16({2, 3}), 7, 1e-300, 1.0000000000000002, {}, {4, 9});
  DotDims outer;  // no contracting or batch dims: none printed
  b.Dot(b.Reshape(x, {24}), b.Reshape(x, {24}), outer);
  // A 1-D convolution with shuffled dim labels "fb0_o0i->0bf", lhs dilation only.
  ConvDims cd;
  cd.input_feature = 0;
  cd.input_batch = 1;
  cd.input_spatial = {2};
  cd.kernel_output_feature = 0;
  cd.kernel_spatial = {1};
  cd.kernel_input_feature = 2;
  cd.output_spatial = {0};
  cd.output_batch = 1;
  cd.output_feature = 2;
  WindowDim cw;
  cw.size = 3;
  cw.base_dilation = 2;
  b.Convolution(img, ker, cd, {cw});
  // A convolution with no spatial dims: "bf_io->bf", window={}.
  ConvDims c0;
  c0.kernel_input_feature = 0;
  c0.kernel_output_feature = 1;
  b.Convolution(b.Parameter(5, TextF32({2, 3}), "v"), b.Parameter(6, TextF32({3, 4}), "m"), c0, {});
  // Tuples: empty, nested; scopes that need escapes; names that need quotes.
  auto* empty = b.Tuple({});
  auto* nested = b.Tuple({empty, b.Tuple({x, s})});
  b.GetTupleElement(nested, 1)->scope = "quote\" back\\slash\nnew\ttab\x01 \xc3\xa9t\xc3\xa9";
  auto* odd = b.Neg(s);
  odd->name = "name with spaces";
  b.Abs(odd)->name = "%weird\"name";
  m.set_name("module name");

  std::string text = CheckRoundTrip(m);
  CHECK(text.find("HloModule \"module name\"") != std::string::npos);
  CHECK(text.find("%\"name with spaces\" = f32[] negate(%s)") != std::string::npos);
  CHECK(text.find("abs(%\"name with spaces\")") != std::string::npos);
  CHECK(text.find("scope=\"quote\\\" back\\\\slash\\nnew\\ttab\\x01 \xc3\xa9t\xc3\xa9\"") !=
        std::string::npos);
  CHECK(text.find("dim_labels=fb0_o0i->0bf") != std::string::npos);
  CHECK(text.find("window={size=3 lhs_dilate=2}") != std::string::npos);
  CHECK(text.find("window={}, dim_labels=bf_io->bf") != std::string::npos);
  CHECK(text.find("low=-inf, high=0") != std::string::npos);
  CHECK(text.find("low=1e-300, high=1.0000000000000002, global_dims={4,9}") != std::string::npos);
  CHECK(text.find("= () tuple()") != std::string::npos);
  CHECK(text.find("= ((), (f32[4,6], f32[])) tuple(") != std::string::npos);
  CHECK(text.find("padding={}") != std::string::npos);
  CHECK(text.find("slice={}") != std::string::npos);
  CHECK(text.find("source_target_pairs={}") != std::string::npos);
  CHECK(text.find("exclusive") == std::string::npos);  // false is the default: not printed
  CHECK(text.find("descending") == std::string::npos);
}

TEST_CASE("constants of every type round-trip bit for bit") {
  Module m("consts");
  Builder b(m.AddComputation("main", /*is_entry=*/true));
  const double f32_max = std::numeric_limits<float>::max();
  const double f32_denorm = std::numeric_limits<float>::denorm_min();
  b.Constant(Literal(TextF32({2, 3}), {-0.0, f32_max, f32_denorm, static_cast<float>(0.1),
                                       -std::numeric_limits<double>::quiet_NaN(), 3}));
  // bf16: 0.1 rounds to 0.10009765625 and prints as "0.1"; 1/3 to 0.333984375 as "0.334".
  b.Constant(Literal(BF16({5}), {RoundToDType(0.1, DType::kBF16), RoundToDType(1.0 / 3, DType::kBF16),
                                 -kInf, -0.0, 65280}));
  b.Constant(Literal(TextS32({3}), {-2147483648.0, 2147483647.0, 0}));
  b.Constant(Literal(Pred({2, 2}), {1, 0, 0, 1}));
  b.Constant(Literal::Zeros(TextF32({0})));
  b.Constant(Literal::Zeros(TextF32({2, 0, 3})));
  b.Constant(Literal::Scalar(DType::kPred, 1));
  // Values outside their type keep the exact double with a 'd' suffix.
  b.Constant(Literal(TextS32({3}), {1.5, -0.0, std::nan("")}));
  b.Constant(Literal(Pred({1}), {2}));
  b.Constant(Literal(BF16({1}), {0.1}));
  std::string text = CheckRoundTrip(m);
  CHECK(text.find("f32[2,3] constant({{-0, 3.4028235e+38, 1e-45}, {0.1, -nan, 3}})") !=
        std::string::npos);
  CHECK(text.find("bf16[5] constant({0.1, 0.334, -inf, -0, 65280})") != std::string::npos);
  CHECK(text.find("s32[3] constant({-2147483648, 2147483647, 0})") != std::string::npos);
  CHECK(text.find("pred[2,2] constant({{true, false}, {false, true}})") != std::string::npos);
  CHECK(text.find("f32[0] constant({})") != std::string::npos);
  CHECK(text.find("f32[2,0,3] constant({{}, {}})") != std::string::npos);
  CHECK(text.find("pred[] constant(true)") != std::string::npos);
  CHECK(text.find("s32[3] constant({1.5d, -0d, nand})") != std::string::npos);
  CHECK(text.find("pred[1] constant({2d})") != std::string::npos);
  CHECK(text.find("bf16[1] constant({0.1d})") != std::string::npos);
}

TEST_CASE("hand-written values round to the constant's type") {
  auto m = ParseModule(
      "HloModule m\n"
      "ENTRY %main {\n"
      "  %f = f32[4] constant({0.1, 1e39, -1e-50, 0.1d})\n"
      "  %h = bf16[2] constant({0.1, 3.14159})\n"
      "  %p = pred[3] constant({1, 0, false})\n"
      "  ROOT %n = f32[] constant(nan(0x1))\n"
      "}\n");
  const auto& f = Find(*m, "f")->literal.values;
  CHECK(f[0] == static_cast<double>(0.1f));
  CHECK(f[1] == kInf);  // 1e39 overflows f32
  CHECK(Bits(f[2]) == Bits(-0.0));
  CHECK(f[3] == 0.1);  // 'd': exact double
  const auto& h = Find(*m, "h")->literal.values;
  CHECK(h[0] == 0.10009765625);
  CHECK(h[1] == 3.140625);
  CHECK(Find(*m, "p")->literal.values == std::vector<double>{1, 0, 0});
  CHECK(Bits(Find(*m, "n")->literal.values[0]) == 0x7ff0000000000001ull);
}

TEST_CASE("liberal input prints in canonical form") {
  // Comments, odd spacing, optional spellings (stride 1, interior 0, default window fields,
  // empty dot dims, flat 2-D constants, 1/0 preds, HLO signatures, attribute order).
  const std::string text = R"(// A leading comment.
HloModule   liberal  /* block
comment */

%body (i: s32[], x: f32[2,2]) -> (f32[2,2]) {   // HLO-style signature, ignored
  %i = s32[] parameter(0)
  %x.1 = f32[2,2] parameter(1)
  ROOT %t = (f32[2,2]) tuple( %x.1 )
}

ENTRY %main {
  %x = f32[2,2]parameter(0) ,scope = "s" , sharding = { devices=[2, 1] 1 , 0 }
  %c = f32[2,2] constant({1, 2.50, -0.0, 1e2})
  %p = pred[2] constant({1,0})
  %z = f32[] constant(0)
  %d = f32[2,2] dot(%x,%c), rhs_contracting_dims={0}, lhs_batch_dims={}, lhs_contracting_dims={1}
  %s = f32[2,1] slice(%d), slice={[0:2:1],[1:2]}
  %q = f32[3,1] pad(%s, %z), padding=0_0_1x0_0
  %w = f32[3,1] reduce-window(%q), kind=add, window={size=1x1 stride=1x1 pad=0_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1}
  %l = (f32[2,2]) loop(%c), body=%body, trip_count=2
  ROOT %r = f32[3,1] negate(%w)
}
)";
  const std::string canonical =
      "HloModule liberal\n"
      "\n"
      "%body {\n"
      "  %i = s32[] parameter(0)\n"
      "  %x.1 = f32[2,2] parameter(1)\n"
      "  ROOT %t = (f32[2,2]) tuple(%x.1)\n"
      "}\n"
      "\n"
      "ENTRY %main {\n"
      "  %x = f32[2,2] parameter(0), sharding={devices=[2,1]1,0}, scope=\"s\"\n"
      "  %c = f32[2,2] constant({{1, 2.5}, {-0, 100}})\n"
      "  %p = pred[2] constant({true, false})\n"
      "  %z = f32[] constant(0)\n"
      "  %d = f32[2,2] dot(%x, %c), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  %s = f32[2,1] slice(%d), slice={[0:2], [1:2]}\n"
      "  %q = f32[3,1] pad(%s, %z), padding=0_0_1x0_0_0\n"
      "  %w = f32[3,1] reduce-window(%q), window={size=1x1}, kind=add\n"
      "  %l = (f32[2,2]) loop(%c), trip_count=2, body=%body\n"
      "  ROOT %r = f32[3,1] negate(%w)\n"
      "}\n";
  CheckPrintsAs(text, canonical);
}

TEST_CASE("ROOT marks the root wherever it is; without it the last instruction is the root") {
  auto m = ParseModule(
      "HloModule m\n"
      "ENTRY %main {\n"
      "  %a = f32[] parameter(0)\n"
      "  ROOT %b = f32[] negate(%a)\n"
      "  %c = f32[] abs(%a)\n"
      "}\n"
      "%other {\n"
      "  %p = f32[] parameter(0)\n"
      "  %q = f32[] exponential(%p)\n"
      "}\n");
  CHECK(m->entry()->root()->name == "b");
  CHECK(m->FindComputation("other")->root()->name == "q");
  // The entry keeps its place (first), the printer marks both roots.
  std::string text = CheckRoundTrip(*m);
  CHECK(text.find("ENTRY %main {\n  %a = f32[] parameter(0)\n  ROOT %b") != std::string::npos);
  CHECK(text.find("ROOT %q = f32[] exponential(%p)") != std::string::npos);
}

TEST_CASE("a loop body may be defined after its use; parameters keep their numbers") {
  auto m = ParseModule(
      "HloModule m\n"
      "ENTRY %main {\n"
      "  %x = f32[2] parameter(1)\n"
      "  %n = s32[] parameter(0)\n"
      "  ROOT %l = (f32[2]) loop(%x), trip_count=0, body=%b\n"
      "}\n"
      "%b {\n"
      "  %v = f32[2] parameter(1)\n"
      "  %it = s32[] parameter(0)\n"
      "  ROOT %t = (f32[2]) tuple(%v)\n"
      "}\n");
  CHECK(Find(*m, "l")->body == m->FindComputation("b"));
  CHECK(Find(*m, "x")->parameter_number == 1);
  CHECK(m->entry()->parameters()[0]->name == "n");
  CheckRoundTrip(*m);
}

TEST_CASE("a module built from the builder's einsum round-trips") {
  Module m("moe");
  Builder b(m.AddComputation("main", /*is_entry=*/true));
  Builder::ScopeGuard scope(b, "moe/gate");
  auto* x = b.Parameter(0, TextF32({2, 3, 4}), "x");
  auto* wg = b.Parameter(1, TextF32({4, 5}), "wg");
  wg->sharding = Sharding::Tiled({1, 2}, {0, 1});
  auto* logits = b.Einsum("GSM,ME->GES", x, wg);
  b.Reduce(b.Exp(logits), {1}, ReduceKind::kAdd);
  CheckRoundTrip(m);
}

}  // namespace
}  // namespace podsim::ir
