#pragma once
// Cost analysis: per instruction flops (2 per multiply-add), transcendentals, bytes read and
// written, network bytes, and the unit that runs it. Loops count their body trip_count times.

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "ir/module.h"

namespace podsim::ir {

enum class Unit : uint8_t {
  kNone,     // bookkeeping: parameter, constant, tuple, get-tuple-element, partition-id
  kMatrix,   // dot, convolution
  kVector,   // elementwise, reductions, sort, cumsum, random
  kMemory,   // pure data movement: broadcast, reshape, transpose, slices, pad, concat, gather
  kNetwork,  // collectives
};
std::string_view UnitName(Unit u);  // "none", "matrix", "vector", "memory", "network"

struct Cost {
  double flops = 0;
  double transcendentals = 0;
  double bytes_read = 0;      // operand bytes read from memory
  double bytes_written = 0;   // result bytes written
  double network_bytes = 0;   // bytes a partition sends (collectives), algorithm-independent
  Unit unit = Unit::kNone;

  Cost& operator+=(const Cost& o);
};

// Cost of one execution of `instr` (a loop: its body's cost times trip_count).
Cost InstructionCost(const Instruction& instr, int64_t num_partitions = 1);

struct ModuleCost {
  Cost total;
  std::unordered_map<const Instruction*, Cost> per_instruction;  // entry and bodies
  Cost per_unit[5];  // indexed by Unit
};
// num_partitions sizes collectives whose replica groups are empty (all partitions).
ModuleCost AnalyzeCost(const Module& module, int64_t num_partitions = 1);

}  // namespace podsim::ir
