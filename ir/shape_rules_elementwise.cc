// Shape rules of the leaves and the elementwise ops (ir/shape_rules.h).

#include <algorithm>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/shape_rules.h"

namespace podsim::ir::internal {

Shape ShapeRules::HandleElementwiseUnary(const Instruction& i) {
  const Checker& c = c_;
  const Opcode op = i.opcode;
  c.Operands(1);
  const Shape& a = c.Op(0);
  if (op == Opcode::kConvert) {
    c.Require(!i.shape.is_tuple, "convert result must be an array");
    return Shape(i.shape.dtype, a.dims);
  }
  if (op == Opcode::kNot) {
    c.Require(a.dtype == DType::kPred || IsInteger(a.dtype),
              "needs a pred or integer operand, got " + a.ToString());
    return a;
  }
  if (op == Opcode::kIsFinite) {
    c.Require(IsFloating(a.dtype), "needs a floating-point operand, got " + a.ToString());
    return Shape(DType::kPred, a.dims);
  }
  if (op != Opcode::kNegate && op != Opcode::kAbs) {
    c.Require(IsFloating(a.dtype), "needs a floating-point operand, got " + a.ToString());
  }
  c.Require(a.dtype != DType::kPred && a.dtype != DType::kToken,
            "does not apply to " + std::string(DTypeName(a.dtype)));
  return a;
}

Shape ShapeRules::HandleElementwiseBinary(const Instruction& i) {
  const Checker& c = c_;
  const Opcode op = i.opcode;
  c.Operands(2);
  const Shape& a = c.Op(0);
  const Shape& b = c.Op(1);
  c.Require(a == b, "operand shapes differ: " + a.ToString() + " vs " + b.ToString());
  if (op == Opcode::kCompare) return Shape(DType::kPred, a.dims);
  c.Require(a.dtype != DType::kToken, "does not apply to token");
  if (op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor) {
    c.Require(a.dtype == DType::kPred || IsInteger(a.dtype), "needs pred or integer operands");
  } else if (op == Opcode::kShiftLeft || op == Opcode::kShiftRightLogical ||
             op == Opcode::kShiftRightArithmetic) {
    c.Require(IsInteger(a.dtype), "needs integer operands");
  } else {
    c.Require(a.dtype != DType::kPred, "does not apply to pred");
  }
  if (op == Opcode::kPower) c.Require(IsFloating(a.dtype), "needs floating-point operands");
  return a;
}

Shape ShapeRules::HandleParameter(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(0);
  c.Require(i.parameter_number >= 0, "parameter number must be >= 0");
  return i.shape;
}

Shape ShapeRules::HandleConstant(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(0);
  c.Require(!i.shape.is_tuple, "constant must be an array");
  c.Require(i.literal.shape == i.shape, "literal shape " + i.literal.shape.ToString() +
                                             " differs from " + i.shape.ToString());
  c.Require(i.literal.NumElements() == i.shape.NumElements(),
            "literal has " + std::to_string(i.literal.NumElements()) + " values, shape needs " +
                std::to_string(i.shape.NumElements()));
  return i.shape;
}

Shape ShapeRules::HandleIota(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(0);
  c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
  c.Dim(i.dimensions[0], i.shape.rank(), "iota dimension");
  c.Require(i.shape.dtype != DType::kPred, "iota of pred");
  return i.shape;
}

Shape ShapeRules::HandlePartitionId(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(0);
  return Shape(DType::kS32, {});
}

Shape ShapeRules::HandleRandomUniform(const Instruction& i) {
  const Checker& c = c_;
  c.Require(i.shape.dtype == DType::kF32 || i.shape.dtype == DType::kBF16,
            "result must be f32 or bf16");
  c.Require(i.rng_low < i.rng_high, "low must be < high");
  const auto& g = i.rng_global_dims;
  c.Require(g.size() == i.shape.dims.size(), "global_dims rank differs from the shape's");
  c.Require(i.operands.empty() || i.operands.size() == g.size(),
            "needs no offsets or one scalar s32 offset per dimension");
  for (size_t k = 0; k < i.operands.size(); ++k) c.ScalarInteger(k);
  for (size_t d = 0; d < g.size(); ++d) {
    c.Require(i.shape.dims[d] <= g[d], "dimension " + std::to_string(d) +
                                           " larger than its global extent");
  }
  return i.shape;
}

Shape ShapeRules::HandleSelect(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(3);
  const Shape& p = c.Op(0);
  const Shape& a = c.Op(1);
  c.Require(p.dtype == DType::kPred, "predicate must be pred, got " + p.ToString());
  c.Require(p.dims == a.dims, "predicate dims differ from operand dims");
  c.Require(a == c.Op(2), "on_true and on_false shapes differ");
  return a;
}

}  // namespace podsim::ir::internal
