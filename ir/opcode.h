#pragma once
// The closed set of IR operations, and the small enums their attributes use.

#include <cstdint>
#include <string_view>

namespace podsim::ir {

enum class Opcode : uint8_t {
  // Leaves.
  kParameter, kConstant, kIota, kPartitionId, kRandomUniform,
  // Elementwise unary.
  kNegate, kExp, kLog, kSqrt, kRsqrt, kTanh, kAbs, kConvert,
  // Elementwise binary.
  kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum, kPower, kCompare, kAnd, kOr,
  // Elementwise ternary.
  kSelect,
  // Data movement.
  kBroadcast, kReshape, kTranspose, kSlice, kDynamicSlice, kDynamicUpdateSlice, kPad,
  kConcatenate, kReverse, kGather,
  // Contractions and reductions.
  kDot, kConvolution, kReduce, kArgmax, kReduceWindow, kCumsum, kSort, kTopK,
  // Collectives.
  kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute,
  // Control and tuples.
  kLoop, kTuple, kGetTupleElement,
  // Manual partitioning (GShard 3.2): the boundaries of a region of per-partition code.
  kAutoToManual, kManualToAuto,
};
inline constexpr int kNumOpcodes = static_cast<int>(Opcode::kManualToAuto) + 1;

// Text name, as in HLO: "add", "dynamic-slice", "all-to-all", ...
std::string_view OpcodeName(Opcode op);
// Inverse of OpcodeName; returns false if `name` is not an opcode.
bool ParseOpcode(std::string_view name, Opcode* op);

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
