// The XLA HLO importer's ops that keep a called computation (a region): general reductions,
// key-value sorts, scatters, reduce-windows and select-and-scatters, each interpreted by
// applying the computation; values derived by hand in the comments.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ir/cost.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/hlo_import_util.h"

namespace podsim::ir {
namespace {

// Reduction computations in XLA's text: argmax over (value, index) pairs, and a product.
constexpr const char* kReducers = R"(HloModule m
argmax { a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  g = pred[] compare(a, b), direction=GE
  v = f32[] select(g, a, b)
  k = s32[] select(g, i, j)
  ROOT t = (f32[], s32[]) tuple(v, k) }
mul { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b) }
)";

TEST_CASE("variadic and other reductions, select-and-scatter, rng-bit-generator: their flops") {
  const auto r = Import(std::string(kReducers) + R"(ge { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT g = pred[] compare(a, b), direction=GE }
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4,6] parameter(0)
  ix = s32[4,6] iota(), iota_dimension=1
  lo = f32[] constant(-inf)
  z = s32[] constant(0)
  one = f32[] constant(1)
  am = (f32[4], s32[4]) reduce(x, ix, lo, z), dimensions={1}, to_apply=argmax
  pr = f32[4] reduce(x, one), dimensions={1}, to_apply=mul
  src = f32[2,3] parameter(1)
  zero = f32[] constant(0)
  ss = f32[4,6] select-and-scatter(x, src, zero), window={size=2x2 stride=2x2}, select=ge, scatter=add
  st = u64[2] parameter(2)
  rb = (u64[2], u32[4,4]) rng-bit-generator(st), algorithm=rng_default
  ROOT t = ((f32[4], s32[4]), f32[4], f32[4,6], (u64[2], u32[4,4])) tuple(am, pr, ss, rb)
})");
  auto cost = [&](const std::string& name) {
    const Instruction* i = Find(*r.module, name);
    REQUIRE(i != nullptr);
    CHECK(i->opcode == Opcode::kCustomCall);
    return InstructionCost(*i);
  };
  // argmax: 24 elements, 3 ops per application (the compare and two selects; the tuple moves
  // nothing).
  CHECK(cost("am").flops == 24 * 3);
  // A product: 24 multiplies; the init is an operand (read: 96 + 4 B).
  CHECK(cost("pr").flops == 24);
  CHECK(cost("pr").bytes_read == 100);
  // 16 random words.
  CHECK(cost("rb").flops == 16);
  // select-and-scatter: 6 source elements, each a select over a 2x2 window (4 compares), then
  // one add each into the output.
  CHECK(cost("ss.select").flops == 6 * 4);
  CHECK(cost("ss.scatter").flops == 6);
  CHECK(Find(*r.module, "ss.select")->custom_call_target == "xla:window-select");
  CHECK(Find(*r.module, "ss.scatter")->custom_call_target == "xla:scatter");
}

TEST_CASE("a general reduction keeps its computation: interpreted, printed and parsed back") {
  const auto r = Import(std::string(kReducers) + R"(ENTRY e {
  x = f32[2,3] parameter(0)
  ix = s32[2,3] iota(), iota_dimension=1
  lo = f32[] constant(-inf)
  z = s32[] constant(0)
  one = f32[] constant(1)
  two = f32[] constant(2)
  am = (f32[2], s32[2]) reduce(x, ix, lo, z), dimensions={1}, to_apply=argmax
  rows = f32[2] reduce(x, one), dimensions={1}, to_apply=mul
  cols = f32[3] reduce(x, two), dimensions={0}, to_apply=mul
  ROOT t = ((f32[2], s32[2]), f32[2], f32[3]) tuple(am, rows, cols)
})");
  // x = [[1, 5, 2], [7, 3, 7]]. argmax folds (value, index) from (-inf, 0) with a >= b keeping
  // the accumulator: row 0 -> (5, 1); row 1 -> (7, 0), the first of the tied 7s. Products:
  // rows 1*1*5*2 = 10 and 1*7*3*7 = 147; columns 2*1*7 = 14, 2*5*3 = 30, 2*2*7 = 28.
  const Literal x = F32({2, 3}, {1, 5, 2, 7, 3, 7});
  auto check = [&](const Module& m) {
    const Literal out = Run(m, {x});
    REQUIRE(out.elements.size() == 3);
    REQUIRE(out.elements[0].elements.size() == 2);
    CHECK(out.elements[0].elements[0].values == std::vector<double>{5, 7});
    CHECK(out.elements[0].elements[1].values == std::vector<double>{1, 0});
    CHECK(out.elements[1].values == std::vector<double>{10, 147});
    CHECK(out.elements[2].values == std::vector<double>{14, 30, 28});
  };
  check(*r.module);
  const Instruction* am = Find(*r.module, "am");
  REQUIRE(am != nullptr);
  CHECK(am->custom_call_target == "xla:reduce");
  REQUIRE(am->body != nullptr);
  CHECK(am->dimensions == std::vector<int64_t>{1});
  // podsim's text form keeps the computation (region=) and the dims (region_dims=), and is not
  // taken for XLA's.
  const std::string text = PrintModule(*r.module);
  CHECK(text.find("region=%argmax") != std::string::npos);
  CHECK_FALSE(LooksLikeXlaHlo(text));
  CHECK(text.find("region_dims={1}") != std::string::npos);
  const std::unique_ptr<Module> back = ParseModule(text);
  Verify(*back);
  CHECK(PrintModule(*back) == text);
  check(*back);
  const std::unique_ptr<Module> proto = ModuleFromProtoBytes(ModuleToProtoBytes(*back));
  check(*proto);
  // Dead-code removal keeps the called computations.
  back->RemoveDeadCode();
  check(*back);
}

TEST_CASE("a key-value sort applies its comparator: stable, along its dim, any comparator safe") {
  const auto r = Import(R"(HloModule m
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT e = pred[] compare(a, b), direction=LT }
gt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT e = pred[] compare(a, b), direction=GT }
ge { a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT e = pred[] compare(a, b), direction=GE }
ENTRY e {
  k = f32[2,4] parameter(0)
  v = s32[2,4] iota(), iota_dimension=1
  up = (f32[2,4], s32[2,4]) sort(k, v), dimensions={1}, is_stable=true, to_apply=lt
  down = (f32[2,4], s32[2,4]) sort(k, v), dimensions={1}, is_stable=true, to_apply=gt
  odd = (f32[2,4], s32[2,4]) sort(k, v), dimensions={1}, to_apply=ge
  ROOT t = ((f32[2,4], s32[2,4]), (f32[2,4], s32[2,4]), (f32[2,4], s32[2,4])) tuple(up, down, odd)
})");
  // keys [[3,1,2,1],[0,5,5,4]], values their positions. Ascending and stable: row 0 keys
  // 1 1 2 3 from positions 1 3 2 0; row 1 keys 0 4 5 5 from 0 3 1 2. Descending: 3 2 1 1 from
  // 0 2 1 3; 5 5 4 0 from 1 2 3 0 (ties keep their order).
  const Literal out = Run(*r.module, {F32({2, 4}, {3, 1, 2, 1, 0, 5, 5, 4})});
  REQUIRE(out.elements.size() == 3);
  CHECK(out.elements[0].elements[0].values == std::vector<double>{1, 1, 2, 3, 0, 4, 5, 5});
  CHECK(out.elements[0].elements[1].values == std::vector<double>{1, 3, 2, 0, 0, 3, 1, 2});
  CHECK(out.elements[1].elements[0].values == std::vector<double>{3, 2, 1, 1, 5, 5, 4, 0});
  CHECK(out.elements[1].elements[1].values == std::vector<double>{0, 2, 1, 3, 1, 2, 3, 0});
  // GE is not a strict order: the result is still each row's keys and values, permuted alike.
  const Literal& odd = out.elements[2];
  for (int row = 0; row < 2; ++row) {
    std::vector<double> keys, pos;
    for (int j = 0; j < 4; ++j) {
      keys.push_back(odd.elements[0].values[static_cast<size_t>(4 * row + j)]);
      pos.push_back(odd.elements[1].values[static_cast<size_t>(4 * row + j)]);
    }
    std::vector<double> sorted_pos = pos;
    std::sort(sorted_pos.begin(), sorted_pos.end());
    CHECK(sorted_pos == std::vector<double>{0, 1, 2, 3});
    const double in[2][4] = {{3, 1, 2, 1}, {0, 5, 5, 4}};
    for (int j = 0; j < 4; ++j) CHECK(keys[static_cast<size_t>(j)] == in[row][static_cast<int>(pos[static_cast<size_t>(j)])]);
  }
  const Instruction* up = Find(*r.module, "up");
  REQUIRE(up != nullptr);
  CHECK(up->custom_call_target == "xla:sort");
  CHECK(up->dimensions == std::vector<int64_t>{1});
  const std::unique_ptr<Module> back = ParseModule(PrintModule(*r.module));
  CHECK(Run(*back, {F32({2, 4}, {3, 1, 2, 1, 0, 5, 5, 4})}) == out);
}


// Scatter combiners and a select: add, overwrite, a pair (sum, product) and >=.
constexpr const char* kCombiners = R"(HloModule m
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
put { a = f32[] parameter(0)
  ROOT b = f32[] parameter(1) }
sum_prod { a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  s = f32[] add(a, c)
  p = f32[] multiply(b, d)
  ROOT t = (f32[], f32[]) tuple(s, p) }
ge { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT g = pred[] compare(a, b), direction=GE }
gt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT g = pred[] compare(a, b), direction=GT }
)";

// The module printed in podsim's text and parsed back, and through the protobuf form.
void CheckRoundTrips(const Module& m, const std::vector<Literal>& args, const Literal& want) {
  const std::string text = PrintModule(m);
  const std::unique_ptr<Module> back = ParseModule(text);
  Verify(*back);
  CHECK(PrintModule(*back) == text);
  CHECK(Run(*back, args) == want);
  const std::unique_ptr<Module> proto = ModuleFromProtoBytes(ModuleToProtoBytes(*back));
  CHECK(Run(*proto, args) == want);
}

TEST_CASE("scatter: rows combined in order, a window out of bounds skipped whole") {
  const auto r = Import(std::string(kCombiners) + R"(ENTRY e {
  x = f32[4,2] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[3,2] parameter(2)
  s_add = f32[4,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  s_put = f32[4,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=put
  ROOT t = (f32[4,2], f32[4,2]) tuple(s_add, s_put)
})");
  // x rows (0,0) (1,1) (2,2) (3,3); updates (10,20) to row 2, (30,40) to row 4 (not a row: skipped),
  // (50,60) to row 2. add: row 2 = (2+10+50, 2+20+60) = (62, 82). put: the last write, (50, 60).
  const std::vector<Literal> args = {F32({4, 2}, {0, 0, 1, 1, 2, 2, 3, 3}),
                                     Literal(Shape(DType::kS32, {3, 1}), {2, 4, 2}),
                                     F32({3, 2}, {10, 20, 30, 40, 50, 60})};
  const Literal out = Run(*r.module, args);
  CHECK(out.elements[0].values == std::vector<double>{0, 0, 1, 1, 62, 82, 3, 3});
  CHECK(out.elements[1].values == std::vector<double>{0, 0, 1, 1, 50, 60, 3, 3});
  // A negative start is out of bounds too.
  std::vector<Literal> neg = args;
  neg[1] = Literal(Shape(DType::kS32, {3, 1}), {-1, 0, -2});
  CHECK(Run(*r.module, neg).elements[0].values == std::vector<double>{30, 40, 1, 1, 2, 2, 3, 3});
  const Instruction* s = Find(*r.module, "s_add");
  REQUIRE(s != nullptr);
  CHECK(s->custom_call_target == "xla:scatter");
  REQUIRE(s->body != nullptr);
  CheckRoundTrips(*r.module, args, out);
}

TEST_CASE("scatter: 2-D windows, a transposed window dim, batching dims, two arrays") {
  const auto r = Import(std::string(kCombiners) + R"(ENTRY e {
  x = f32[3,4] parameter(0)
  i = s32[3,2] parameter(1)
  u = f32[3,2,2] parameter(2)
  tiles = f32[3,4] scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
  y = f32[2,3] parameter(3)
  c = s32[2] parameter(4)
  w = f32[2,2] parameter(5)
  cols = f32[2,3] scatter(y, c, w), update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
  b = s32[2,1] parameter(6)
  v = f32[2] parameter(7)
  batched = f32[2,3] scatter(y, b, v), update_window_dims={}, inserted_window_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
  p = f32[3] parameter(8)
  q = f32[3] parameter(9)
  k = s32[3,1] parameter(10)
  g = f32[3] parameter(11)
  h = f32[3] parameter(12)
  pair = (f32[3], f32[3]) scatter(p, q, k, g, h), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sum_prod
  ROOT t = (f32[3,4], f32[2,3], f32[2,3], (f32[3], f32[3])) tuple(tiles, cols, batched, pair)
})");
  const std::vector<Literal> args = {
      F32({3, 4}, std::vector<double>(12, 0)),
      // 2x2 windows at (0,1), (1,2) and (2,0); the last needs rows 2-3 of 3: skipped.
      Literal(Shape(DType::kS32, {3, 2}), {0, 1, 1, 2, 2, 0}),
      F32({3, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40, 100, 100, 100, 100}),
      F32({2, 3}, std::vector<double>(6, 0)),
      // Columns 2 and 0; the window is dim 0 of the updates, the batch dim 1: update (r, b).
      Literal(Shape(DType::kS32, {2}), {2, 0}),
      F32({2, 2}, {1, 2, 3, 4}),
      // Row r (the batching dim) gets v[r] at column b[r]: row 0 col 2, row 1 col 0.
      Literal(Shape(DType::kS32, {2, 1}), {2, 0}),
      F32({2}, {5, 7}),
      F32({3}, {1, 2, 3}),
      F32({3}, {1, 1, 1}),
      Literal(Shape(DType::kS32, {3, 1}), {0, 2, 0}),
      F32({3}, {10, 20, 30}),
      F32({3}, {2, 3, 4}),
  };
  const Literal out = Run(*r.module, args);
  // tiles: (1 2; 3 4) at rows 0-1, cols 1-2; (10 20; 30 40) at rows 1-2, cols 2-3.
  CHECK(out.elements[0].values == std::vector<double>{0, 1, 2, 0, 0, 3, 14, 20, 0, 0, 30, 40});
  // cols: column 2 gets (u[0,0], u[1,0]) = (1, 3); column 0 gets (u[0,1], u[1,1]) = (2, 4).
  CHECK(out.elements[1].values == std::vector<double>{2, 0, 1, 4, 0, 3});
  CHECK(out.elements[2].values == std::vector<double>{0, 0, 5, 7, 0, 0});
  // Sums 1+10+30, 2, 3+20; products 1*2*4, 1, 1*3.
  CHECK(out.elements[3].elements[0].values == std::vector<double>{41, 2, 23});
  CHECK(out.elements[3].elements[1].values == std::vector<double>{8, 1, 3});
  CheckRoundTrips(*r.module, args, out);
  // Cost of the 2-D window: 12 update elements, one add each.
  CHECK(InstructionCost(*Find(*r.module, "tiles.rows")).flops == 12);
}

TEST_CASE("scatter: an inserted dim of one element that no index names") {
  // x is [1,3]; dim 0 is inserted (window 1, start 0: never indexed), dim 1 indexed. Updates
  // 5 and 7 go to columns 2 and 0: [[7, 0, 5]].
  const auto r = Import(std::string(kCombiners) + R"(ENTRY e {
  x = f32[1,3] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2] parameter(2)
  ROOT s = f32[1,3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
})");
  const Literal out = Run(*r.module, {F32({1, 3}, {0, 0, 0}),
                                      Literal(Shape(DType::kS32, {2, 1}), {2, 0}), F32({2}, {5, 7})});
  CHECK(out.values == std::vector<double>{7, 0, 5});
}

TEST_CASE("reduce-window keeps its computation: a product and a windowed argmax") {
  const auto r = Import(std::string(kReducers) + R"(ENTRY e {
  x = f32[5] parameter(0)
  one = f32[] constant(1)
  pr = f32[5] reduce-window(x, one), window={size=2 pad=1_0}, to_apply=mul
  ix = s32[5] iota(), iota_dimension=0
  lo = f32[] constant(-inf)
  z = s32[] constant(0)
  am = (f32[3], s32[3]) reduce-window(x, ix, lo, z), window={size=2 stride=2 pad=0_1}, to_apply=argmax
  ROOT t = (f32[5], (f32[3], s32[3])) tuple(pr, am)
})");
  // x = 3 1 4 1 5. Products of (pad, 3) (3, 1) (1, 4) (4, 1) (1, 5): 3 3 4 4 5 (the padding
  // tap is skipped). argmax of (3, 1) (4, 1) (5, pad): (3, 0) (4, 2) (5, 4).
  const std::vector<Literal> args = {F32({5}, {3, 1, 4, 1, 5})};
  const Literal out = Run(*r.module, args);
  CHECK(out.elements[0].values == std::vector<double>{3, 3, 4, 4, 5});
  CHECK(out.elements[1].elements[0].values == std::vector<double>{3, 4, 5});
  CHECK(out.elements[1].elements[1].values == std::vector<double>{0, 2, 4});
  const Instruction* am = Find(*r.module, "am");
  REQUIRE(am != nullptr);
  CHECK(am->custom_call_target == "xla:reduce-window");
  REQUIRE(am->window.size() == 1);
  CHECK(am->window[0].stride == 2);
  CHECK(PrintModule(*r.module).find("region_window={size=2 stride=2 pad=0_1}") != std::string::npos);
  CheckRoundTrips(*r.module, args, out);
}

TEST_CASE("select-and-scatter: XLA's selection rule, overlapping windows, padding, the init") {
  const auto r = Import(std::string(kCombiners) + R"(ENTRY e {
  x = f32[4] parameter(0)
  src = f32[3] parameter(1)
  zero = f32[] constant(0)
  by_ge = f32[4] select-and-scatter(x, src, zero), window={size=2}, select=ge, scatter=add
  by_gt = f32[4] select-and-scatter(x, src, zero), window={size=2}, select=gt, scatter=add
  y = f32[2] parameter(2)
  s2 = f32[2] parameter(3)
  hundred = f32[] constant(100)
  padded = f32[2] select-and-scatter(y, s2, hundred), window={size=2 stride=2 pad=1_1}, select=ge, scatter=add
  ROOT t = (f32[4], f32[4], f32[2]) tuple(by_ge, by_gt, padded)
})");
  // x = 1 3 2 2, windows (1 3) (3 2) (2 2) with sources 10 20 30. A later tap replaces the
  // choice unless select(choice, tap): with >= the first maximum stays (positions 1, 1, 2);
  // with > a tie moves on (1, 1, 3). y = 5 1 in windows (pad 5) (1 pad): positions 0 and 1,
  // each source added to the init 100.
  const std::vector<Literal> args = {F32({4}, {1, 3, 2, 2}), F32({3}, {10, 20, 30}),
                                     F32({2}, {5, 1}), F32({2}, {7, 9})};
  const Literal out = Run(*r.module, args);
  CHECK(out.elements[0].values == std::vector<double>{0, 30, 30, 0});
  CHECK(out.elements[1].values == std::vector<double>{0, 30, 0, 30});
  CHECK(out.elements[2].values == std::vector<double>{107, 109});
  CheckRoundTrips(*r.module, args, out);
}

TEST_CASE("region forms that do not fit their operands are errors, not wrong values") {
  // A scatter whose updates are not the indices' batch dims and the window.
  CHECK(ImportError(std::string(kCombiners) + R"(ENTRY e {
  x = f32[4,2] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[2,2] parameter(2)
  ROOT s = f32[4,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})").find("do not have the indices' batch dims") != std::string::npos);
  CHECK(ImportError(std::string(kCombiners) + R"(ENTRY e {
  x = f32[4,2] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[3,3] parameter(2)
  ROOT s = f32[4,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})").find("does not fit dim 1") != std::string::npos);
  CHECK(ImportError(std::string(kCombiners) + R"(ENTRY e {
  x = f32[4] parameter(0)
  s = f32[3] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4] select-and-scatter(x, s, z), window={size=2}, scatter=add
})").find("needs select= and scatter=") != std::string::npos);
  // podsim's own text: a window selection whose result is not its windows' shape.
  const char* bad = R"(HloModule m
%ge {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %g = pred[] compare(%a, %b), direction=GE
}
ENTRY %e {
  %x = f32[4] parameter(0)
  ROOT %w = s32[4] custom-call(%x), custom_call_target="xla:window-select", region=%ge, region_window={size=2}
})";
  try {
    Verify(*ParseModule(bad));
    FAIL("expected a shape error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("a window selection gives s32[3]") != std::string::npos);
  }
}

}  // namespace
}  // namespace podsim::ir
