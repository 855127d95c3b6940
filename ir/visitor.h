#pragma once
// The IR visitor: per-op behaviour of one concern (shape rules, cost, interpretation, fusion,
// memory aliasing, SPMD lowering, ...) lives in one ConstVisitor subclass, never in a switch.
//
// Every opcode has a HandleX (X from ir/opcode_list.h) that defaults to its family's handler;
// the family handlers default to DefaultAction, which a visitor must define: it says what an op
// the visitor does not handle means (an error naming the op, a neutral value, ...). A new
// opcode thus reaches every visitor through its family, and a visitor that must treat it
// differently overrides its HandleX.
//
//   struct CountDots : ir::ConstVisitor<int> {
//     int DefaultAction(const Instruction&) override { return 0; }
//     int HandleContraction(const Instruction&) override { return 1; }
//   };
//   int n = ir::Accept(instruction, counter);

#include "ir/instruction.h"
#include "ir/opcode.h"

namespace podsim::ir {

template <typename R>
class ConstVisitor {
 public:
  virtual ~ConstVisitor() = default;

  // What an op no other handler claims means to this visitor.
  virtual R DefaultAction(const Instruction& i) = 0;

  // Families (ir/opcode_list.h). The three elementwise families default to HandleElementwise.
  virtual R HandleLeaf(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleElementwise(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleElementwiseUnary(const Instruction& i) { return HandleElementwise(i); }
  virtual R HandleElementwiseBinary(const Instruction& i) { return HandleElementwise(i); }
  virtual R HandleElementwiseTernary(const Instruction& i) { return HandleElementwise(i); }
  virtual R HandleDataMovement(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleContraction(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleReduction(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleCollective(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleControl(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleManualBoundary(const Instruction& i) { return DefaultAction(i); }
  virtual R HandleOpaque(const Instruction& i) { return DefaultAction(i); }

  // One handler per opcode, defaulting to its family's.
#define PODSIM_VISITOR_HANDLER(e, name, handler, family) \
  virtual R Handle##handler(const Instruction& i) { return Handle##family(i); }
  PODSIM_OPCODES(PODSIM_VISITOR_HANDLER)
#undef PODSIM_VISITOR_HANDLER
};

// Calls the handler of i.opcode: the one switch over Opcode.
template <typename R>
R Accept(const Instruction& i, ConstVisitor<R>& visitor) {
  switch (i.opcode) {
#define PODSIM_VISITOR_CASE(e, name, handler, family) \
  case Opcode::e:                                     \
    return visitor.Handle##handler(i);
    PODSIM_OPCODES(PODSIM_VISITOR_CASE)
#undef PODSIM_VISITOR_CASE
  }
  return visitor.DefaultAction(i);  // not reached for a valid opcode
}

}  // namespace podsim::ir
