// The XLA HLO importer's ops that podsim writes out in its own ops or costs as kernels: dots of
// mixed types, batch norm, bitcast-convert, batch-group convolutions, XLA's gather with full
// dimension numbers, and the costs of scatter and sort; shapes, costs and values derived by
// hand in the comments (the ops that keep a computation are in hlo_import_regions_test.cc).

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

}  // namespace
}  // namespace podsim::ir
