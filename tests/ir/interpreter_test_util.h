#pragma once
// Helpers for the interpreter tests: literal shorthands, printing for doctest, and a one-entry
// module fixture that verifies before it runs.

#include <cstdint>
#include <ostream>
#include <vector>

#include <doctest/doctest.h>

#include "base/format.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"

namespace podsim::ir {

// "f32[2,2]{1, 2, 3, 4}" or "(f32[2]{1, 2}, s32[]{0})", for doctest failure messages.
inline std::ostream& operator<<(std::ostream& os, const Literal& l) {
  if (l.shape.is_tuple) {
    os << "(";
    for (size_t k = 0; k < l.elements.size(); ++k) os << (k ? ", " : "") << l.elements[k];
    return os << ")";
  }
  os << l.shape.ToString() << "{";
  for (size_t k = 0; k < l.values.size(); ++k) os << (k ? ", " : "") << FormatShortest(l.values[k]);
  return os << "}";
}

namespace testing {

inline Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal(Shape(DType::kF32, std::move(dims)), std::move(v));
}
inline Literal BF16(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal(Shape(DType::kBF16, std::move(dims)), std::move(v));
}
inline Literal S32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal(Shape(DType::kS32, std::move(dims)), std::move(v));
}
inline Literal Pred(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal(Shape(DType::kPred, std::move(dims)), std::move(v));
}

// A module whose entry computation "main" is built through `b`.
struct InterpFixture {
  Module module{"test"};
  Builder b{module.AddComputation("main", /*is_entry=*/true)};

  Instruction* Param(int64_t number, DType t, std::vector<int64_t> dims) {
    return b.Parameter(number, Shape(t, std::move(dims)), "p" + std::to_string(number));
  }
  Instruction* Const(Literal l) { return b.Constant(std::move(l)); }
  Instruction* S32Scalar(int64_t v) { return b.ConstantScalar(DType::kS32, static_cast<double>(v)); }

  // Verifies the module, then interprets it as partition `id` of `n`.
  Literal Run(const std::vector<Literal>& args = {}, int64_t id = 0, int64_t n = 1) {
    Verify(module);
    return Interpret(module, args, id, n);
  }
  // Verifies the module, then runs it on every partition in lockstep.
  std::vector<Literal> RunSpmd(const std::vector<std::vector<Literal>>& args, int64_t n) {
    Verify(module);
    return InterpretSpmd(module, args, n);
  }
};

}  // namespace testing
}  // namespace podsim::ir
