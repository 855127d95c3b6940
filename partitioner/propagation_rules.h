#pragma once
// Per-op sharding rules for propagation (internal to the partitioner): which dims of an operand
// and of the result share tiles, and the shardings that follow from that in each direction.
// Tuples, get-tuple-element and loops move whole values, not dims: propagation.cc handles them.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/instruction.h"
#include "ir/sharding.h"

namespace podsim::partitioner::internal {

using ir::Instruction;
using ir::Sharding;

// One operand dim and the result dim that holds the same index space (so the same tiles).
struct DimLink {
  int64_t operand_dim = 0;
  int64_t result_dim = 0;
  // The extent or the index mapping changes along the link (slice, pad, concatenate, window):
  // the tiles carry over only if spatial partitioning is on and both extents are >= the tiles.
  bool windowed = false;
};

// How operand k of an instruction relates to its result.
struct OperandLinks {
  // false: the operand's layout says nothing about the result's (start indices, pad values,
  // rng offsets, tuple plumbing). Such operands are scalars and get {replicated}.
  bool informative = true;
  // Reshape: tiles follow ReshapeSharding instead of links.
  bool reshape = false;
  std::vector<DimLink> links;  // dims not listed do not carry tiles
};

// The links of operand k of `instr` (one visitor over op families; see the .cc).
OperandLinks LinksOf(const Instruction& instr, int64_t k);

// Pairs (dim of operand k, dim of operand j) that must be cut alike for the op to run locally:
// a dot's batch and contracting dims, a convolution's input/kernel input features. Empty for
// ops whose operands relate only through the result.
std::vector<std::pair<int64_t, int64_t>> SiblingLinks(const Instruction& instr, int64_t k,
                                                      int64_t j);

struct RuleOptions {
  bool spatial_partitioning = true;  // see PropagationOptions
};

// Rank of the array the rules treat as `instr`'s result: top-k's values/indices, else its shape.
int64_t ResultRank(const Instruction& instr);

// The result sharding that operand k's sharding implies; nullopt when it implies nothing.
// `operand` must be replicated or tiled.
std::optional<Sharding> Forward(const Instruction& instr, int64_t k, const Sharding& operand,
                                const RuleOptions& options);
// The sharding operand k needs for `instr` to produce `result` (replicated or tiled) without
// moving that operand's data.
std::optional<Sharding> Backward(const Instruction& instr, int64_t k, const Sharding& result,
                                 const RuleOptions& options);
// The sharding operand k needs to line up with operand j's `sibling` (SiblingLinks), or
// nullopt when the op has no such links.
std::optional<Sharding> Sideways(const Instruction& instr, int64_t k, int64_t j,
                                 const Sharding& sibling);

}  // namespace podsim::partitioner::internal
