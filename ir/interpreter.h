#pragma once
// The reference interpreter: evaluates a module on concrete values (Eigen inside; bf16 emulated
// by rounding every bf16 result to bf16). It is the oracle for equivalence checks.

#include <cstdint>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace podsim::ir {

// Evaluates the entry computation as partition `partition_id` of `num_partitions` (collectives
// then need InterpretSpmd: here they throw unless num_partitions == 1, where they are the
// identity for the lone partition). `args` match the entry parameters by number.
Literal Interpret(const Module& module, const std::vector<Literal>& args,
                  int64_t partition_id = 0, int64_t num_partitions = 1);

// Lockstep multi-partition mode: runs num_partitions copies of the program, copy p with
// partition-id p and arguments args[p], exchanging values at each collective with exact
// semantics. Returns each partition's result.
std::vector<Literal> InterpretSpmd(const Module& module,
                                   const std::vector<std::vector<Literal>>& args,
                                   int64_t num_partitions);

// Deterministic arguments for the entry parameters: floats uniform in [-1, 1) from `seed`
// (rounded to the parameter dtype), s32 in [0, 8), pred alternating by hash; a parameter with
// an argument_range draws floats uniformly from it, s32 from its integers.
std::vector<Literal> RandomArguments(const Module& module, uint64_t seed);

}  // namespace podsim::ir
