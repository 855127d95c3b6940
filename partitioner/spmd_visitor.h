#pragma once
// Internal to the SPMD lowering: the visitor that walks the input entry computation in SSA
// order and asks one handler per op family for each instruction's partitioned form
// (handlers_elementwise.cc, handlers_reshape.cc, handlers_dot.cc, handlers_reduce.cc,
// handlers_dimwise.cc, handlers_window.cc, handlers_scan_gather.cc, handlers_loop.cc). A handler
// returns the value in whatever layout is natural for it; the visitor then reshards it to the
// instruction's declared sharding ("result" in the provenance).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/module.h"
#include "ir/visitor.h"
#include "partitioner/reshard.h"
#include "partitioner/spmd_builder.h"
#include "partitioner/spmd_partitioner.h"
#include "partitioner/tile_layout.h"

namespace podsim::partitioner {

// The partitioned form of one input instruction: an array, or a tuple of them.
struct PartitionedValue {
  PartitionedValue() = default;
  PartitionedValue(ShardedValue value) : array(std::move(value)) {}  // NOLINT: an array value

  ShardedValue array;                      // when elements is empty and tuple is null
  ir::Instruction* tuple = nullptr;        // the local tuple, when the value is a tuple
  std::vector<PartitionedValue> elements;  // its elements (each already a local value)
  // A manual region's value (handlers_manual.cc): per-partition data with no layout; `array`
  // (or `tuple`) holds it as written.
  bool manual = false;
  bool is_tuple() const { return tuple != nullptr; }
};

class SpmdVisitor : private ir::ConstVisitor<PartitionedValue> {
 public:
  // What every visitor of one partitioning shares: the entry's and its loop bodies'.
  struct Shared {
    // Input names already given to a local result (a second copy of a body gets "name.N").
    std::unordered_set<std::string> claimed;
    // Partitioned loop bodies by input body and carried layouts: loops sharing a body computation
    // with the same layouts share its partitioned form.
    std::map<std::string, ir::Computation*> bodies;
  };

  SpmdVisitor(const PartitionOptions& options, ir::Module* out,
              std::vector<CollectiveProvenance>* log, Shared* shared = nullptr);

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
  // The manual region's instructions go to HandleManual; every other op to its handler below
  // (ir::Accept). Collectives have none: the lowering's input has no collectives.
  PartitionedValue Visit(const ir::Instruction& i);
  PartitionedValue DefaultAction(const ir::Instruction& i) override;
  // Opaque kernels (custom-call): run whole on every partition, operands replicated.
  PartitionedValue HandleOpaque(const ir::Instruction& i) override;

  // handlers_elementwise.cc: leaves, elementwise, broadcast, transpose, tuple, get-tuple-element.
  PartitionedValue HandleParameter(const ir::Instruction& i) override;
  PartitionedValue HandleConstant(const ir::Instruction& i) override;
  PartitionedValue HandleIota(const ir::Instruction& i) override;
  PartitionedValue HandlePartitionId(const ir::Instruction& i) override;
  PartitionedValue HandleRandomUniform(const ir::Instruction& i) override;
  PartitionedValue HandleElementwise(const ir::Instruction& i) override;
  PartitionedValue HandleBroadcast(const ir::Instruction& i) override;
  PartitionedValue HandleTranspose(const ir::Instruction& i) override;
  // handlers_reshape.cc: reshape (tuple and get-tuple-element are in handlers_elementwise.cc)
  PartitionedValue HandleReshape(const ir::Instruction& i) override;
  PartitionedValue HandleTuple(const ir::Instruction& i) override;
  PartitionedValue HandleGetTupleElement(const ir::Instruction& i) override;
  // handlers_loop.cc
  PartitionedValue HandleLoop(const ir::Instruction& i) override;
  // handlers_manual.cc: auto-to-manual, the manual region's instructions (copied as written),
  // manual-to-auto.
  PartitionedValue HandleAutoToManual(const ir::Instruction& i) override;
  PartitionedValue HandleManual(const ir::Instruction& i);
  PartitionedValue HandleManualToAuto(const ir::Instruction& i) override;
  // A copy of computation `in` (and the loop bodies it calls) in the output module.
  ir::Computation* CopyComputation(const ir::Computation& in);
  // handlers_dot.cc
  PartitionedValue HandleDot(const ir::Instruction& i) override;
  // handlers_reduce.cc
  PartitionedValue HandleReduce(const ir::Instruction& i) override;
  // handlers_dimwise.cc: ops that work along some dims and pass the others through
  // (concatenate, reverse, dynamic-(update-)slice, sort; and the ops below when the dims they
  // work along are not split, or as their documented fallback). Worked-on dims are made whole.
  PartitionedValue HandleDimWise(const ir::Instruction& i);
  PartitionedValue HandleDynamicSlice(const ir::Instruction& i) override { return HandleDimWise(i); }
  PartitionedValue HandleDynamicUpdateSlice(const ir::Instruction& i) override {
    return HandleDimWise(i);
  }
  PartitionedValue HandleConcatenate(const ir::Instruction& i) override { return HandleDimWise(i); }
  PartitionedValue HandleReverse(const ir::Instruction& i) override { return HandleDimWise(i); }
  PartitionedValue HandleSort(const ir::Instruction& i) override { return HandleDimWise(i); }
  // handlers_window.cc: convolution, reduce-window, pad, slice; halo exchange along split
  // windowed dims (partitioner/halo.h).
  ShardedValue HandleWindowed(const ir::Instruction& i);
  // A convolution whose kernel is split along spatial dims (the weight gradient of a spatially
  // partitioned convolution): partial results + AllReduce; nullopt when it does not apply.
  std::optional<ShardedValue> HandleKernelSplitConvolution(const ir::Instruction& i);
  PartitionedValue HandleSlice(const ir::Instruction& i) override { return HandleWindowed(i); }
  PartitionedValue HandlePad(const ir::Instruction& i) override { return HandleWindowed(i); }
  PartitionedValue HandleConvolution(const ir::Instruction& i) override {
    return HandleWindowed(i);
  }
  PartitionedValue HandleReduceWindow(const ir::Instruction& i) override {
    return HandleWindowed(i);
  }
  // handlers_scan_gather.cc: cumsum, argmax, top-k and gather along a split dim.
  PartitionedValue HandleCumsum(const ir::Instruction& i) override;
  PartitionedValue HandleArgmax(const ir::Instruction& i) override;
  PartitionedValue HandleTopK(const ir::Instruction& i) override;
  PartitionedValue HandleGather(const ir::Instruction& i) override;
  // `per_tile` (x's tile shape without dim d: one value per tile along split dim d of x)
  // all-gathered along d: the [.., T, ..] values of every tile in this partition's row.
  ShardedValue GatherPerTile(const ir::Instruction& user, ir::Instruction* per_tile,
                             const ShardedValue& x, int64_t d, const std::string& what);

  // Operand k of `user` laid out as `target` (resharding it, logged as "operand k").
  ShardedValue OperandAs(const ir::Instruction& user, int64_t k, const TileLayout& target,
                         const std::string& note = "");
  // The current value of operand k (must be an array).
  const ShardedValue& Operand(const ir::Instruction& user, int64_t k) const;
  ShardedValue Reshard(const ShardedValue& v, const TileLayout& to, const ReshardReason& why);
  // A fresh local instruction with `orig`'s opcode and attributes but `operands` and `shape`.
  ir::Instruction* CloneLocal(const ir::Instruction& orig, std::vector<ir::Instruction*> operands,
                              const ir::Shape& shape);

  // A tuple value whose arrays (elements of `local`, of every nesting) are replicated.
  PartitionedValue ReplicatedTuple(ir::Instruction* local);

  // The name for the local result of input instruction `name`: the name itself the first time
  // (PartitionSpmd reserved it), a fresh "name.N" after.
  std::string ClaimName(const std::string& name);

  SpmdBuilder& sb() { return *sb_; }
  ir::Builder& b() { return sb_->b(); }
  int64_t num_partitions() const { return options_.num_partitions; }

  const PartitionOptions& options_;
  ir::Module* out_;
  Shared own_shared_;
  Shared* shared_;
  std::vector<CollectiveProvenance>* log_;
  Resharder resharder_;
  std::unique_ptr<SpmdBuilder> sb_;
  std::unordered_map<const ir::Instruction*, PartitionedValue> values_;
  mutable std::unordered_map<const ir::Instruction*, TileLayout> declared_;  // Declared() cache
};

}  // namespace podsim::partitioner
