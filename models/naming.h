#pragma once
// Names for the key tensors of the model builders, so that printed modules, partitioner
// explanations and tests can refer to them ("%gates", "%dispatched_expert_inputs").

#include <string>

#include "ir/instruction.h"
#include "ir/module.h"

namespace podsim::models {

// Renames `x` (already in a computation of a module) to `name`, or name.N when that is taken;
// returns x.
inline ir::Instruction* Named(ir::Instruction* x, const std::string& name) {
  x->name = x->parent->parent()->UniqueName(name);
  return x;
}

}  // namespace podsim::models
