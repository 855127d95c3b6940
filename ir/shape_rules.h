#pragma once
// Internal to ir/: the shape rules (ir/shape_inference.h) as a visitor, one handler per op,
// split by family: shape_rules_elementwise.cc (leaves and elementwise), shape_rules_data.cc
// (data movement), shape_rules_contraction.cc (contractions, reductions and scans),
// shape_rules_collective.cc (collectives, control, manual-region boundaries).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/instruction.h"
#include "ir/visitor.h"

namespace podsim::ir::internal {

// Checks on one instruction whose failures name it: "%x (dot): contracting dim sizes differ".
class Checker {
 public:
  explicit Checker(const Instruction& i) : i_(i) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error("%" + i_.name + " (" + std::string(OpcodeName(i_.opcode)) + "): " + what);
  }
  void Require(bool ok, const std::string& what) const {
    if (!ok) Fail(what);
  }
  void Operands(size_t n) const {
    if (i_.operands.size() != n) {
      Fail("expects " + std::to_string(n) + " operand(s), got " +
           std::to_string(i_.operands.size()));
    }
  }
  const Shape& Op(size_t k) const {
    const Shape& s = i_.operands[k]->shape;
    if (s.is_tuple && i_.opcode != Opcode::kGetTupleElement && i_.opcode != Opcode::kTuple &&
        i_.opcode != Opcode::kLoop) {
      Fail("operand " + std::to_string(k) + " (%" + i_.operands[k]->name + ") is a tuple");
    }
    return s;
  }
  void Dim(int64_t d, int64_t rank, const std::string& what) const {
    if (d < 0 || d >= rank) {
      Fail(what + " " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    }
  }
  void Distinct(const std::vector<int64_t>& dims, const std::string& what) const {
    std::set<int64_t> s(dims.begin(), dims.end());
    if (s.size() != dims.size()) Fail(what + " " + DimsToString(dims) + " repeats a dimension");
  }
  // a * b and a + b of sizes the input gives; an overflow fails naming `what`.
  int64_t Mul(int64_t a, int64_t b, const char* what) const {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) Overflow(what);
    return r;
  }
  int64_t Add(int64_t a, int64_t b, const char* what) const {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) Overflow(what);
    return r;
  }
  [[noreturn]] void Overflow(const char* what) const {
    Fail(std::string(what) + " overflows int64");
  }
  void ScalarInteger(size_t k) const {
    const Shape& s = Op(k);
    if (s.rank() != 0 || !IsInteger(s.dtype)) {
      Fail("operand " + std::to_string(k) + " must be an integer scalar (s32[], u32[], ...), got " +
           s.ToString());
    }
  }

 private:
  const Instruction& i_;
};

// Output extent of a windowed dimension (HLO semantics), or -1 if the window does not fit.
int64_t WindowedExtent(const Checker& c, int64_t in, const WindowDim& w);
// Size, stride and dilations of every window dim are >= 1.
void CheckWindow(const Checker& c, const std::vector<WindowDim>& window);
// The replica groups (a list or an iota) are well formed: equal sizes, no partition twice.
void CheckReplicaGroups(const Checker& c, const Instruction& i);
// Group size the collective's dims must divide; 0 when groups are empty (all partitions: the
// count is only known at run time).
int64_t GroupSize(const Instruction& i);

// Returns the shape an instruction must have; throws the Checker's error otherwise.
class ShapeRules : public ConstVisitor<Shape> {
 public:
  explicit ShapeRules(const Instruction& i) : c_(i) {}

  Shape DefaultAction(const Instruction& i) override;
  Shape HandleElementwiseUnary(const Instruction& i) override;
  Shape HandleElementwiseBinary(const Instruction& i) override;
  Shape HandleParameter(const Instruction& i) override;
  Shape HandleConstant(const Instruction& i) override;
  Shape HandleIota(const Instruction& i) override;
  Shape HandlePartitionId(const Instruction& i) override;
  Shape HandleRandomUniform(const Instruction& i) override;
  Shape HandleSelect(const Instruction& i) override;
  Shape HandleBroadcast(const Instruction& i) override;
  Shape HandleReshape(const Instruction& i) override;
  Shape HandleTranspose(const Instruction& i) override;
  Shape HandleSlice(const Instruction& i) override;
  Shape HandleDynamicSlice(const Instruction& i) override;
  Shape HandleDynamicUpdateSlice(const Instruction& i) override;
  Shape HandlePad(const Instruction& i) override;
  Shape HandleConcatenate(const Instruction& i) override;
  Shape HandleReverse(const Instruction& i) override;
  Shape HandleGather(const Instruction& i) override;
  Shape HandleDot(const Instruction& i) override;
  Shape HandleConvolution(const Instruction& i) override;
  Shape HandleReduce(const Instruction& i) override;
  Shape HandleArgmax(const Instruction& i) override;
  Shape HandleReduceWindow(const Instruction& i) override;
  Shape CumsumOrSort(const Instruction& i);
  Shape HandleCumsum(const Instruction& i) override { return CumsumOrSort(i); }
  Shape HandleSort(const Instruction& i) override { return CumsumOrSort(i); }
  Shape HandleTopK(const Instruction& i) override;
  Shape HandleAllReduce(const Instruction& i) override;
  Shape HandleAllGather(const Instruction& i) override;
  Shape HandleReduceScatter(const Instruction& i) override;
  Shape HandleAllToAll(const Instruction& i) override;
  Shape HandleCollectivePermute(const Instruction& i) override;
  Shape HandleLoop(const Instruction& i) override;
  Shape HandleTuple(const Instruction& i) override;
  Shape HandleManualBoundary(const Instruction& i) override;
  Shape HandleCustomCall(const Instruction& i) override;
  Shape HandleGetTupleElement(const Instruction& i) override;

 private:
  Checker c_;
};

}  // namespace podsim::ir::internal
