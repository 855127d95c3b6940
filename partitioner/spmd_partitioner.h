#pragma once
// SPMD lowering (GShard section 3.3): turns a module whose instructions all carry shardings
// (after PropagateShardings) into ONE program that every partition runs: per-shard shapes,
// partition-id arithmetic for offsets and masks, and the collectives that move data between
// shards. The program's size does not depend on the number of partitions.
//
//   PartitionOptions options;
//   options.num_partitions = 8;
//   PartitionResult r = PartitionSpmd(module, options);
//   ir::PrintModule(*r.module);
//   std::cout << ExplainProvenance(r);   // where did each collective come from?
//
// Conventions:
//  - An instruction without a sharding is treated as replicated; maximal as replicated (every
//    partition computes it); manual marks a manual region's per-partition code, copied as
//    written between auto-to-manual and manual-to-auto (handlers_manual.cc).
//  - A tiled sharding that lists fewer partitions than num_partitions (the count must divide
//    it) keeps its tiles there; the unlisted partitions hold replicas (TileLayout::FromSharding).
//  - Entry parameters take this partition's shard of the global argument, padded to the shard
//    shape (ceil division); the entry result is this partition's shard of the global result,
//    laid out as the root's sharding (each tuple element as the element's sharding). Padding
//    holds unspecified values.
//  - Handlers (one per op family, partitioner/handlers_*.cc) ask Reshard (reshard.h) for the
//    operand layouts they need; Reshard is the only place that emits collectives and logs why.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/sharding.h"
#include "partitioner/reshard.h"

namespace podsim::partitioner {

struct PartitionOptions {
  // Number of partitions (devices) the SPMD program runs on; >= 1.
  int64_t num_partitions = 1;
  // Costs used to choose between strategies (reshard plans, dot strategies, reduce strategies):
  // bytes each partition sends plus a fixed latency per collective.
  ReshardCostModel cost_model;
  // Dot whose operands are split on different non-contracting dims (Table 4, "A,C"): the
  // operand that has to be made whole is either all-gathered (one collective, but the whole
  // operand is resident on every partition) or streamed through a windowed-einsum loop of
  // CollectivePermutes (the same bytes per partition in D steps, only one shard resident).
  // The loop is used when the all-gathered operand would exceed this many bytes per partition.
  int64_t windowed_einsum_threshold_bytes = int64_t{256} << 20;
};

struct PartitionResult {
  // The SPMD program; verified.
  std::unique_ptr<ir::Module> module;
  // One entry per collective in `module`, in emission order.
  std::vector<CollectiveProvenance> provenance;
  int64_t num_partitions = 1;
  // Layout of each array of the entry parameters (by number) and of the root, over the
  // partitions: one per leaf, depth first (a tuple parameter's arrays in element order; the
  // elements of a tuple root, and of the tuples nested in it, in order).
  std::vector<ir::Sharding> parameter_shardings;
  std::vector<ir::Sharding> output_shardings;
};

// Lowers `module` (unchanged) for options.num_partitions partitions. Throws podsim::Error naming
// the instruction when a sharding is malformed for the partition count or an op is not
// supported.
PartitionResult PartitionSpmd(const ir::Module& module, const PartitionOptions& options);

// The pipeline for a global annotated module: PropagateShardings (which validates the
// annotations for the partition count first, and completes `module`'s shardings), then
// PartitionSpmd for `num_partitions` partitions.
PartitionResult PropagateAndPartition(ir::Module& module, int64_t num_partitions);

// One line per collective: "all-gather.3 <- %dot.2 operand 1: {devices=[1,4]0,1,2,3} ->
// {replicated}", or "no collectives" when there are none.
std::string ExplainProvenance(const PartitionResult& result);

}  // namespace podsim::partitioner
