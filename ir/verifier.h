#pragma once
// Checks a module is well formed; throws podsim::Error naming the computation and instruction.

#include "ir/module.h"

namespace podsim::ir {

// Checks: an entry exists; names are unique; every operand is defined earlier in the same
// computation; parameter numbers are 0..n-1 without gaps or repeats; every shape has
// non-negative dims and equals the shape rule's result (ir/shape_inference.h); loop bodies are
// computations of this module and not the entry, and no computation calls itself; tuples only
// where allowed; shardings are well formed for the shape (tile rank, device count, no repeats);
// every shape's element count and bytes fit int64, and so do the bytes of all values summed.
void Verify(const Module& module);

// For a module run as one SPMD program on `num_partitions` partitions: every manual region's
// tiling (auto-to-manual, manual-to-auto) spans all of them, as XLA requires; a tiling naming
// 1 device for 4 tiles, or 4 devices on 8 partitions, is an error naming the instruction.
void VerifyManualTilings(const Module& module, int64_t num_partitions);

}  // namespace podsim::ir
