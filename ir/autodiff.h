#pragma once
// Reverse-mode automatic differentiation of a module, as JAX's grad does for a jaxpr: the
// forward instructions are kept, then every instruction that lies between the chosen parameters
// and the loss is visited in reverse SSA order and its vector-Jacobian product (one rule per op,
// ir/autodiff.cc) adds its output's adjoint into its operands' adjoints.
//
// What it returns: a new module with the same entry parameters whose root is
// tuple(loss, d loss / d wrt[0], d loss / d wrt[1], ...), each gradient of its parameter's shape
// and type. A gradient carries its primal's sharding annotation, so the SPMD partitioner gives
// the backward pass the collectives a real training step has.
//
// Conventions (those of JAX):
//  - maximum / minimum split the adjoint equally between tied operands, reduce max / min
//    between the tied elements (a central finite difference sees the same);
//  - ops whose output is an integer or a predicate (compare, argmax, iota, the indices of top-k,
//    partition-id) and random-uniform carry no gradient: a zero, not an error;
//  - a counted loop is differentiated once, not unrolled: the forward loop also stacks the
//    carried values each iteration starts from (not those the body passes through unchanged);
//    a backward loop runs the iterations in reverse, recomputes the body from the saved values
//    and applies the body's vector-Jacobian product (one forward recomputation of each
//    iteration, GShard's and Lingvo's per-layer rematerialisation of a repeated layer; LoopRemat
//    below saves more and recomputes less).
// An op with no rule (a collective, a manual region, sort, a convolution with
// feature_group_count > 1, a max / min window with negative padding) is an error that names the
// op and the instruction, never a silent zero.

#include <memory>
#include <string>
#include <vector>

#include "ir/module.h"

namespace podsim::ir {

// What a counted loop's forward saves for its backward loop (rematerialisation):
//   kIterationInputs  the carried values each iteration starts from; the backward loop
//                     recomputes the whole body from them ("per-layer": one extra forward pass)
//   kDots             also every dot and convolution output that depends on them; the backward
//                     loop recomputes only the rest (elementwise ops, softmax, reshapes), as
//                     JAX's checkpoint_dots policy ("selective")
//   kAll              every value of the body that depends on the carried values and that a
//                     gradient rule reads (exp its output, a product the other factor, a sum
//                     nothing: docs/training.md), a broadcast, reshape or widening convert
//                     saved as the value it views; the backward loop recomputes only those
//                     views ("none")
// Values that depend only on the iteration counter and passed-through values (a layer's slice
// of stacked weights) are never saved: saving them would copy the weights once per iteration.
enum class LoopRemat { kIterationInputs, kDots, kAll };
const char* LoopRematName(LoopRemat r);  // "per-layer", "selective", "none"
// Parses a LoopRematName; throws podsim::Error listing the names.
LoopRemat ParseLoopRemat(const std::string& name);

// Differentiates `loss` (an entry instruction of float scalar shape; "" = the entry's root) with
// respect to the entry parameters named in `wrt` (float arrays). Throws podsim::Error naming the
// parameter or instruction at fault.
std::unique_ptr<Module> Differentiate(const Module& module, const std::vector<std::string>& wrt,
                                      const std::string& loss = "",
                                      LoopRemat remat = LoopRemat::kIterationInputs);

}  // namespace podsim::ir
