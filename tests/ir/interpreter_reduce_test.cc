// Interpreter: reduce, argmax, reduce-window, cumsum, sort, top-k. Expected values are derived by
// hand in the comments.

#include <cmath>
#include <limits>

#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::F32;
using testing::InterpFixture;
using testing::Pred;
using testing::S32;

constexpr double kInterpreterReduceInf = std::numeric_limits<double>::infinity();

TEST_CASE("interpreter: reduce of every kind") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2, 3});
  auto* p = f.Param(1, DType::kPred, {2, 2});
  auto* rows = f.b.Reduce(x, {1}, ReduceKind::kAdd);
  auto* cols = f.b.Reduce(x, {0}, ReduceKind::kAdd);
  auto* all = f.b.Reduce(x, {0, 1}, ReduceKind::kAdd);
  auto* mx = f.b.Reduce(x, {1}, ReduceKind::kMax);
  auto* mn = f.b.Reduce(x, {0}, ReduceKind::kMin);
  auto* all_of = f.b.Reduce(p, {1}, ReduceKind::kAnd);
  auto* any_of = f.b.Reduce(p, {1}, ReduceKind::kOr);
  f.b.Tuple({rows, cols, all, mx, mn, all_of, any_of});
  // x = [[1,2,3],[4,-5,6]], p = [[1,0],[1,1]].
  Literal out = f.Run({F32({2, 3}, {1, 2, 3, 4, -5, 6}), Pred({2, 2}, {1, 0, 1, 1})});
  CHECK(out.elements[0] == F32({2}, {6, 5}));         // 1+2+3, 4-5+6
  CHECK(out.elements[1] == F32({3}, {5, -3, 9}));     // 1+4, 2-5, 3+6
  CHECK(out.elements[2] == F32({}, {11}));            // 6 + 5
  CHECK(out.elements[3] == F32({2}, {3, 6}));         // row maxima
  CHECK(out.elements[4] == F32({3}, {1, -5, 3}));     // column minima
  CHECK(out.elements[5] == Pred({2}, {0, 1}));        // 1&0, 1&1
  CHECK(out.elements[6] == Pred({2}, {1, 1}));        // 1|0, 1|1
}

TEST_CASE("interpreter: reduce accumulates exactly and rounds once; s32 sums wrap") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {3});
  auto* s = f.Param(1, DType::kS32, {2});
  auto* e = f.Param(2, DType::kS32, {0, 2});
  auto* sum = f.b.Reduce(x, {0}, ReduceKind::kAdd);
  auto* ssum = f.b.Reduce(s, {0}, ReduceKind::kAdd);
  auto* empty_max = f.b.Reduce(e, {0}, ReduceKind::kMax);
  f.b.Tuple({sum, ssum, empty_max});
  // 1 + 2^-24 + 2^-24 = 1 + 2^-23, an f32 value (folding in f32 would tie back to 1 twice).
  // INT32_MAX + 1 wraps to INT32_MIN. Max over an empty dim is the identity -inf, which
  // saturates to INT32_MIN in s32.
  Literal out = f.Run({F32({3}, {1, 0x1p-24, 0x1p-24}), S32({2}, {2147483647, 1}),
                       S32({0, 2}, {})});
  CHECK(out.elements[0] == F32({}, {1 + 0x1p-23}));
  CHECK(out.elements[1] == S32({}, {-2147483648.0}));
  CHECK(out.elements[2] == S32({2}, {-2147483648.0, -2147483648.0}));
}

TEST_CASE("interpreter: argmax returns the first maximum") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2, 3});
  auto* along1 = f.b.Argmax(x, 1);
  auto* along0 = f.b.Argmax(x, 0);
  f.b.Tuple({along1, along0});
  // x = [[1,3,3],[5,2,5]]: rows -> [1 (first of the two 3s), 0 (first of the two 5s)];
  // columns [1,5] -> 1, [3,2] -> 0, [3,5] -> 1.
  Literal out = f.Run({F32({2, 3}, {1, 3, 3, 5, 2, 5})});
  CHECK(out.elements[0] == S32({2}, {1, 0}));
  CHECK(out.elements[1] == S32({3}, {1, 0, 1}));
}

TEST_CASE("interpreter: reduce-window max pool with padding and stride") {
  InterpFixture f;
  auto* v = f.Param(0, DType::kF32, {5});
  auto* m = f.Param(1, DType::kF32, {4, 4});
  WindowDim pool;
  pool.size = 2;
  pool.stride = 2;
  pool.pad_low = 1;
  // [3,1,4,1,5] padded to [pad,3,1,4,1,5]: windows {pad,3}, {1,4}, {1,5} -> [3,4,5].
  auto* a = f.b.ReduceWindow(v, {pool}, ReduceKind::kMax);
  WindowDim two;
  two.size = 2;
  two.stride = 2;
  // 2x2 max pool of 1..16 (row-major): [[6,8],[14,16]].
  auto* b = f.b.ReduceWindow(m, {two, two}, ReduceKind::kMax);
  f.b.Tuple({a, b});
  std::vector<double> grid(16);
  for (int k = 0; k < 16; ++k) grid[k] = k + 1;
  Literal out = f.Run({F32({5}, {3, 1, 4, 1, 5}), F32({4, 4}, grid)});
  CHECK(out.elements[0] == F32({3}, {3, 4, 5}));
  CHECK(out.elements[1] == F32({2, 2}, {6, 8, 14, 16}));
}

TEST_CASE("interpreter: reduce-window sums, dilations and all-padding windows") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {5});
  auto* y = f.Param(1, DType::kF32, {2});
  auto* z = f.Param(2, DType::kF32, {4});
  auto* one = f.Param(3, DType::kF32, {1});
  WindowDim three;
  three.size = 3;
  three.pad_low = 1;
  three.pad_high = 1;
  // [3,1,4,1,5] padded [0,3,1,4,1,5,0], sums of 3: [4, 8, 6, 10, 6].
  auto* sums = f.b.ReduceWindow(x, {three}, ReduceKind::kAdd);
  WindowDim base;
  base.size = 2;
  base.base_dilation = 2;
  // [1,2] base-dilated to [1,_,2]: windows {1,_} and {_,2} -> [1, 2] (holes add nothing).
  auto* based = f.b.ReduceWindow(y, {base}, ReduceKind::kAdd);
  WindowDim wide;
  wide.size = 2;
  wide.window_dilation = 2;
  // Taps o and o+2 of [1,2,3,4]: [1+3, 2+4] = [4, 6].
  auto* dilated = f.b.ReduceWindow(z, {wide}, ReduceKind::kAdd);
  WindowDim lead;
  lead.size = 1;
  lead.pad_low = 1;
  // [5] padded [pad,5]: a window on padding only is the identity: min -> [inf, 5].
  auto* mins = f.b.ReduceWindow(one, {lead}, ReduceKind::kMin);
  f.b.Tuple({sums, based, dilated, mins});
  Literal out = f.Run({F32({5}, {3, 1, 4, 1, 5}), F32({2}, {1, 2}), F32({4}, {1, 2, 3, 4}),
                       F32({1}, {5})});
  CHECK(out.elements[0] == F32({5}, {4, 8, 6, 10, 6}));
  CHECK(out.elements[1] == F32({2}, {1, 2}));
  CHECK(out.elements[2] == F32({2}, {4, 6}));
  CHECK(out.elements[3] == F32({2}, {kInterpreterReduceInf, 5}));
}

TEST_CASE("interpreter: cumsum inclusive and exclusive") {
  InterpFixture f;
  auto* v = f.Param(0, DType::kS32, {4});
  auto* m = f.Param(1, DType::kF32, {2, 2});
  auto* inc = f.b.Cumsum(v, 0);
  auto* exc = f.b.Cumsum(v, 0, /*exclusive=*/true);
  auto* inc0 = f.b.Cumsum(m, 0);
  auto* exc1 = f.b.Cumsum(m, 1, /*exclusive=*/true);
  f.b.Tuple({inc, exc, inc0, exc1});
  Literal out = f.Run({S32({4}, {1, 2, 3, 4}), F32({2, 2}, {1, 2, 3, 4})});
  CHECK(out.elements[0] == S32({4}, {1, 3, 6, 10}));
  CHECK(out.elements[1] == S32({4}, {0, 1, 3, 6}));
  // [[1,2],[3,4]] down the columns: [[1,2],[1+3,2+4]] = [[1,2],[4,6]].
  CHECK(out.elements[2] == F32({2, 2}, {1, 2, 4, 6}));
  // Along rows, exclusive: [[0,1],[0,3]].
  CHECK(out.elements[3] == F32({2, 2}, {0, 1, 0, 3}));
}

TEST_CASE("interpreter: sort ascending, descending and stable") {
  InterpFixture f;
  auto* v = f.Param(0, DType::kF32, {3});
  auto* m = f.Param(1, DType::kS32, {2, 2});
  auto* z = f.Param(2, DType::kF32, {3});
  auto* asc = f.b.Sort(v, 0);
  auto* desc = f.b.Sort(v, 0, /*descending=*/true);
  auto* cols = f.b.Sort(m, 0);
  auto* zeros_asc = f.b.Sort(z, 0);
  auto* zeros_desc = f.b.Sort(z, 0, /*descending=*/true);
  f.b.Tuple({asc, desc, cols, zeros_asc, zeros_desc});
  Literal out = f.Run({F32({3}, {3, 1, 2}), S32({2, 2}, {3, 1, 1, 2}), F32({3}, {0.0, -0.0, -1})});
  CHECK(out.elements[0] == F32({3}, {1, 2, 3}));
  CHECK(out.elements[1] == F32({3}, {3, 2, 1}));
  // [[3,1],[1,2]] sorted down each column: [[1,1],[3,2]].
  CHECK(out.elements[2] == S32({2, 2}, {1, 1, 3, 2}));
  // 0.0 and -0.0 compare equal: a stable sort keeps +0 before -0 either way.
  const Literal& za = out.elements[3];
  CHECK(za.values[0] == -1);
  CHECK(!std::signbit(za.values[1]));
  CHECK(std::signbit(za.values[2]));
  const Literal& zd = out.elements[4];
  CHECK(!std::signbit(zd.values[0]));
  CHECK(std::signbit(zd.values[1]));
  CHECK(zd.values[2] == -1);
}

TEST_CASE("interpreter: top-k is stable on ties") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2, 4});
  auto* t = f.b.TopK(x, 3);
  auto* values = f.b.GetTupleElement(t, 0);
  auto* indices = f.b.GetTupleElement(t, 1);
  f.b.Tuple({values, indices});
  // Row [1,3,3,2]: largest first, the tied 3s in index order: values [3,3,2], indices [1,2,3].
  // Row [4,-1,0,4]: [4,4,0] at [0,3,2].
  Literal out = f.Run({F32({2, 4}, {1, 3, 3, 2, 4, -1, 0, 4})});
  CHECK(out.elements[0] == F32({2, 3}, {3, 3, 2, 4, 4, 0}));
  CHECK(out.elements[1] == S32({2, 3}, {1, 2, 3, 0, 3, 2}));
}

}  // namespace
}  // namespace podsim::ir
