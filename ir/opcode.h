#pragma once
// The closed set of IR operations (ir/opcode_list.h), their families, and the small enums their
// attributes use.

#include <cstdint>
#include <string_view>

#include "ir/opcode_list.h"

namespace podsim::ir {

#define PODSIM_OPCODE_ENUMERATOR(e, name, handler, family) e,
enum class Opcode : uint8_t { PODSIM_OPCODES(PODSIM_OPCODE_ENUMERATOR) };
#undef PODSIM_OPCODE_ENUMERATOR
#define PODSIM_OPCODE_COUNT(e, name, handler, family) +1
inline constexpr int kNumOpcodes = 0 PODSIM_OPCODES(PODSIM_OPCODE_COUNT);
#undef PODSIM_OPCODE_COUNT

// Text name, as in HLO: "add", "dynamic-slice", "all-to-all", ...
std::string_view OpcodeName(Opcode op);
// Inverse of OpcodeName; returns false if `name` is not an opcode.
bool ParseOpcode(std::string_view name, Opcode* op);

// The family of an opcode (the last column of ir/opcode_list.h).
enum class OpFamily : uint8_t {
  kLeaf, kElementwiseUnary, kElementwiseBinary, kElementwiseTernary, kDataMovement,
  kContraction, kReduction, kCollective, kControl, kManualBoundary, kOpaque,
};
OpFamily FamilyOf(Opcode op);

bool IsElementwiseUnary(Opcode op);
bool IsElementwiseBinary(Opcode op);
bool IsElementwise(Opcode op);  // unary, binary or select
bool IsCollective(Opcode op);

// The reduction a reduce, all-reduce, reduce-scatter or reduce-window applies.
enum class ReduceKind : uint8_t { kAdd, kMax, kMin, kAnd, kOr };
std::string_view ReduceKindName(ReduceKind k);  // "add", "max", "min", "and", "or"
bool ParseReduceKind(std::string_view name, ReduceKind* k);
// The identity element: 0 for add, -inf for max, +inf for min, 1 for and, 0 for or.
double ReduceIdentity(ReduceKind k);
double ApplyReduce(ReduceKind k, double a, double b);

enum class Comparison : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
std::string_view ComparisonName(Comparison c);  // "EQ", "NE", "LT", "LE", "GT", "GE"
bool ParseComparison(std::string_view name, Comparison* c);

}  // namespace podsim::ir
