#pragma once
// Checks a module is well formed; throws podsim::Error naming the computation and instruction.

#include "ir/module.h"

namespace podsim::ir {

// Checks: an entry exists; names are unique; every operand is defined earlier in the same
// computation; parameter numbers are 0..n-1 without gaps or repeats; every shape has
// non-negative dims and equals the shape rule's result (ir/shape_inference.h); loop bodies are
// computations of this module and not the entry, and no computation calls itself; tuples only
// where allowed; shardings are well formed for the shape (tile rank, device count, no repeats).
void Verify(const Module& module);

}  // namespace podsim::ir
