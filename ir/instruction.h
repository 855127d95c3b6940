#pragma once
// One SSA instruction. Attributes are plain fields; which ones an opcode reads is listed below
// and enforced by the verifier. Semantics follow XLA HLO unless stated.
//
// parameter            parameter_number; optional argument_range [low, high): the values the
//                      module is written for (an optimizer's second-moment statistics are
//                      non-negative); ir::RandomArguments draws from it. No effect on semantics.
// constant             literal.
// iota                 dimensions={d}: value = index along d.
// partition-id         s32[]: the partition running the program.
// random-uniform       seed, rng_low, rng_high, rng_global_dims; operands: optional scalar s32
//                      offsets, one per dim. Element at local index i has global index
//                      offset+i in rng_global_dims; its value depends only on (seed, global
//                      linear index), so a shard draws the same numbers as the whole tensor.
// unary / binary       elementwise, same shapes (no implicit broadcast); compare: comparison,
//                      result pred; convert: result dtype from shape.
// select               (pred, on_true, on_false).
// broadcast            dimensions[i] = output dim that operand dim i maps to (increasing).
// reshape              same element count, row-major.
// transpose            dimensions = permutation: output dim i is operand dim dimensions[i].
// slice                slice_starts, slice_limits, slice_strides.
// dynamic-slice        operands (x, start_0, ..., start_{r-1}) scalar s32; slice_sizes. Starts
//                      clamp to [0, dim - size].
// dynamic-update-slice operands (x, update, start_0, ...); starts clamp like dynamic-slice.
// pad                  operands (x, scalar pad value); padding per dim (low, high, interior);
//                      low/high may be negative (cropping).
// concatenate          dimensions={d}; two or more operands.
// reverse              dimensions = dims to reverse.
// gather               operands (x, indices s32); dimensions={axis}: output dims =
//                      x.dims[:axis] ++ indices.dims ++ x.dims[axis+1:]; indices clamp.
// dot                  dot dims; output = batch dims, lhs free dims, rhs free dims (in order).
// convolution          conv dims, window (one WindowDim per spatial dim), feature_group_count.
// reduce               reduce_kind over dimensions (removed from the output).
// argmax               dimensions={d}; s32 index of the first maximum along d (d removed).
// reduce-window        reduce_kind; window (one per operand dim).
// cumsum               dimensions={d}; exclusive: the sum of preceding elements only.
// sort                 dimensions={d}; descending; stable.
// top-k                k along the last dim; result tuple (values, s32 indices), stable.
// all-reduce           reduce_kind, replica_groups (empty = one group of all partitions).
//                      Every collective's groups are either the explicit replica_groups or,
//                      when iota_replica_groups is set (replica_groups then empty), the compact
//                      form of ir/iota.h, printed replica_groups=[2,4]<=[8]; read them through
//                      ReplicaGroupsOf / ReplicaGroupSizeOf below.
// all-gather           dimensions={d}, replica_groups: concat of members' inputs along d.
// reduce-scatter       dimensions={d}, reduce_kind, replica_groups: member i gets block i.
// all-to-all           split_dimension, concat_dimension, replica_groups.
// collective-permute   source_target_pairs; a partition that receives nothing gets zeros.
// loop                 trip_count, body; operands are the carried values. The body has
//                      parameter(0) = s32[] iteration number and parameters 1..n = carried
//                      values; its root is a tuple of the n new carried values. The loop's
//                      value is that tuple after trip_count iterations.
// tuple                any operands; get-tuple-element: tuple_index.
// auto-to-manual       tiling (a tiled sharding of the operand, over every partition): enters a
//                      manual region (GShard 3.2's escape hatch; XLA's custom-call
//                      SPMDFullToShardShape). Result = this partition's shard of the operand
//                      under `tiling`: shape ceil(dims / tiles), the part past the operand's
//                      extent zeros. Instructions that use a manual value are per-partition code
//                      (sharding {manual}): the partitioner leaves them as written.
// manual-to-auto       tiling; the result shape is the full shape: leaves a manual region (XLA's
//                      SPMDShardToFullShape). Each partition's operand is its shard under
//                      `tiling` (shape ceil(full / tiles)); the result is the tensor those
//                      shards tile (each element from the first partition in the tile
//                      assignment that holds it). Both need every partition (the interpreter's
//                      lockstep mode, InterpretSpmd) unless the tiling has one device.
// custom-call          custom_call_target, flops; any operands; the result shape as declared.
//                      An operation podsim does not model (an imported program's fused-attention
//                      kernel, ...): it reads its operands and writes its result once and does
//                      `flops` floating-point operations on the matrix unit; the interpreter
//                      and autodiff refuse it, the partitioner runs it whole on replicated
//                      operands. With a body (printed
//                      region=%comp, a computation over scalars) the importer's forms of XLA
//                      ops that call a computation (ir/interpreter_internal.h has each rule):
//                      "xla:reduce" (region_dims= reduced), "xla:sort" (along region_dims[0]),
//                      "xla:scatter" (tables, a row index array, updates),
//                      "xla:reduce-window" and "xla:window-select" (region_window= in
//                      `window`). The interpreter evaluates them; the partitioner runs them
//                      whole.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/iota.h"
#include "ir/literal.h"
#include "ir/opcode.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace podsim::ir {

class Computation;

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch;
  std::vector<int64_t> lhs_contracting, rhs_contracting;
  bool operator==(const DotDims&) const = default;
};

// One spatial (or, for reduce-window, any) dimension of a window.
struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t base_dilation = 1;    // lhs dilation: holes between input elements
  int64_t window_dilation = 1;  // rhs dilation: holes between window taps
  bool operator==(const WindowDim&) const = default;
};

// Which dimensions of input, kernel and output play which role (HLO dim_labels, e.g.
// "b01f_01io->b01f").
struct ConvDims {
  int64_t input_batch = 0;
  int64_t input_feature = 1;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0;
  int64_t kernel_output_feature = 1;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0;
  int64_t output_feature = 1;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDims&) const = default;
};

struct PadDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PadDim&) const = default;
};

struct Instruction {
  Opcode opcode = Opcode::kParameter;
  std::string name;  // unique in the module, printed with a leading '%'
  Shape shape;
  std::vector<Instruction*> operands;
  Computation* parent = nullptr;

  // Attributes (see the table above for which opcode reads which).
  int64_t parameter_number = 0;
  Literal literal;
  std::vector<int64_t> dimensions;
  std::vector<int64_t> slice_starts, slice_limits, slice_strides;
  std::vector<int64_t> slice_sizes;
  std::vector<PadDim> padding;
  DotDims dot;
  ConvDims conv;
  std::vector<WindowDim> window;
  int64_t feature_group_count = 1;
  ReduceKind reduce_kind = ReduceKind::kAdd;
  Comparison comparison = Comparison::kEq;
  bool exclusive = false;
  bool descending = false;
  int64_t k = 0;
  uint64_t seed = 0;
  double rng_low = 0.0;
  double rng_high = 1.0;
  std::vector<int64_t> rng_global_dims;
  std::vector<std::vector<int64_t>> replica_groups;
  std::optional<IotaReplicaGroupList> iota_replica_groups;  // instead of replica_groups
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  int64_t split_dimension = 0;
  int64_t concat_dimension = 0;
  int64_t trip_count = 0;
  Computation* body = nullptr;
  int64_t tuple_index = 0;
  std::optional<Sharding> tiling;  // auto-to-manual, manual-to-auto
  std::optional<std::pair<double, double>> argument_range;  // parameter
  std::string custom_call_target;  // custom-call
  double custom_call_flops = 0;    // custom-call

  // Name scope / category, e.g. "moe/dispatch"; used for time breakdowns.
  std::string scope;
  // Set by users (annotations) and by the partitioner; printed as sharding={...}.
  std::optional<Sharding> sharding;

  const Instruction* operand(size_t i) const { return operands[i]; }
  Instruction* operand(size_t i) { return operands[i]; }
};

// The replica groups of a collective as lists (materializes the iota form); empty = one group
// of all partitions.
inline std::vector<std::vector<int64_t>> ReplicaGroupsOf(const Instruction& i) {
  return i.iota_replica_groups ? i.iota_replica_groups->ToGroups() : i.replica_groups;
}
// Size of each replica group; 0 when there are none (all partitions, known at run time).
inline int64_t ReplicaGroupSizeOf(const Instruction& i) {
  if (i.iota_replica_groups) return i.iota_replica_groups->group_size;
  return i.replica_groups.empty() ? 0 : static_cast<int64_t>(i.replica_groups[0].size());
}
// Whether the collective names its groups (explicitly or in the iota form).
inline bool HasReplicaGroups(const Instruction& i) {
  return i.iota_replica_groups.has_value() || !i.replica_groups.empty();
}

}  // namespace podsim::ir
