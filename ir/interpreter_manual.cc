// Manual regions: auto-to-manual hands each partition its shard of the operand under the
// tiling; manual-to-auto puts the partitions' shards back together (semantics in
// ir/instruction.h). Shards are ceil-division blocks; the part of a shard past the full extent
// is zeros on the way in and ignored on the way out.

#include <algorithm>
#include <string>
#include <vector>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

namespace {

// Start of `device`'s tile in each dim of `full` under `t` (empty when the device holds none).
std::vector<int64_t> TileStart(const Instruction& i, const Sharding& t, const Shape& full,
                               int64_t device) {
  const std::vector<int64_t> shard = t.ShardDims(full.dims);
  std::vector<int64_t> start(full.rank(), 0);
  if (t.kind != Sharding::Kind::kTiled) return start;
  const std::vector<int64_t> index = t.TileIndexOf(device);
  if (index.empty()) return {};
  for (int64_t d = 0; d < full.rank(); ++d) start[d] = index[d] * shard[d];
  return start;
}

// Copies the block of `from` at `from_start` into `to` at `to_start`, `extent` elements per dim
// (clipped to both shapes).
void CopyBlock(const Literal& from, const std::vector<int64_t>& from_start, Literal& to,
               const std::vector<int64_t>& to_start, const std::vector<int64_t>& extent) {
  std::vector<int64_t> dims(extent.size());
  for (size_t d = 0; d < extent.size(); ++d) {
    dims[d] = std::max<int64_t>(0, std::min({extent[d], from.shape.dims[d] - from_start[d],
                                             to.shape.dims[d] - to_start[d]}));
  }
  const std::vector<int64_t> fs = Strides(from.shape.dims), ts = Strides(to.shape.dims);
  ForEachIndex(dims, [&](const std::vector<int64_t>& idx, int64_t) {
    int64_t f = 0, t = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      f += (from_start[d] + idx[d]) * fs[d];
      t += (to_start[d] + idx[d]) * ts[d];
    }
    to.values[t] = from.values[f];
  });
}

void CheckDevices(const Instruction& i, const Sharding& t, int64_t num_partitions) {
  if (t.kind == Sharding::Kind::kTiled && t.NumDevices() != num_partitions) {
    Fail(i, "tiling " + t.ToString() + " spans " + std::to_string(t.NumDevices()) +
                " devices but the program runs on " + std::to_string(num_partitions) +
                " partitions");
  }
}

}  // namespace

Literal EvalAutoToManual(const Instruction& i, const Literal& x, int64_t partition,
                         int64_t num_partitions) {
  const Sharding& t = *i.tiling;
  CheckDevices(i, t, num_partitions);
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> start = TileStart(i, t, x.shape, partition);
  if (start.empty()) Fail(i, "partition " + std::to_string(partition) + " holds no tile");
  CopyBlock(x, start, out, std::vector<int64_t>(x.shape.rank(), 0), i.shape.dims);
  return out;
}

Literal EvalManualToAuto(const Instruction& i, const Operands& inputs) {
  const Sharding& t = *i.tiling;
  const int64_t n = static_cast<int64_t>(inputs.size());
  CheckDevices(i, t, n);
  Literal out = Literal::Zeros(i.shape);
  const int64_t r = i.shape.rank();
  const std::vector<int64_t> zero(r, 0), shard = t.ShardDims(i.shape.dims);
  if (t.kind != Sharding::Kind::kTiled) {
    CopyBlock(*inputs[0], zero, out, zero, shard);
    return out;
  }
  // Tiles in assignment order; a tile already written (a replica) is skipped.
  std::vector<bool> written;
  int64_t tiles = 1;
  for (int64_t d = 0; d < r; ++d) tiles *= t.tile_dims[d];
  written.assign(tiles, false);
  for (int64_t k = 0; k < t.devices.size(); ++k) {
    const int64_t device = t.devices[k];
    const std::vector<int64_t> index = t.TileIndexOf(device);
    int64_t tile = 0;
    for (int64_t d = 0; d < r; ++d) tile = tile * t.tile_dims[d] + index[d];
    if (written[tile]) continue;
    written[tile] = true;
    CopyBlock(*inputs.at(device), zero, out, TileStart(i, t, i.shape, device), shard);
  }
  return out;
}

}  // namespace podsim::ir::interp
