// Elementwise ops: unary, binary (compare included) and select. Float ops are evaluated over
// Eigen array maps in double, then rounded to the result dtype; s32 ops use exact 32-bit integer
// arithmetic (see ir/interpreter_internal.h).

#include <cmath>
#include <cstdint>
#include <limits>

#include <Eigen/Core>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

namespace {

using ConstArray = Eigen::Map<const Eigen::ArrayXd>;
using Array = Eigen::Map<Eigen::ArrayXd>;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

double Nan() { return std::numeric_limits<double>::quiet_NaN(); }

int64_t I(double v) { return static_cast<int64_t>(v); }

double FloatUnary(Opcode op, double x) {
  switch (op) {
    case Opcode::kNegate: return -x;
    case Opcode::kExp: return std::exp(x);
    case Opcode::kLog: return std::log(x);
    case Opcode::kSqrt: return std::sqrt(x);
    case Opcode::kRsqrt: return 1.0 / std::sqrt(x);
    case Opcode::kTanh: return std::tanh(x);
    case Opcode::kAbs: return std::fabs(x);
    case Opcode::kSine: return std::sin(x);
    case Opcode::kCosine: return std::cos(x);
    case Opcode::kLogistic: return 1.0 / (1.0 + std::exp(-x));
    case Opcode::kFloor: return std::floor(x);
    case Opcode::kCeil: return std::ceil(x);
    case Opcode::kIsFinite: return std::isfinite(x) ? 1.0 : 0.0;
    default: return Nan();
  }
}

double IntUnary(Opcode op, double x) {
  switch (op) {
    case Opcode::kNegate: return WrapS32(-I(x));
    case Opcode::kAbs: return WrapS32(x < 0 ? -I(x) : I(x));  // abs(INT32_MIN) = INT32_MIN
    case Opcode::kNot: return static_cast<double>(~static_cast<int32_t>(I(x)));
    default: return Nan();
  }
}

double FloatBinary(Opcode op, double a, double b) {
  switch (op) {
    case Opcode::kAdd: return a + b;
    case Opcode::kSubtract: return a - b;
    case Opcode::kMultiply: return a * b;
    case Opcode::kDivide: return a / b;
    case Opcode::kMaximum: return (std::isnan(a) || std::isnan(b)) ? Nan() : (a > b ? a : b);
    case Opcode::kMinimum: return (std::isnan(a) || std::isnan(b)) ? Nan() : (a < b ? a : b);
    case Opcode::kPower: return std::pow(a, b);
    default: return Nan();
  }
}

double IntBinary(Opcode op, double a, double b) {
  const int64_t x = I(a), y = I(b);
  switch (op) {
    case Opcode::kAdd: return WrapS32(x + y);
    case Opcode::kSubtract: return WrapS32(x - y);
    case Opcode::kMultiply: return WrapS32(x * y);  // |x*y| <= 2^62: no int64 overflow
    case Opcode::kDivide:
      if (y == 0) return -1;  // XLA's HloEvaluator: x / 0 = -1
      if (x == kInt32Min && y == -1) return static_cast<double>(kInt32Min);
      return static_cast<double>(x / y);  // truncates toward zero
    case Opcode::kMaximum: return x > y ? a : b;
    case Opcode::kMinimum: return x < y ? a : b;
    case Opcode::kAnd:
      return static_cast<double>(static_cast<int32_t>(x) & static_cast<int32_t>(y));
    case Opcode::kOr:
      return static_cast<double>(static_cast<int32_t>(x) | static_cast<int32_t>(y));
    case Opcode::kXor:
      return static_cast<double>(static_cast<int32_t>(x) ^ static_cast<int32_t>(y));
    // Shifts by 32 or more (or negative amounts, as unsigned) give 0, or the sign for an
    // arithmetic right shift, as in XLA.
    case Opcode::kShiftLeft:
      if (static_cast<uint64_t>(y) >= 32) return 0;
      return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(x) << y));
    case Opcode::kShiftRightLogical:
      if (static_cast<uint64_t>(y) >= 32) return 0;
      return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(x) >> y));
    case Opcode::kShiftRightArithmetic:
      return static_cast<double>(static_cast<int32_t>(x) >>
                                 (static_cast<uint64_t>(y) >= 32 ? 31 : y));
    default: return Nan();
  }
}

bool CompareValues(Comparison c, double a, double b) {
  switch (c) {
    case Comparison::kEq: return a == b;
    case Comparison::kNe: return a != b;  // true when either is NaN
    case Comparison::kLt: return a < b;
    case Comparison::kLe: return a <= b;
    case Comparison::kGt: return a > b;
    case Comparison::kGe: return a >= b;
  }
  return false;
}

void RequireSameCount(const Instruction& i, const Operands& ops) {
  for (const Literal* o : ops) {
    if (o->shape.is_tuple || o->NumElements() != i.shape.NumElements()) {
      Fail(i, "operand " + o->shape.ToString() + " does not match result " + i.shape.ToString());
    }
  }
}

}  // namespace

Literal LocalEvaluator::HandleElementwise(const Instruction& i) {
  const Operands& ops = ops_;
  RequireSameCount(i, ops);
  const Opcode op = i.opcode;
  const DType out_t = i.shape.dtype;
  const DType in_t = ops[0]->shape.dtype;
  Literal out = Literal::Zeros(i.shape);
  Array r(out.values.data(), static_cast<Eigen::Index>(out.values.size()));
  const ConstArray a(ops[0]->values.data(), static_cast<Eigen::Index>(ops[0]->values.size()));
  auto round_to = [](DType t) { return [t](double v) { return RoundToDType(v, t); }; };

  if (op == Opcode::kSelect) {
    const ConstArray t(ops[1]->values.data(), a.size());
    const ConstArray f(ops[2]->values.data(), a.size());
    r = (a != 0.0).select(t, f);
    return out;
  }
  if (op == Opcode::kConvert) {
    r = a.unaryExpr(round_to(out_t));
    return out;
  }
  if (op == Opcode::kNot && in_t == DType::kPred) {
    r = (a == 0.0).select(Eigen::ArrayXd::Ones(a.size()), Eigen::ArrayXd::Zero(a.size()));
    return out;
  }
  if (IsElementwiseUnary(op)) {
    if (in_t == DType::kS32) {
      r = a.unaryExpr([op](double x) { return IntUnary(op, x); });
    } else {
      r = a.unaryExpr([op](double x) { return FloatUnary(op, x); }).unaryExpr(round_to(out_t));
    }
    return out;
  }
  const ConstArray b(ops[1]->values.data(), a.size());
  if (op == Opcode::kCompare) {
    const Comparison c = i.comparison;
    r = a.binaryExpr(b, [c](double x, double y) { return CompareValues(c, x, y) ? 1.0 : 0.0; });
  } else if (in_t == DType::kPred) {
    if (op != Opcode::kAnd && op != Opcode::kOr && op != Opcode::kXor) {
      Fail(i, "does not apply to pred");
    }
    r = a.binaryExpr(b, [op](double x, double y) {
      const bool p = x != 0, q = y != 0;
      return (op == Opcode::kAnd ? (p && q) : op == Opcode::kOr ? (p || q) : (p != q)) ? 1.0
                                                                                       : 0.0;
    });
  } else if (in_t == DType::kS32) {
    r = a.binaryExpr(b, [op](double x, double y) { return IntBinary(op, x, y); });
  } else {
    if (op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor) {
      Fail(i, "does not apply to floats");
    }
    r = a.binaryExpr(b, [op](double x, double y) { return FloatBinary(op, x, y); })
            .unaryExpr(round_to(out_t));
  }
  return out;
}

}  // namespace podsim::ir::interp
