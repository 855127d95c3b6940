#pragma once
// SpmdBuilder: an ir::Builder for one computation of the SPMD program plus the partition-id
// arithmetic the lowering needs (per-partition offsets, padding, masks). It emits no
// collectives (only reshard.cc does). Whatever D is, each helper emits a fixed number of
// instructions, and for compact layouts (tile_layout.h) a fixed number of bytes too: a tile
// coordinate is computed from partition-id with divide / multiply / subtract (one digit:
// (id / stride) mod size). Layouts in the tables form fall back to one s32[D] constant table
// indexed by partition-id (constant, dynamic-slice, reshape), cached by content.

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "partitioner/tile_layout.h"

namespace podsim::partitioner {

class SpmdBuilder {
 public:
  SpmdBuilder(ir::Computation* computation, int64_t num_partitions)
      : b_(computation), num_partitions_(num_partitions) {}
  SpmdBuilder(const SpmdBuilder&) = delete;
  SpmdBuilder& operator=(const SpmdBuilder&) = delete;

  ir::Builder& b() { return b_; }
  int64_t num_partitions() const { return num_partitions_; }

  ir::Instruction* PartitionId();
  // A scalar constant of `dtype` (cached).
  ir::Instruction* Scalar(ir::DType dtype, double value);
  ir::Instruction* S32(int64_t value) {
    return Scalar(ir::DType::kS32, static_cast<double>(value));
  }
  // table[partition-id] as an s32[] (a constant when all entries are equal).
  ir::Instruction* PerPartition(const std::vector<int64_t>& table);
  // This partition's tile coordinate along dim d of `layout` (or its partial index, d ==
  // TileLayout::kPartialAxis), as an s32[] (cached).
  ir::Instruction* TileCoord(const TileLayout& layout, int64_t d);
  // The value of partition-id's digits `modes` (major first; ir::ModesValue), as an s32[].
  ir::Instruction* DigitsValue(const std::vector<ir::StridedMode>& modes);
  // This partition's tile start in dim d under `layout`.
  ir::Instruction* ShardStart(const ir::Shape& global, const TileLayout& layout, int64_t d);
  // `x` extended at the high end of each dim by high[d] elements (zeros); x if all are 0.
  ir::Instruction* PadHigh(ir::Instruction* x, const std::vector<int64_t>& high);
  // The leading extents[d] elements of each dim; x if nothing is cut.
  ir::Instruction* SliceLeading(ir::Instruction* x, const std::vector<int64_t>& extents);
  // A broadcast of scalar `value` to `shape`.
  ir::Instruction* Filled(const ir::Shape& shape, double value);
  // Elements of local shard `x` (of a `global`-shaped tensor laid out as `layout`) that lie past
  // the global extent in any of `dims` are replaced by `identity`; x when none of those dims is
  // padded. This is the iota + offset < extent mask of the GShard paper.
  ir::Instruction* MaskPadding(ir::Instruction* x, const ir::Shape& global,
                               const TileLayout& layout, const std::vector<int64_t>& dims,
                               double identity);
  // True when dim d of `global` split as in `layout` has padding on some partition.
  static bool IsPadded(const ir::Shape& global, const TileLayout& layout, int64_t d);

 private:
  ir::Builder b_;
  int64_t num_partitions_;
  ir::Instruction* partition_id_ = nullptr;
  std::map<std::pair<int, double>, ir::Instruction*> scalars_;
  std::map<std::vector<int64_t>, ir::Instruction*> tables_;
  // DigitsValue and compact ShardStart results, keyed by (size, stride)... [, extent].
  std::map<std::vector<int64_t>, ir::Instruction*> digits_, starts_;
};

}  // namespace podsim::partitioner
