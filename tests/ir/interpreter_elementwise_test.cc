// Interpreter: elementwise unary, binary, compare and select, per dtype. Expected values are
// derived by hand in the comments.

#include <cmath>
#include <limits>

#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::BF16;
using testing::F32;
using testing::InterpFixture;
using testing::Pred;
using testing::S32;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInt32Min = -2147483648.0;
constexpr double kInt32Max = 2147483647.0;

// Runs the unary op on an f32 (or given dtype) vector.
Literal RunUnary(Opcode op, const Literal& x) {
  InterpFixture f;
  f.b.Unary(op, f.Param(0, x.shape.dtype, x.shape.dims));
  return f.Run({x});
}

Literal RunBinary(Opcode op, const Literal& a, const Literal& b) {
  InterpFixture f;
  auto* pa = f.Param(0, a.shape.dtype, a.shape.dims);
  auto* pb = f.Param(1, b.shape.dtype, b.shape.dims);
  f.b.Binary(op, pa, pb);
  return f.Run({a, b});
}

TEST_CASE("interpreter: negate and abs on f32 and s32") {
  // [[1,-2],[3,0]] -> negate [[-1,2],[-3,-0]]; abs [[1,2],[3,0]].
  CHECK(RunUnary(Opcode::kNegate, F32({2, 2}, {1, -2, 3, 0})) == F32({2, 2}, {-1, 2, -3, 0}));
  CHECK(RunUnary(Opcode::kAbs, F32({2, 2}, {1, -2, 3, 0})) == F32({2, 2}, {1, 2, 3, 0}));
  // s32 wraps: -INT32_MIN = INT32_MIN and |INT32_MIN| = INT32_MIN (two's complement).
  CHECK(RunUnary(Opcode::kNegate, S32({3}, {5, -7, kInt32Min})) == S32({3}, {-5, 7, kInt32Min}));
  CHECK(RunUnary(Opcode::kAbs, S32({3}, {5, -7, kInt32Min})) == S32({3}, {5, 7, kInt32Min}));
}

TEST_CASE("interpreter: transcendental unary ops round to f32") {
  // exp(0) = 1; exp(1) = e = 2.718281828..., nearest f32 2.7182817459106445.
  CHECK(RunUnary(Opcode::kExp, F32({2}, {0, 1})) == F32({2}, {1, double{2.7182817f}}));
  // log(1) = 0, log(0) = -inf, log(-1) = NaN.
  Literal lg = RunUnary(Opcode::kLog, F32({3}, {1, 0, -1}));
  CHECK(lg.values[0] == 0);
  CHECK(lg.values[1] == -kInf);
  CHECK(std::isnan(lg.values[2]));
  // sqrt(4) = 2; sqrt(2) = 1.41421356..., nearest f32 1.4142135381698608.
  CHECK(RunUnary(Opcode::kSqrt, F32({2}, {4, 2})) == F32({2}, {2, double{1.41421356f}}));
  // rsqrt(4) = 1/2, rsqrt(0.25) = 2, rsqrt(0) = inf.
  CHECK(RunUnary(Opcode::kRsqrt, F32({3}, {4, 0.25, 0})) == F32({3}, {0.5, 2, kInf}));
  // tanh(0) = 0, tanh(+-100) = +-1 (within f32).
  CHECK(RunUnary(Opcode::kTanh, F32({3}, {0, 100, -100})) == F32({3}, {0, 1, -1}));
  // bf16: exp(1) = 2.718..., bf16 spacing in [2,4) is 2^-6: 2.71875 is nearest.
  CHECK(RunUnary(Opcode::kExp, BF16({1}, {1})) == BF16({1}, {2.71875}));
}

TEST_CASE("interpreter: convert between dtypes") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {5});
  auto* to_s32 = f.b.Convert(x, DType::kS32);
  auto* to_pred = f.b.Convert(x, DType::kPred);
  auto* to_bf16 = f.b.Convert(x, DType::kBF16);
  auto* back = f.b.Convert(to_s32, DType::kF32);
  f.b.Tuple({to_s32, to_pred, to_bf16, back});
  // f32 -> s32 truncates toward zero, NaN -> 0: [1.7,-1.7,2.5,NaN,0] -> [1,-1,2,0,0].
  // f32 -> pred is x != 0 (NaN != 0): [1,1,1,1,0].
  // f32 -> bf16 rounds to 8 significant bits, nearest even: 1.7 = 1.10110011..b -> 1.1011010b =
  // 1.703125; 2.5 exact; NaN stays NaN.
  Literal out = f.Run({F32({5}, {1.7, -1.7, 2.5, kNan, 0})});
  CHECK(out.elements[0] == S32({5}, {1, -1, 2, 0, 0}));
  CHECK(out.elements[1] == Pred({5}, {1, 1, 1, 1, 0}));
  CHECK(out.elements[2].values[0] == 1.703125);
  CHECK(out.elements[2].values[1] == -1.703125);
  CHECK(out.elements[2].values[2] == 2.5);
  CHECK(std::isnan(out.elements[2].values[3]));
  CHECK(out.elements[3] == F32({5}, {1, -1, 2, 0, 0}));
  // An s32 has no -0: -0.4 truncates to +0.
  InterpFixture g;
  g.b.Convert(g.Param(0, DType::kF32, {1}), DType::kS32);
  CHECK(!std::signbit(g.Run({F32({1}, {-0.4})}).values[0]));
}

TEST_CASE("interpreter: convert saturates to s32 and rounds to bf16 to nearest even") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {4});
  auto* s = f.b.Convert(x, DType::kS32);
  auto* h = f.b.Convert(x, DType::kBF16);
  f.b.Tuple({s, h});
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1). 1 + 3*2^-8 is halfway
  // between 1 + 2^-7 (odd last bit) and 1 + 2^-6: goes to 1.015625. 3e9 saturates to INT32_MAX
  // and -3e9 to INT32_MIN.
  Literal out = f.Run({F32({4}, {1.00390625, 1.01171875, 3e9, -3e9})});
  CHECK(out.elements[0].values[2] == kInt32Max);
  CHECK(out.elements[0].values[3] == kInt32Min);
  CHECK(out.elements[1].values[0] == 1.0);
  CHECK(out.elements[1].values[1] == 1.015625);
}

TEST_CASE("interpreter: f32 arithmetic") {
  const Literal a = F32({2, 2}, {1, 2, 3, 4});
  const Literal b = F32({2, 2}, {5, 6, 7, 8});
  // [[1,2],[3,4]] op [[5,6],[7,8]] elementwise.
  CHECK(RunBinary(Opcode::kAdd, a, b) == F32({2, 2}, {6, 8, 10, 12}));
  CHECK(RunBinary(Opcode::kSubtract, a, b) == F32({2, 2}, {-4, -4, -4, -4}));
  CHECK(RunBinary(Opcode::kMultiply, a, b) == F32({2, 2}, {5, 12, 21, 32}));
  // 1/5, 2/6 = 1/3, 3/7 rounded to f32; 4/8 = 0.5 exactly.
  CHECK(RunBinary(Opcode::kDivide, a, b) ==
        F32({2, 2}, {double{1.0f / 5.0f}, double{1.0f / 3.0f}, double{3.0f / 7.0f}, 0.5}));
  CHECK(RunBinary(Opcode::kMaximum, a, F32({2, 2}, {0, 5, 3, -1})) ==
        F32({2, 2}, {1, 5, 3, 4}));
  CHECK(RunBinary(Opcode::kMinimum, a, F32({2, 2}, {0, 5, 3, -1})) ==
        F32({2, 2}, {0, 2, 3, -1}));
  // 2^3 = 8, 4^0.5 = 2, 9^-0.5 = 1/3 (f32), 0^0 = 1.
  CHECK(RunBinary(Opcode::kPower, F32({4}, {2, 4, 9, 0}), F32({4}, {3, 0.5, -0.5, 0})) ==
        F32({4}, {8, 2, double{1.0f / 3.0f}, 1}));
  // 1/0 = inf, -1/0 = -inf.
  CHECK(RunBinary(Opcode::kDivide, F32({2}, {1, -1}), F32({2}, {0, 0})) == F32({2}, {kInf, -kInf}));
}

TEST_CASE("interpreter: maximum and minimum propagate NaN") {
  Literal mx = RunBinary(Opcode::kMaximum, F32({2}, {1, kNan}), F32({2}, {kNan, 1}));
  Literal mn = RunBinary(Opcode::kMinimum, F32({2}, {1, kNan}), F32({2}, {kNan, 1}));
  CHECK(std::isnan(mx.values[0]));
  CHECK(std::isnan(mx.values[1]));
  CHECK(std::isnan(mn.values[0]));
  CHECK(std::isnan(mn.values[1]));
}

TEST_CASE("interpreter: f32 results are rounded to f32 after every op") {
  // 1 + 2^-24 is halfway between f32 1 and 1 + 2^-23: rounds to even (1). 1 + 3*2^-24 rounds to
  // 1 + 2^-22 (even), not to 1 + 2^-23.
  CHECK(RunBinary(Opcode::kAdd, F32({2}, {1, 1}), F32({2}, {0x1p-24, 0x1.8p-23})) ==
        F32({2}, {1, 1 + 0x1p-22}));
}

TEST_CASE("interpreter: bf16 arithmetic rounds every result to bf16") {
  // 1 + 2^-8: tie between 1 and 1 + 2^-7 -> 1 (even).
  CHECK(RunBinary(Opcode::kAdd, BF16({1}, {1}), BF16({1}, {0x1p-8})) == BF16({1}, {1}));
  // 1.5 * (1 + 2^-7) = 1.10000011b (8 fraction bits); bf16 keeps 7: a tie between 1.1000001b
  // (odd) and 1.1000010b = 1.515625 (even) -> 1.515625.
  CHECK(RunBinary(Opcode::kMultiply, BF16({1}, {1.5}), BF16({1}, {1.0078125})) ==
        BF16({1}, {1.515625}));
  // 1 / 3 = 0.0101010101...b -> 8 significant bits 1.0101011b * 2^-2 (rounded up) = 0.333984375.
  CHECK(RunBinary(Opcode::kDivide, BF16({1}, {1}), BF16({1}, {3})) == BF16({1}, {0.333984375}));
}

TEST_CASE("interpreter: s32 arithmetic") {
  // Division truncates toward zero: 7/2 = 3, -7/2 = -3, 7/-2 = -3, -7/-2 = 3.
  CHECK(RunBinary(Opcode::kDivide, S32({4}, {7, -7, 7, -7}), S32({4}, {2, 2, -2, -2})) ==
        S32({4}, {3, -3, -3, 3}));
  // As XLA's HloEvaluator: x / 0 = -1, INT32_MIN / -1 = INT32_MIN.
  CHECK(RunBinary(Opcode::kDivide, S32({3}, {5, 0, kInt32Min}), S32({3}, {0, 0, -1})) ==
        S32({3}, {-1, -1, kInt32Min}));
  // Overflow wraps: INT32_MAX + 1 = INT32_MIN; INT32_MIN - 1 = INT32_MAX; 2^16 * 2^16 = 2^32 = 0;
  // 3 * 5 = 15.
  CHECK(RunBinary(Opcode::kAdd, S32({2}, {kInt32Max, 2}), S32({2}, {1, 3})) ==
        S32({2}, {kInt32Min, 5}));
  CHECK(RunBinary(Opcode::kSubtract, S32({1}, {kInt32Min}), S32({1}, {1})) ==
        S32({1}, {kInt32Max}));
  CHECK(RunBinary(Opcode::kMultiply, S32({2}, {65536, 3}), S32({2}, {65536, 5})) ==
        S32({2}, {0, 15}));
  CHECK(RunBinary(Opcode::kMaximum, S32({2}, {-3, 4}), S32({2}, {2, -9})) == S32({2}, {2, 4}));
  CHECK(RunBinary(Opcode::kMinimum, S32({2}, {-3, 4}), S32({2}, {2, -9})) == S32({2}, {-3, -9}));
  // Bitwise: 12 & 10 = 0b1100 & 0b1010 = 0b1000 = 8; 12 | 10 = 0b1110 = 14; -1 & 6 = 6.
  CHECK(RunBinary(Opcode::kAnd, S32({2}, {12, -1}), S32({2}, {10, 6})) == S32({2}, {8, 6}));
  CHECK(RunBinary(Opcode::kOr, S32({2}, {12, 0}), S32({2}, {10, 0})) == S32({2}, {14, 0}));
}

TEST_CASE("interpreter: pred and/or") {
  // Truth tables over (0,0), (0,1), (1,0), (1,1).
  const Literal a = Pred({4}, {0, 0, 1, 1});
  const Literal b = Pred({4}, {0, 1, 0, 1});
  CHECK(RunBinary(Opcode::kAnd, a, b) == Pred({4}, {0, 0, 0, 1}));
  CHECK(RunBinary(Opcode::kOr, a, b) == Pred({4}, {0, 1, 1, 1}));
}

TEST_CASE("interpreter: compare in every direction") {
  // a = [1,2,3] against b = [2,2,2].
  const Literal a = F32({3}, {1, 2, 3});
  const Literal b = F32({3}, {2, 2, 2});
  auto cmp = [&](Comparison c, const Literal& x, const Literal& y) {
    InterpFixture f;
    auto* px = f.Param(0, x.shape.dtype, x.shape.dims);
    auto* py = f.Param(1, y.shape.dtype, y.shape.dims);
    f.b.Compare(px, py, c);
    return f.Run({x, y});
  };
  CHECK(cmp(Comparison::kEq, a, b) == Pred({3}, {0, 1, 0}));
  CHECK(cmp(Comparison::kNe, a, b) == Pred({3}, {1, 0, 1}));
  CHECK(cmp(Comparison::kLt, a, b) == Pred({3}, {1, 0, 0}));
  CHECK(cmp(Comparison::kLe, a, b) == Pred({3}, {1, 1, 0}));
  CHECK(cmp(Comparison::kGt, a, b) == Pred({3}, {0, 0, 1}));
  CHECK(cmp(Comparison::kGe, a, b) == Pred({3}, {0, 1, 1}));
  // NaN is unordered: only NE holds.
  const Literal n = F32({1}, {kNan});
  CHECK(cmp(Comparison::kEq, n, n) == Pred({1}, {0}));
  CHECK(cmp(Comparison::kNe, n, n) == Pred({1}, {1}));
  CHECK(cmp(Comparison::kLe, n, n) == Pred({1}, {0}));
  // s32 and pred compare as numbers: -1 < 0, pred 1 > 0.
  CHECK(cmp(Comparison::kLt, S32({2}, {-1, 5}), S32({2}, {0, 5})) == Pred({2}, {1, 0}));
  CHECK(cmp(Comparison::kGt, Pred({2}, {1, 0}), Pred({2}, {0, 0})) == Pred({2}, {1, 0}));
}

TEST_CASE("interpreter: select") {
  // pred [1,0,1] picks [1,_,3] from on_true and [_,20,_] from on_false.
  InterpFixture f;
  auto* p = f.Param(0, DType::kPred, {3});
  auto* t = f.Param(1, DType::kS32, {3});
  auto* e = f.Param(2, DType::kS32, {3});
  f.b.Select(p, t, e);
  CHECK(f.Run({Pred({3}, {1, 0, 1}), S32({3}, {1, 2, 3}), S32({3}, {10, 20, 30})}) ==
        S32({3}, {1, 20, 3}));
}

}  // namespace
}  // namespace podsim::ir
