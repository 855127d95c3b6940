#pragma once
// Sharding propagation (GShard section 3.3, XLA ShardingPropagation): from the few annotated
// instructions, infer a sharding for every other one, so that the SPMD lowering can partition
// each op with as little communication as possible. docs/partitioner.md, "Propagation", has the
// full rules and the priority order.
//
// Iterative data flow to a fixed point. Each round is a forward sweep in program order (an
// instruction takes what its operands imply) then a backward sweep in reverse order (it takes
// what its users need, and for dot/convolution what the other operand implies). An instruction
// changes only to a strictly more specific sharding (more tiles), so rounds terminate.
// Annotated instructions (a sharding before the pass) are never changed.

#include <cstdint>

#include "ir/module.h"

namespace podsim::partitioner {

struct PropagationOptions {
  // Also propagate from users to operands (and between dot/convolution operands). Off: forward
  // only, as a debugging aid.
  bool backward = true;
  // Combine compatible partial shardings into a finer one: a dot whose lhs is split on M over
  // one mesh axis and rhs on N over the other gets an output tiled on both.
  bool merge_compatible = true;
  // Keep tiles on dims whose extent or index mapping changes (sliced, padded, concatenated,
  // windowed spatial dims), leaving halo exchange to the lowering. Off: such dims replicate.
  bool spatial_partitioning = true;
  // Run ValidateShardings first.
  bool validate = true;
  // Bound on rounds; reaching it is an internal error (monotone updates converge in a few).
  int64_t max_rounds = 1000;
};

// Gives every instruction of every computation a sharding; returns whether any changed.
// Array-shaped instructions get {replicated} when nothing says otherwise. Tuple-shaped ones
// (tuple, loop, top-k, tuple parameters) get a {replicated} placeholder: their element
// shardings are TupleElementSharding's. Throws podsim::Error on bad annotations
// (ValidateShardings) or if no fixed point is reached.
bool PropagateShardings(ir::Module& module, int64_t num_devices,
                        const PropagationOptions& options = {});

// The sharding of element `index` of a tuple-shaped instruction, read from the IR after
// propagation: a tuple's operand; a loop's carried value (body parameter index+1, which
// propagation unifies with the loop operand, the body root's element and the loop's users);
// top-k's values/indices (its operand's sharding with the last dim's tiles replicated); a
// get-tuple-element of a tuple, recursively. {replicated} when none of these applies (e.g. a
// tuple-shaped parameter).
ir::Sharding TupleElementSharding(const ir::Instruction& tuple_valued, int64_t index);

}  // namespace podsim::partitioner
