#include "partitioner/spmd_builder.h"

#include <cmath>

#include "ir/literal.h"

namespace podsim::partitioner {

using ir::DType;
using ir::Instruction;
using ir::Shape;

Instruction* SpmdBuilder::PartitionId() {
  if (partition_id_ == nullptr) partition_id_ = b_.PartitionId();
  return partition_id_;
}

Instruction* SpmdBuilder::Scalar(DType dtype, double value) {
  const double v = ir::RoundToDType(value, dtype);
  // -0.0 and 0.0 share a key in std::map<double>; keep them apart via the sign bit.
  const int key_type = static_cast<int>(dtype) * 2 + (std::signbit(v) ? 1 : 0);
  auto key = std::make_pair(key_type, v);
  auto it = scalars_.find(key);
  if (it != scalars_.end() && !std::isnan(v)) return it->second;
  Instruction* c = b_.ConstantScalar(dtype, v);
  if (!std::isnan(v)) scalars_[key] = c;
  return c;
}

Instruction* SpmdBuilder::PerPartition(const std::vector<int64_t>& table) {
  bool constant = true;
  for (int64_t v : table) constant = constant && v == table[0];
  if (constant) return S32(table.empty() ? 0 : table[0]);
  auto it = tables_.find(table);
  if (it != tables_.end()) return it->second;
  std::vector<double> values(table.begin(), table.end());
  Instruction* t = b_.Constant(
      ir::Literal(Shape(DType::kS32, {static_cast<int64_t>(table.size())}), std::move(values)));
  Instruction* one = b_.DynamicSlice(t, {PartitionId()}, {1});
  Instruction* scalar = b_.Reshape(one, {});
  tables_[table] = scalar;
  return scalar;
}

Instruction* SpmdBuilder::DigitsValue(const std::vector<ir::StridedMode>& modes_in) {
  const std::vector<ir::StridedMode> modes = ir::CanonicalModes(modes_in);
  if (modes.empty()) return S32(0);
  std::vector<int64_t> key;
  for (const ir::StridedMode& m : modes) {
    key.push_back(m.size);
    key.push_back(m.stride);
  }
  auto it = digits_.find(key);
  if (it != digits_.end()) return it->second;
  Instruction* value = nullptr;
  for (const ir::StridedMode& m : modes) {
    Instruction* digit = PartitionId();
    if (m.stride > 1) digit = b_.Div(digit, S32(m.stride));
    if (m.stride * m.size < num_partitions_) {  // mod size: x - (x / size) * size, x >= 0
      digit = b_.Sub(digit, b_.Mul(b_.Div(digit, S32(m.size)), S32(m.size)));
    }
    value = value ? b_.Add(b_.Mul(value, S32(m.size)), digit) : digit;
  }
  digits_[key] = value;
  return value;
}

Instruction* SpmdBuilder::TileCoord(const TileLayout& layout, int64_t d) {
  if (layout.compact()) return DigitsValue(layout.Modes(d));
  std::vector<int64_t> table(num_partitions_);
  for (int64_t p = 0; p < num_partitions_; ++p) {
    table[p] = d == TileLayout::kPartialAxis ? layout.PartialIndex(p) : layout.Coord(p, d);
  }
  return PerPartition(table);
}

Instruction* SpmdBuilder::ShardStart(const Shape& global, const TileLayout& layout, int64_t d) {
  if (layout.compact()) {
    const int64_t extent = ShardExtent(global.dims[d], layout.tiles(d));
    if (layout.tiles(d) == 1 || extent == 0) return S32(0);
    std::vector<int64_t> key = {extent};
    for (const ir::StridedMode& m : ir::CanonicalModes(layout.Modes(d))) {
      key.push_back(m.size);
      key.push_back(m.stride);
    }
    auto it = starts_.find(key);
    if (it != starts_.end()) return it->second;
    Instruction* coord = TileCoord(layout, d);
    Instruction* start = extent == 1 ? coord : b_.Mul(coord, S32(extent));
    starts_[key] = start;
    return start;
  }
  std::vector<int64_t> table(num_partitions_);
  for (int64_t p = 0; p < num_partitions_; ++p) table[p] = layout.ShardStart(global, p, d);
  return PerPartition(table);
}

Instruction* SpmdBuilder::PadHigh(Instruction* x, const std::vector<int64_t>& high) {
  bool any = false;
  std::vector<ir::PadDim> padding(x->shape.rank());
  for (int64_t d = 0; d < x->shape.rank(); ++d) {
    padding[d].high = high[d];
    any = any || high[d] != 0;
  }
  if (!any) return x;
  return b_.Pad(x, Scalar(x->shape.dtype, 0), std::move(padding));
}

Instruction* SpmdBuilder::SliceLeading(Instruction* x, const std::vector<int64_t>& extents) {
  if (extents == x->shape.dims) return x;
  return b_.Slice(x, std::vector<int64_t>(extents.size(), 0), extents);
}

Instruction* SpmdBuilder::Filled(const Shape& shape, double value) {
  return b_.BroadcastScalar(Scalar(shape.dtype, value), shape.dims);
}

bool SpmdBuilder::IsPadded(const Shape& global, const TileLayout& layout, int64_t d) {
  const int64_t t = layout.tiles(d);
  return ShardExtent(global.dims[d], t) * t != global.dims[d];
}

Instruction* SpmdBuilder::MaskPadding(Instruction* x, const Shape& global, const TileLayout& layout,
                                      const std::vector<int64_t>& dims, double identity) {
  Instruction* valid = nullptr;
  const Shape index_shape(DType::kS32, x->shape.dims);
  for (int64_t d : dims) {
    if (!IsPadded(global, layout, d)) continue;
    Instruction* iota = b_.Iota(index_shape, d);
    Instruction* start = b_.BroadcastScalar(ShardStart(global, layout, d), index_shape.dims);
    Instruction* index = b_.Add(iota, start);
    Instruction* limit = b_.BroadcastScalar(S32(global.dims[d]), index_shape.dims);
    Instruction* in = b_.Compare(index, limit, ir::Comparison::kLt);
    valid = valid ? b_.And(valid, in) : in;
  }
  if (valid == nullptr) return x;
  return b_.Select(valid, x, Filled(x->shape, identity));
}

}  // namespace podsim::partitioner
