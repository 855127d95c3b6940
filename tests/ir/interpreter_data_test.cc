// Interpreter: leaves (constant, iota) and data movement. Expected values are derived by hand in
// the comments; x[i,j] of a row-major literal is values[i * cols + j].

#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::F32;
using testing::InterpFixture;
using testing::S32;

TEST_CASE("interpreter: constant and iota") {
  InterpFixture f;
  auto* c = f.Const(F32({2}, {0.5, -3}));
  auto* rows = f.b.Iota(Shape(DType::kS32, {2, 3}), 0);
  auto* cols = f.b.Iota(Shape(DType::kF32, {2, 3}), 1);
  f.b.Tuple({c, rows, cols});
  Literal out = f.Run();
  CHECK(out.elements[0] == F32({2}, {0.5, -3}));
  // iota along dim 0: value = row; along dim 1: value = column.
  CHECK(out.elements[1] == S32({2, 3}, {0, 0, 0, 1, 1, 1}));
  CHECK(out.elements[2] == F32({2, 3}, {0, 1, 2, 0, 1, 2}));
}

TEST_CASE("interpreter: broadcast") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {2});
  auto* s = f.Param(1, DType::kF32, {});
  auto* along_cols = f.b.Broadcast(x, {3, 2}, {1});  // out[i,j] = x[j]
  auto* along_rows = f.b.Broadcast(x, {2, 3}, {0});  // out[i,j] = x[i]
  auto* scalar = f.b.BroadcastScalar(s, {2, 2});
  f.b.Tuple({along_cols, along_rows, scalar});
  Literal out = f.Run({F32({2}, {1, 2}), F32({}, {7})});
  CHECK(out.elements[0] == F32({3, 2}, {1, 2, 1, 2, 1, 2}));
  CHECK(out.elements[1] == F32({2, 3}, {1, 1, 1, 2, 2, 2}));
  CHECK(out.elements[2] == F32({2, 2}, {7, 7, 7, 7}));
}

TEST_CASE("interpreter: reshape keeps row-major order") {
  InterpFixture f;
  f.b.Reshape(f.Param(0, DType::kS32, {2, 3}), {3, 2});
  // [[1,2,3],[4,5,6]] -> [[1,2],[3,4],[5,6]].
  CHECK(f.Run({S32({2, 3}, {1, 2, 3, 4, 5, 6})}) == S32({3, 2}, {1, 2, 3, 4, 5, 6}));
}

TEST_CASE("interpreter: transpose") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kS32, {2, 3});
  auto* y = f.Param(1, DType::kS32, {2, 3, 4});
  auto* t2 = f.b.Transpose(x, {1, 0});
  auto* t3 = f.b.Transpose(y, {2, 0, 1});
  f.b.Tuple({t2, t3});
  std::vector<double> iota24(24);
  for (int k = 0; k < 24; ++k) iota24[k] = k;
  Literal out = f.Run({S32({2, 3}, {1, 2, 3, 4, 5, 6}), S32({2, 3, 4}, iota24)});
  // [[1,2,3],[4,5,6]]^T = [[1,4],[2,5],[3,6]].
  CHECK(out.elements[0] == S32({3, 2}, {1, 4, 2, 5, 3, 6}));
  // y[b,c,a] = 12b + 4c + a; output dim i is y's dim perm[i], so out[a,b,c] = y[b,c,a].
  const Literal& t = out.elements[1];
  CHECK(t.shape == Shape(DType::kS32, {4, 2, 3}));
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 3; ++c) CHECK(t.At({a, b, c}) == 12 * b + 4 * c + a);
    }
  }
}

TEST_CASE("interpreter: slice with strides") {
  InterpFixture f;
  auto* v = f.Param(0, DType::kS32, {10});
  auto* m = f.Param(1, DType::kS32, {3, 4});
  auto* s1 = f.b.Slice(v, {1}, {8}, {3});             // indices 1, 4, 7
  auto* s2 = f.b.Slice(m, {0, 1}, {3, 4}, {2, 2});    // rows 0, 2; columns 1, 3
  auto* s3 = f.b.Slice(m, {1, 0}, {2, 4});            // row 1
  f.b.Tuple({s1, s2, s3});
  Literal out = f.Run({S32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}),
                       S32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})});
  CHECK(out.elements[0] == S32({3}, {1, 4, 7}));
  // m = [[0,1,2,3],[4,5,6,7],[8,9,10,11]]: rows {0,2} x columns {1,3} = [[1,3],[9,11]].
  CHECK(out.elements[1] == S32({2, 2}, {1, 3, 9, 11}));
  CHECK(out.elements[2] == S32({1, 4}, {4, 5, 6, 7}));
}

TEST_CASE("interpreter: dynamic-slice clamps its starts") {
  InterpFixture f;
  auto* v = f.Param(0, DType::kS32, {5});
  auto* m = f.Param(1, DType::kS32, {3, 3});
  // Size 2 of dim 5: starts clamp to [0, 3].
  auto* a = f.b.DynamicSlice(v, {f.S32Scalar(3)}, {2});   // [3,4]
  auto* b = f.b.DynamicSlice(v, {f.S32Scalar(4)}, {2});   // 4 -> 3: [3,4]
  auto* c = f.b.DynamicSlice(v, {f.S32Scalar(-1)}, {2});  // -1 -> 0: [0,1]
  // m = [[0,1,2],[3,4,5],[6,7,8]], size 2x2 at (1, 5 -> 1): [[4,5],[7,8]].
  auto* d = f.b.DynamicSlice(m, {f.S32Scalar(1), f.S32Scalar(5)}, {2, 2});
  f.b.Tuple({a, b, c, d});
  Literal out =
      f.Run({S32({5}, {0, 1, 2, 3, 4}), S32({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8})});
  CHECK(out.elements[0] == S32({2}, {3, 4}));
  CHECK(out.elements[1] == S32({2}, {3, 4}));
  CHECK(out.elements[2] == S32({2}, {0, 1}));
  CHECK(out.elements[3] == S32({2, 2}, {4, 5, 7, 8}));
}

TEST_CASE("interpreter: dynamic-update-slice clamps its starts") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {4});
  auto* u = f.Param(1, DType::kF32, {2});
  auto* m = f.Param(2, DType::kF32, {2, 3});
  auto* mu = f.Param(3, DType::kF32, {1, 2});
  auto* a = f.b.DynamicUpdateSlice(x, u, {f.S32Scalar(1)});   // [0,1,2,0]
  auto* b = f.b.DynamicUpdateSlice(x, u, {f.S32Scalar(3)});   // 3 -> 2: [0,0,1,2]
  auto* c = f.b.DynamicUpdateSlice(x, u, {f.S32Scalar(-2)});  // -2 -> 0: [1,2,0,0]
  // Row 1, column 1 of a 2x3 zero matrix: [[0,0,0],[0,5,6]].
  auto* d = f.b.DynamicUpdateSlice(m, mu, {f.S32Scalar(1), f.S32Scalar(1)});
  f.b.Tuple({a, b, c, d});
  Literal out = f.Run({F32({4}, {0, 0, 0, 0}), F32({2}, {1, 2}), F32({2, 3}, {0, 0, 0, 0, 0, 0}),
                       F32({1, 2}, {5, 6})});
  CHECK(out.elements[0] == F32({4}, {0, 1, 2, 0}));
  CHECK(out.elements[1] == F32({4}, {0, 0, 1, 2}));
  CHECK(out.elements[2] == F32({4}, {1, 2, 0, 0}));
  CHECK(out.elements[3] == F32({2, 3}, {0, 0, 0, 0, 5, 6}));
}

TEST_CASE("interpreter: pad with negative low and interior padding") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {3});
  auto* m = f.Param(1, DType::kF32, {2, 2});
  auto* zero = f.b.ConstantScalar(DType::kF32, 0);
  auto* nine = f.b.ConstantScalar(DType::kF32, 9);
  // [1,2,3] with interior 1 -> [1,0,2,0,3]; low -1 crops the 1 -> [0,2,0,3]; high 2 appends two
  // zeros -> [0,2,0,3,0,0] (size 3 - 1 + 2 + 2*1 = 6).
  auto* a = f.b.Pad(x, zero, {{-1, 2, 1}});
  // [1,2,3] with low 2, high -2: [0,0,1,2,3] cropped at the end to [0,0,1].
  auto* b = f.b.Pad(x, zero, {{2, -2, 0}});
  // [[1,2],[3,4]]: dim 1 interior 1, high 1 -> rows [a,9,b,9]; dim 0 low 1 adds a row of 9s:
  // [[9,9,9,9],[1,9,2,9],[3,9,4,9]].
  auto* c = f.b.Pad(m, nine, {{1, 0, 0}, {0, 1, 1}});
  f.b.Tuple({a, b, c});
  Literal out = f.Run({F32({3}, {1, 2, 3}), F32({2, 2}, {1, 2, 3, 4})});
  CHECK(out.elements[0] == F32({6}, {0, 2, 0, 3, 0, 0}));
  CHECK(out.elements[1] == F32({3}, {0, 0, 1}));
  CHECK(out.elements[2] == F32({3, 4}, {9, 9, 9, 9, 1, 9, 2, 9, 3, 9, 4, 9}));
}

TEST_CASE("interpreter: concatenate") {
  InterpFixture f;
  auto* a = f.Param(0, DType::kS32, {2, 2});
  auto* b = f.Param(1, DType::kS32, {2, 1});
  auto* c = f.Param(2, DType::kS32, {1, 2});
  auto* cols = f.b.Concatenate({a, b}, 1);     // [[1,2,5],[3,4,6]]
  auto* rows = f.b.Concatenate({a, c, a}, 0);  // [[1,2],[3,4],[7,8],[1,2],[3,4]]
  f.b.Tuple({cols, rows});
  Literal out = f.Run({S32({2, 2}, {1, 2, 3, 4}), S32({2, 1}, {5, 6}), S32({1, 2}, {7, 8})});
  CHECK(out.elements[0] == S32({2, 3}, {1, 2, 5, 3, 4, 6}));
  CHECK(out.elements[1] == S32({5, 2}, {1, 2, 3, 4, 7, 8, 1, 2, 3, 4}));
}

TEST_CASE("interpreter: reverse") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kS32, {2, 3});
  auto* r1 = f.b.Reverse(x, {1});
  auto* r01 = f.b.Reverse(x, {0, 1});
  f.b.Tuple({r1, r01});
  // [[1,2,3],[4,5,6]]: columns reversed [[3,2,1],[6,5,4]]; both [[6,5,4],[3,2,1]].
  Literal out = f.Run({S32({2, 3}, {1, 2, 3, 4, 5, 6})});
  CHECK(out.elements[0] == S32({2, 3}, {3, 2, 1, 6, 5, 4}));
  CHECK(out.elements[1] == S32({2, 3}, {6, 5, 4, 3, 2, 1}));
}

TEST_CASE("interpreter: gather clamps its indices") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {3, 2});
  auto* rows = f.Param(1, DType::kS32, {4});
  auto* cols = f.Param(2, DType::kS32, {2, 1});
  // x = [[1,2],[3,4],[5,6]]; rows [2,0,7,-1] clamp to [2,0,2,0]: [[5,6],[1,2],[5,6],[1,2]].
  auto* g0 = f.b.Gather(x, rows, 0);
  // Axis 1 with indices [[1],[0]]: out dims [3] ++ [2,1] = [3,2,1]; out[r,i,0] = x[r, idx[i]]:
  // r0 -> [2,1], r1 -> [4,3], r2 -> [6,5].
  auto* g1 = f.b.Gather(x, cols, 1);
  f.b.Tuple({g0, g1});
  Literal out = f.Run({F32({3, 2}, {1, 2, 3, 4, 5, 6}), S32({4}, {2, 0, 7, -1}),
                       S32({2, 1}, {1, 0})});
  CHECK(out.elements[0] == F32({4, 2}, {5, 6, 1, 2, 5, 6, 1, 2}));
  CHECK(out.elements[1] == F32({3, 2, 1}, {2, 1, 4, 3, 6, 5}));
}

}  // namespace
}  // namespace podsim::ir
