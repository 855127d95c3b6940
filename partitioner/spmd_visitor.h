#pragma once
// Internal to the SPMD lowering: the visitor that walks the input entry computation in SSA
// order and asks one handler per op family for each instruction's partitioned form
// (handlers_elementwise.cc, handlers_dot.cc, handlers_reduce.cc, handlers_data.cc). A handler
// returns the value in whatever layout is natural for it; the visitor then reshards it to the
// instruction's declared sharding ("result" in the provenance).

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/module.h"
#include "partitioner/reshard.h"
#include "partitioner/spmd_builder.h"
#include "partitioner/spmd_partitioner.h"
#include "partitioner/tile_layout.h"

namespace podsim::partitioner {

// The partitioned form of one input instruction: an array, or a tuple of them.
struct PartitionedValue {
  ShardedValue array;                      // when elements is empty and tuple is null
  ir::Instruction* tuple = nullptr;        // the local tuple, when the value is a tuple
  std::vector<PartitionedValue> elements;  // its elements (each already a local value)
  bool is_tuple() const { return tuple != nullptr; }
};

class SpmdVisitor {
 public:
  SpmdVisitor(const PartitionOptions& options, ir::Module* out,
              std::vector<CollectiveProvenance>* log);

  // Partitions the entry computation `in` into `out` (an empty computation of the output
  // module) and sets its root.
  void Run(const ir::Computation& in, ir::Computation* out);
  // Partitions loop body `in` into `out`: its root becomes the tuple of the new carried values,
  // each laid out as `carried[k]` (the layout of body parameter k + 1).
  void RunBody(const ir::Computation& in, ir::Computation* out,
               const std::vector<TileLayout>& carried);
  const PartitionedValue& ValueOf(const ir::Instruction* orig) const;
  // The layout `orig`'s sharding asks for (replicated when it has none).
  TileLayout Declared(const ir::Instruction& orig) const;

 private:
  PartitionedValue Visit(const ir::Instruction& i);

  // handlers_elementwise.cc: leaves, elementwise, broadcast, transpose, reshape, tuples.
  ShardedValue HandleParameter(const ir::Instruction& i);
  ShardedValue HandleConstant(const ir::Instruction& i);
  ShardedValue HandleIota(const ir::Instruction& i);
  ShardedValue HandlePartitionId(const ir::Instruction& i);
  ShardedValue HandleRandomUniform(const ir::Instruction& i);
  ShardedValue HandleElementwise(const ir::Instruction& i);
  ShardedValue HandleBroadcast(const ir::Instruction& i);
  ShardedValue HandleTranspose(const ir::Instruction& i);
  ShardedValue HandleReshape(const ir::Instruction& i);
  PartitionedValue HandleTuple(const ir::Instruction& i);
  PartitionedValue HandleGetTupleElement(const ir::Instruction& i);
  // handlers_loop.cc
  PartitionedValue HandleLoop(const ir::Instruction& i);
  // handlers_dot.cc
  ShardedValue HandleDot(const ir::Instruction& i);
  // handlers_reduce.cc
  ShardedValue HandleReduce(const ir::Instruction& i);
  // handlers_data.cc: ops that work along some dims and pass the others through (slice, pad,
  // concatenate, reverse, dynamic-(update-)slice, gather, cumsum, sort, argmax, top-k,
  // convolution, reduce-window).
  PartitionedValue HandleDimWise(const ir::Instruction& i);

  // Operand k of `user` laid out as `target` (resharding it, logged as "operand k").
  ShardedValue OperandAs(const ir::Instruction& user, int64_t k, const TileLayout& target,
                         const std::string& note = "");
  // The current value of operand k (must be an array).
  const ShardedValue& Operand(const ir::Instruction& user, int64_t k) const;
  ShardedValue Reshard(const ShardedValue& v, const TileLayout& to, const ReshardReason& why);
  // A fresh local instruction with `orig`'s opcode and attributes but `operands` and `shape`.
  ir::Instruction* CloneLocal(const ir::Instruction& orig, std::vector<ir::Instruction*> operands,
                              const ir::Shape& shape);

  SpmdBuilder& sb() { return *sb_; }
  ir::Builder& b() { return sb_->b(); }
  int64_t num_partitions() const { return options_.num_partitions; }

  const PartitionOptions& options_;
  ir::Module* out_;
  std::vector<CollectiveProvenance>* log_;
  Resharder resharder_;
  std::unique_ptr<SpmdBuilder> sb_;
  std::unordered_map<const ir::Instruction*, PartitionedValue> values_;
  mutable std::unordered_map<const ir::Instruction*, TileLayout> declared_;  // Declared() cache
};

}  // namespace podsim::partitioner
