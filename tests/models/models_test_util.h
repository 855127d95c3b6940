#pragma once
// Helpers for the model builder tests: find instructions by name, and evaluate any of them with
// the reference interpreter (a copy of the module whose root is a tuple of those instructions).

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/verifier.h"

namespace podsim::models::testing {

// The entry instruction named `name`; fails the test when there is none.
inline ir::Instruction* Find(const ir::Module& m, const std::string& name) {
  for (const auto& i : m.entry()->instructions()) {
    if (i->name == name) return i.get();
  }
  FAIL("no instruction %" << name << " in module " << m.name());
  return nullptr;
}

// Entry instructions with opcode `op`.
inline std::vector<const ir::Instruction*> WithOpcode(const ir::Module& m, ir::Opcode op) {
  std::vector<const ir::Instruction*> out;
  for (const auto& i : m.entry()->instructions()) {
    if (i->opcode == op) out.push_back(i.get());
  }
  return out;
}

// Values of the instructions `names` of `m` on `args`, in that order.
inline std::vector<ir::Literal> Evaluate(const ir::Module& m, const std::vector<std::string>& names,
                                         const std::vector<ir::Literal>& args) {
  std::unique_ptr<ir::Module> copy = m.Clone();
  std::vector<ir::Instruction*> picked;
  for (const std::string& name : names) picked.push_back(Find(*copy, name));
  ir::Builder b(copy->entry());
  copy->entry()->set_root(b.Tuple(picked));
  ir::Verify(*copy);
  return ir::Interpret(*copy, args).elements;
}

}  // namespace podsim::models::testing
