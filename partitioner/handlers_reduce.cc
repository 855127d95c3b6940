// SPMD handler for reduce. Two strategies, the cheaper by ReshardCostModel (the first on ties):
//  A. reshard the operand so the reduced dims are whole and the kept dims split as the
//     declared output: the local reduce is the answer;
//  B. reduce the operand where it is: kept dims keep their split, split reduced dims leave a
//     partial result that Reshard AllReduces (or ReduceScatters) with the reduce's kind.
//     Reduced dims split unevenly are masked first with the reduction's identity (0 for add,
//     -inf for max, +inf for min, true for and, false for or).
// Table 4: reduce AB->A with A split is B with nothing to combine; AB->B with A split is B
// with one AllReduce.

#include <algorithm>

#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;

PartitionedValue SpmdVisitor::HandleReduce(const Instruction& i) {
  const ShardedValue& v = Operand(i, 0);
  const int64_t r = v.global.rank();
  const TileLayout declared = Declared(i);
  std::vector<int64_t> kept;              // operand dims kept, in output order
  std::vector<int64_t> to_output(r, -1);  // operand dim -> output dim
  for (int64_t d = 0; d < r; ++d) {
    if (std::find(i.dimensions.begin(), i.dimensions.end(), d) != i.dimensions.end()) continue;
    to_output[d] = static_cast<int64_t>(kept.size());
    kept.push_back(d);
  }
  const TileLayout need_a = declared.Projected(to_output);
  const TileLayout partial_b = v.layout.Projected(kept, i.dimensions, i.reduce_kind);
  Resharder costs(options_.cost_model, nullptr);
  const double cost_a = costs.Cost(v.global, v.layout, need_a);
  const double cost_b = costs.Cost(i.shape, partial_b, declared);
  if (cost_a <= cost_b) {
    Instruction* x = OperandAs(i, 0, need_a).local;
    return ShardedValue{CloneLocal(i, {x}, declared.ShardShape(i.shape)), i.shape, declared};
  }
  Instruction* x = sb().MaskPadding(v.local, v.global, v.layout, i.dimensions,
                                    ir::ReduceIdentity(i.reduce_kind));
  return ShardedValue{CloneLocal(i, {x}, partial_b.ShardShape(i.shape)), i.shape, partial_b};
}

}  // namespace podsim::partitioner
