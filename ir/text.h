#pragma once
// The IR text format, modelled on HLO text; docs/ir.md is the reference (grammar, every op's
// attributes). Printing then parsing gives back an identical module (same names, shapes,
// attributes, literals bit-exact, scopes and shardings), and the printed text is canonical.
//
//   HloModule toy
//
//   %body {                            computations in the module's order
//     ...
//   }
//
//   ENTRY %main {
//     %x = f32[8,16] parameter(0), sharding={devices=[2,1]0,1}, scope="moe/gate"
//     %w = f32[16,4] constant({0.5, 1, ...})
//     ROOT %d = f32[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
//   }

#include <memory>
#include <string>
#include <string_view>

#include "ir/module.h"

namespace podsim::ir {

std::string PrintModule(const Module& module);
// One line, without indentation or trailing newline; starts with "ROOT " when `instr` is its
// computation's root.
std::string PrintInstruction(const Instruction& instr);

// Parses a module; errors are podsim::Error "FILE:LINE:COL: message". The result is verified.
std::unique_ptr<Module> ParseModule(std::string_view text, const std::string& filename = "<text>");

}  // namespace podsim::ir
