#pragma once
// Shape rules: the shape an instruction must have given its operands and attributes.

#include "ir/instruction.h"

namespace podsim::ir {

// Returns the shape `instr` must have. Throws podsim::Error naming the instruction when the
// operands or attributes are invalid (wrong operand count, rank, dtype, out-of-range dims,
// non-divisible collective dims, ...). Parameter and constant return their own shape (a
// constant's literal must match it). Loop needs instr.body.
Shape InferShape(const Instruction& instr);

}  // namespace podsim::ir
