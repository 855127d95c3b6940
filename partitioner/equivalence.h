#pragma once
// The equivalence harness: runs a module unpartitioned (ir::Interpret) and its SPMD form on D
// partitions in lockstep (ir::InterpretSpmd, each partition given its shard of every global
// argument, padded to the shard shape), and reports for each output the largest difference
// between any partition's shard (replicas included) and the matching part of the unpartitioned
// result. `podsim check` and the property tests use it.
//
// Tolerance, per output of dtype t:
//   s32, pred: 0. Integer arithmetic wraps and is associative, so partial sums recombine
//     exactly (outputs that depend on float comparisons, e.g. argmax of a partitioned dot, can
//     still differ on near-ties; the harness does not excuse that).
//   f32, bf16: factor * u(t) * D * R * (1 + M), where u is the unit roundoff (2^-24 for f32,
//     2^-8 for bf16), M the larger of max |expected| and the largest partial sum a split
//     reduction feeding the output can form (the reduction re-run over its operands' absolute
//     values: split sums of 1e7 that cancel to 1 round at 1e7's scale, not 1's), D the
//     partition count and R the number of reductions (dot, convolution,
//     reduce, reduce-window, cumsum) the output depends on. Partitioning changes rounding only
//     where a reduction is split: each of up to D partial results is rounded to t once more
//     before they are combined, which adds at most about D * u times the magnitude of the
//     partials per split reduction. Everything else (elementwise ops, data movement, iota,
//     random-uniform, an unsplit reduction) computes bit-identical values on every shard, so an
//     output with R = 0 must match exactly. R counts reductions as executed: a loop body's
//     (nested loops included) once per trip, as a carried value takes each trip's rounding. The default factor 8 leaves room for the growth of
//     the rounding differences through the elementwise ops after a reduction.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "ir/sharding.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::partitioner {

struct EquivalenceOptions {
  // Fill shard padding with poison (NaN for floats, -1234567 for s32, true for pred) instead of
  // zeros: padding that leaks into a result then shows up as an error.
  bool poison_padding = true;
  // Multiplier of the float tolerance (see above).
  double tolerance_factor = 8;
};

struct OutputComparison {
  int64_t index = 0;         // output array number (depth first through tuples, or 0)
  ir::Shape shape;           // global shape
  ir::Sharding sharding;     // how the SPMD program lays it out
  double max_abs_error = 0;  // NaN vs number and inf vs other values count as +inf
  double tolerance = 0;
  bool ok() const { return max_abs_error <= tolerance; }
};

struct EquivalenceReport {
  int64_t num_partitions = 1;
  std::vector<OutputComparison> outputs;
  bool ok() const;
  // One line per output: "output 0 f32[8,16] {devices=[4,1]0,1,2,3}: max error 1.2e-07 <= 3.8e-06
  // ok".
  std::string ToString() const;
};

// Partition `device`'s shard of `value` under `sharding` for `num_partitions` partitions, padded
// to the shard shape with `fill`.
ir::Literal ShardOf(const ir::Literal& value, const ir::Sharding& sharding, int64_t device,
                    int64_t num_partitions, double fill);
// The global value of shape `global` from every partition's shard (each element from the first
// partition holding it).
ir::Literal Reassemble(const std::vector<ir::Literal>& shards, const ir::Sharding& sharding,
                       const ir::Shape& global);

// Each partition's arguments for `spmd`: its shard of every global argument, padding filled as
// `options` says.
std::vector<std::vector<ir::Literal>> ShardArguments(const PartitionResult& spmd,
                                                     const std::vector<ir::Literal>& args,
                                                     const EquivalenceOptions& options = {});
// Compares per-partition `results` of `spmd` run on ShardArguments(spmd, args) (by any executor:
// the interpreter, the simulator's functional mode) against `global` run on `args`.
EquivalenceReport CompareOutputs(const ir::Module& global, const PartitionResult& spmd,
                                 const std::vector<ir::Literal>& args,
                                 const std::vector<ir::Literal>& results,
                                 const EquivalenceOptions& options = {});
// Compares `spmd` (PartitionSpmd of `global`) against `global` on `args` (global arguments). A
// module with a manual region is its own reference only on all partitions: it then runs in the
// interpreter's lockstep mode with the whole arguments on every partition.
EquivalenceReport CompareSpmd(const ir::Module& global, const PartitionResult& spmd,
                              const std::vector<ir::Literal>& args,
                              const EquivalenceOptions& options = {});
// Partitions `global` with `options` and compares on ir::RandomArguments(global, seed).
EquivalenceReport CheckEquivalence(const ir::Module& global, const PartitionOptions& options,
                                   uint64_t seed, const EquivalenceOptions& eq_options = {});

}  // namespace podsim::partitioner
