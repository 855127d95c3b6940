// SPMD handlers for leaves (parameter, constant, iota, partition-id, random-uniform),
// elementwise ops, broadcast, transpose and tuples (reshape: handlers_reshape.cc).

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "base/error.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::DType;
using ir::Instruction;
using ir::Shape;

PartitionedValue SpmdVisitor::HandleParameter(const Instruction& i) {
  // A tuple parameter has no sharding of its own: its arrays arrive whole, and the
  // get-tuple-elements reading them reshard (slice locally) to their own shardings.
  if (i.shape.is_tuple) return ReplicatedTuple(b().Parameter(i.parameter_number, i.shape, i.name));
  TileLayout layout = Declared(i);
  Instruction* p = b().Parameter(i.parameter_number, layout.ShardShape(i.shape), i.name);
  return ShardedValue{p, i.shape, layout};
}

PartitionedValue SpmdVisitor::HandleConstant(const Instruction& i) {
  // The whole constant on every partition; the visitor's reshard slices it locally.
  Instruction* c = b().Constant(i.literal);
  return ShardedValue{c, i.shape, TileLayout::Replicated(i.shape.rank(), num_partitions())};
}

PartitionedValue SpmdVisitor::HandleIota(const Instruction& i) {
  TileLayout layout = Declared(i);
  const int64_t d = i.dimensions[0];
  const Shape local_shape = layout.ShardShape(i.shape);
  if (layout.tiles(d) == 1) return ShardedValue{CloneLocal(i, {}, local_shape), i.shape, layout};
  // Global index = local index + this partition's start, computed in s32 (exact) and converted.
  Instruction* index = b().Iota(Shape(DType::kS32, local_shape.dims), d);
  Instruction* start = b().BroadcastScalar(sb().ShardStart(i.shape, layout, d), local_shape.dims);
  Instruction* global = b().Add(index, start);
  if (i.shape.dtype != DType::kS32) global = b().Convert(global, i.shape.dtype);
  return ShardedValue{global, i.shape, layout};
}

PartitionedValue SpmdVisitor::HandlePartitionId(const Instruction& i) {
  // The input program is written for one device: its partition-id is 0.
  return ShardedValue{b().ConstantScalar(DType::kS32, 0), i.shape,
                      TileLayout::Replicated(0, num_partitions())};
}

PartitionedValue SpmdVisitor::HandleRandomUniform(const Instruction& i) {
  // Each partition draws the elements of its own tile: offsets place the tile in the global
  // tensor, so the shards together equal the unpartitioned draw.
  TileLayout layout = Declared(i);
  const int64_t r = i.shape.rank();
  std::vector<Instruction*> offsets;
  bool any = !i.operands.empty();
  for (int64_t d = 0; d < r; ++d) any = any || layout.tiles(d) > 1;
  if (any) {
    const TileLayout scalar = TileLayout::Replicated(0, num_partitions());
    for (int64_t d = 0; d < r; ++d) {
      Instruction* start = sb().ShardStart(i.shape, layout, d);
      if (!i.operands.empty()) {
        Instruction* given = OperandAs(i, d, scalar).local;
        start = layout.tiles(d) > 1 ? b().Add(given, start) : given;
      }
      offsets.push_back(start);
    }
  }
  return ShardedValue{CloneLocal(i, std::move(offsets), layout.ShardShape(i.shape)), i.shape,
                      layout};
}

PartitionedValue SpmdVisitor::HandleElementwise(const Instruction& i) {
  // Compute in the layout that moves the least data: the declared one or an operand's.
  const TileLayout declared = Declared(i);
  std::vector<TileLayout> candidates = {declared};
  for (size_t k = 0; k < i.operands.size(); ++k) candidates.push_back(Operand(i, k).layout);
  const ReshardCostModel& cm = options_.cost_model;
  std::optional<TileLayout> best;
  double best_cost = std::numeric_limits<double>::infinity();
  Resharder costs(cm, nullptr);
  for (const TileLayout& c : candidates) {
    double cost = costs.Cost(i.shape, c, declared);
    for (size_t k = 0; k < i.operands.size(); ++k) {
      const ShardedValue& v = Operand(i, k);
      cost += costs.Cost(v.global, v.layout, c);
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  std::vector<Instruction*> locals;
  for (size_t k = 0; k < i.operands.size(); ++k) locals.push_back(OperandAs(i, k, *best).local);
  return ShardedValue{CloneLocal(i, std::move(locals), best->ShardShape(i.shape)), i.shape, *best};
}

PartitionedValue SpmdVisitor::HandleBroadcast(const Instruction& i) {
  TileLayout layout = Declared(i);
  TileLayout operand_layout = layout.Projected(i.dimensions);
  Instruction* x = OperandAs(i, 0, operand_layout).local;
  return ShardedValue{CloneLocal(i, {x}, layout.ShardShape(i.shape)), i.shape, layout};
}

PartitionedValue SpmdVisitor::HandleTranspose(const Instruction& i) {
  const std::vector<int64_t>& perm = i.dimensions;  // output dim k = operand dim perm[k]
  const int64_t r = i.shape.rank();
  const TileLayout declared = Declared(i);
  const ShardedValue& operand = Operand(i, 0);
  // Candidates: transpose in the declared layout, or in the operand's (then reshard after).
  std::vector<int64_t> to_operand(r);  // operand dim perm[k] takes output dim k
  for (int64_t k = 0; k < r; ++k) to_operand[perm[k]] = k;
  TileLayout from_operand = operand.layout.Projected(perm);
  Resharder costs(options_.cost_model, nullptr);
  const double via_declared =
      costs.Cost(operand.global, operand.layout, declared.Projected(to_operand));
  const double via_operand = costs.Cost(i.shape, from_operand, declared);
  const TileLayout& layout = via_operand < via_declared ? from_operand : declared;
  Instruction* x = OperandAs(i, 0, layout.Projected(to_operand)).local;
  return ShardedValue{CloneLocal(i, {x}, layout.ShardShape(i.shape)), i.shape, layout};
}

PartitionedValue SpmdVisitor::HandleTuple(const Instruction& i) {
  PartitionedValue v;
  std::vector<Instruction*> locals;
  for (const Instruction* o : i.operands) {
    const PartitionedValue& e = ValueOf(o);
    v.elements.push_back(e);
    locals.push_back(e.is_tuple() ? e.tuple : e.array.local);
  }
  v.tuple = b().Tuple(std::move(locals));
  return v;
}

PartitionedValue SpmdVisitor::HandleGetTupleElement(const Instruction& i) {
  const PartitionedValue& t = ValueOf(i.operands[0]);
  if (!t.is_tuple() || i.tuple_index < 0 ||
      i.tuple_index >= static_cast<int64_t>(t.elements.size())) {
    throw Error("%" + i.name + ": operand is not a tuple with element " +
                std::to_string(i.tuple_index));
  }
  return t.elements[i.tuple_index];
}

}  // namespace podsim::partitioner
