#pragma once
// Private to the interpreter (ir/interpreter*.cc): the per-family evaluation handlers that the
// driver (interpreter.cc) dispatches to, and the index helpers they share.
//
// Numerics, for every handler:
//  - f32 and bf16 values are computed in double and rounded to the result dtype once per op
//    (RoundToDType). A bf16 op thus equals the f32 op followed by a rounding to bf16, as when
//    XLA upcasts bf16 arithmetic to f32.
//  - Reductions over many elements (dot, convolution, reduce, reduce-window, cumsum, all-reduce,
//    reduce-scatter) accumulate in double in a fixed order and round once at the end: a bf16
//    dot accumulates wider than f32, then rounds to bf16.
//  - s32 arithmetic is exact 32-bit two's complement, wrapping on overflow as XLA does
//    (add, subtract, multiply, negate, abs, and integer sums). Division truncates toward zero;
//    x / 0 = -1 and INT32_MIN / -1 = INT32_MIN, as XLA's HloEvaluator. Conversions from floats
//    to s32 truncate toward zero and saturate; NaN converts to 0.
//  - pred is 0 or 1; and/or are logical on pred and bitwise on s32.
//  - maximum/minimum and max/min reductions propagate NaN. Sort and top-k order NaN above every
//    number; argmax returns the first NaN if there is one.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/instruction.h"
#include "ir/visitor.h"
#include "ir/literal.h"

namespace podsim::ir::interp {

// The operand values of one instruction on one partition, in operand order.
using Operands = std::vector<const Literal*>;

// Throws podsim::Error "%name (opcode): what".
[[noreturn]] void Fail(const Instruction& instr, const std::string& what);

// Wraps an integer to int32 two's complement (the s32 result of integer arithmetic).
double WrapS32(int64_t v);

// Reduces values of one dtype with one ReduceKind in the order they are added: floats in
// double (rounded once by Result), s32 sums exactly in int64 (wrapped by Result).
class Accumulator {
 public:
  Accumulator(ReduceKind kind, DType dtype)
      : kind_(kind), dtype_(dtype), int_sum_(kind == ReduceKind::kAdd && dtype == DType::kS32),
        value_(ReduceIdentity(kind)) {}
  void Add(double v) {
    if (int_sum_) {
      sum_ += static_cast<int64_t>(v);
    } else {
      value_ = ApplyReduce(kind_, value_, v);
    }
  }
  // The reduction so far in the dtype (the identity, rounded, if nothing was added).
  double Result() const { return int_sum_ ? WrapS32(sum_) : RoundToDType(value_, dtype_); }

 private:
  ReduceKind kind_;
  DType dtype_;
  bool int_sum_;
  double value_;
  int64_t sum_ = 0;
};

// Row-major strides of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);

// Advances a row-major multi-index over `dims`; returns false after the last index.
bool NextIndex(std::vector<int64_t>& index, const std::vector<int64_t>& dims);

// Calls fn(index, linear) for every index of `dims` in row-major order.
void ForEachIndex(const std::vector<int64_t>& dims,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& fn);

// `x` with its dims permuted: output dim i is x's dim perm[i].
Literal Transposed(const Literal& x, const std::vector<int64_t>& perm);

// Evaluates one instruction that needs nothing beyond its operands, on one partition. Its
// handlers are defined beside the ops they evaluate: leaves (interpreter_leaves.cc),
// elementwise unary, binary and select (interpreter_elementwise.cc), data movement
// (interpreter_data.cc), dot and convolution (interpreter_contract.cc), reductions and orderings
// (interpreter_reduce.cc), tuples (interpreter.cc). Parameters, loops, collectives and the
// manual-region boundaries need the lockstep runner (interpreter.cc): DefaultAction fails.
class LocalEvaluator : public ConstVisitor<Literal> {
 public:
  LocalEvaluator(const Operands& ops, int64_t partition_id)
      : ops_(ops), partition_id_(partition_id) {}

  Literal DefaultAction(const Instruction& i) override;
  Literal HandleConstant(const Instruction& i) override;
  Literal HandleIota(const Instruction& i) override;
  Literal HandlePartitionId(const Instruction& i) override;
  Literal HandleRandomUniform(const Instruction& i) override;
  Literal HandleElementwise(const Instruction& i) override;
  Literal HandleBroadcast(const Instruction& i) override;
  Literal HandleReshape(const Instruction& i) override;
  Literal HandleTranspose(const Instruction& i) override;
  Literal HandleSlice(const Instruction& i) override;
  Literal HandleDynamicSlice(const Instruction& i) override;
  Literal HandleDynamicUpdateSlice(const Instruction& i) override;
  Literal HandlePad(const Instruction& i) override;
  Literal HandleConcatenate(const Instruction& i) override;
  Literal HandleReverse(const Instruction& i) override;
  Literal HandleGather(const Instruction& i) override;
  Literal HandleDot(const Instruction& i) override;
  Literal HandleConvolution(const Instruction& i) override;
  Literal HandleReduce(const Instruction& i) override;
  Literal HandleArgmax(const Instruction& i) override;
  Literal HandleReduceWindow(const Instruction& i) override;
  Literal HandleCumsum(const Instruction& i) override;
  Literal HandleSort(const Instruction& i) override;
  Literal HandleTopK(const Instruction& i) override;
  Literal HandleTuple(const Instruction& i) override;
  Literal HandleGetTupleElement(const Instruction& i) override;

 private:
  const Literal& Op(size_t k) const { return *ops_[k]; }

  const Operands& ops_;
  int64_t partition_id_;
};

// Collectives (interpreter_collectives.cc). `inputs[p]` is the operand on partition p of
// num_partitions = inputs.size(); returns each partition's result.
std::vector<Literal> EvalCollective(const Instruction& instr, const Operands& inputs);

// Manual regions (interpreter_manual.cc). auto-to-manual: partition `partition`'s shard of x
// (of num_partitions, which must be the tiling's device count). manual-to-auto: `inputs[p]` is
// partition p's shard; returns the reassembled tensor.
Literal EvalAutoToManual(const Instruction& instr, const Literal& x, int64_t partition,
                         int64_t num_partitions);
Literal EvalManualToAuto(const Instruction& instr, const Operands& inputs);

// Custom-calls with a called computation (an imported program's region; interpreter_regions.cc).
// `apply` runs the computation on scalar arguments and returns its scalar or tuple of scalars.
using Apply = std::function<Literal(std::vector<Literal>)>;

// "xla:reduce": operands n inputs of one shape and n scalar inits; region_dims removed from the
// output (an array, or a tuple of n). Each output element folds the inputs' elements over the
// reduced dims in row-major order: acc = apply(acc..., x...), from the inits.
Literal EvalGeneralReduce(const Instruction& instr, const Operands& ops, const Apply& apply);

// "xla:sort": n arrays of one shape; each 1-D slice along region_dims[0] is ordered stably by
// less(a, b) = the region applied to (x0[a], x0[b], x1[a], x1[b], ...), and every array
// permuted alike; the result is an array, or a tuple of n. A merge sort: any comparator gives
// some permutation, never undefined behaviour.
Literal EvalGeneralSort(const Instruction& instr, const Operands& ops, const Apply& compare);

// "xla:scatter" (the importer's form of XLA's scatter): operands n tables [rows, row...], an
// integer index array I and n updates [I..., row...]. For each index element u in row-major
// order whose value j is a row (0 <= j < rows), every element r of row j becomes
// combine(tables...[j, r], updates...[u, r]); other values (the importer's -1 for a window XLA
// skips) change nothing. The result is the tables (an array, or a tuple of n).
Literal EvalGeneralScatter(const Instruction& instr, const Operands& ops, const Apply& combine);

// "xla:reduce-window": n inputs of one shape and n scalar inits, region_window one dim per
// input dim; each output element folds, from the inits, the window's taps that land on input
// elements in row-major tap order (taps on padding or dilation holes are skipped, as XLA's
// evaluator skips them).
Literal EvalGeneralReduceWindow(const Instruction& instr, const Operands& ops, const Apply& apply);

// "xla:window-select" (the first half of an imported select-and-scatter): for each window of
// its one operand (region_window), the row-major position in the operand of the selected tap:
// the first tap on the operand, then each later tap c replaces the choice s unless
// select(x[s], x[c]) is true (XLA's rule); -1 for a window on padding only.
Literal EvalWindowSelect(const Instruction& instr, const Operands& ops, const Apply& select);

// A uniform double in [0, 1) that depends only on (seed, index): a SplitMix64-style hash.
double UniformHash(uint64_t seed, uint64_t index);

}  // namespace podsim::ir::interp
