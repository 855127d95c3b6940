// SPMD handlers for manual regions (GShard 3.2's escape hatch; ir/instruction.h has the ops):
//  - auto-to-manual: the operand is resharded to the layout of the op's tiling; its local shard,
//    padding masked to zeros, is the region's value (the op itself becomes the identity);
//  - inside the region (instructions propagation marked {manual}): copied as written, with the
//    shapes the user wrote; an auto value they read is made whole (replicated) first; a loop's
//    body is copied too;
//  - manual-to-auto: the operand's local value is this partition's shard of the result under
//    the tiling (identity again); the visitor then reshards it to the declared sharding.
// Both boundaries need the tiling to span every partition.

#include <string>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;

namespace {

// The layout of a boundary's tiling for a tensor of `rank` dims on `n` partitions.
TileLayout TilingLayout(const Instruction& i, int64_t rank, int64_t n) {
  const ir::Sharding& t = *i.tiling;
  if (t.kind == ir::Sharding::Kind::kTiled && t.NumDevices() != n) {
    throw Error("%" + i.name + ": the manual region's tiling " + t.ToString() + " spans " +
                std::to_string(t.NumDevices()) + " devices, the program runs on " +
                std::to_string(n) + " partitions");
  }
  try {
    return TileLayout::FromSharding(t, rank, n);
  } catch (const Error& e) {
    throw Error("%" + i.name + ": tiling: " + e.what());
  }
}

}  // namespace

PartitionedValue SpmdVisitor::HandleAutoToManual(const Instruction& i) {
  if (!i.tiling) throw Error("%" + i.name + ": auto-to-manual without a tiling");
  const TileLayout layout = TilingLayout(i, i.operands[0]->shape.rank(), num_partitions());
  ShardedValue x = OperandAs(i, 0, layout, "enters a manual region");
  // The region sees zeros past the extent of uneven shards, not the padding's leftovers.
  std::vector<int64_t> dims(x.global.rank());
  for (int64_t d = 0; d < x.global.rank(); ++d) dims[d] = d;
  x.local = sb().MaskPadding(x.local, x.global, x.layout, dims, 0.0);
  if (x.local->shape != i.shape) {
    throw Error("%" + i.name + ": manual region shapes do not match: the shard is " +
                x.local->shape.ToString() + ", the region expects " + i.shape.ToString());
  }
  PartitionedValue v;
  v.manual = true;
  v.array =
      ShardedValue{x.local, i.shape, TileLayout::Replicated(i.shape.rank(), num_partitions())};
  return v;
}

PartitionedValue SpmdVisitor::HandleManual(const Instruction& i) {
  std::vector<Instruction*> locals;
  for (size_t k = 0; k < i.operands.size(); ++k) {
    const PartitionedValue& v = ValueOf(i.operands[k]);
    if (v.manual) {
      locals.push_back(v.is_tuple() ? v.tuple : v.array.local);
      continue;
    }
    if (v.is_tuple()) {
      throw Error("%" + i.name + ": a manual region cannot read the auto tuple %" +
                  i.operands[k]->name);
    }
    const ir::Shape& s = i.operands[k]->shape;
    locals.push_back(OperandAs(i, static_cast<int64_t>(k),
                               TileLayout::Replicated(s.rank(), num_partitions()),
                               "read whole inside a manual region")
                         .local);
  }
  Instruction* local = CloneLocal(i, std::move(locals), i.shape);
  if (i.body) local->body = CopyComputation(*i.body);
  local->name = ClaimName(i.name);
  PartitionedValue v;
  v.manual = true;
  if (i.shape.is_tuple) {
    v.tuple = local;
  } else {
    v.array =
        ShardedValue{local, i.shape, TileLayout::Replicated(i.shape.rank(), num_partitions())};
  }
  return v;
}

PartitionedValue SpmdVisitor::HandleManualToAuto(const Instruction& i) {
  if (!i.tiling) throw Error("%" + i.name + ": manual-to-auto without a tiling");
  const TileLayout layout = TilingLayout(i, i.shape.rank(), num_partitions());
  const PartitionedValue& v = ValueOf(i.operands[0]);
  Instruction* local = nullptr;
  if (v.manual && !v.is_tuple()) {
    local = v.array.local;
  } else if (!v.is_tuple()) {  // an auto value: the same on every partition
    const ir::Shape& s = i.operands[0]->shape;
    local = OperandAs(i, 0, TileLayout::Replicated(s.rank(), num_partitions())).local;
  } else {
    throw Error("%" + i.name + ": operand is a tuple");
  }
  if (local->shape != layout.ShardShape(i.shape)) {
    throw Error("%" + i.name + ": manual region shapes do not match: the operand is " +
                local->shape.ToString() + ", the shard of " + i.shape.ToString() + " under " +
                i.tiling->ToString() + " is " + layout.ShardShape(i.shape).ToString());
  }
  return ShardedValue{local, i.shape, layout};
}

ir::Computation* SpmdVisitor::CopyComputation(const ir::Computation& in) {
  ir::Computation* out = out_->AddComputation(out_->UniqueName(in.name() + ".manual"));
  std::unordered_map<const Instruction*, Instruction*> map;
  ir::Builder b(out);
  for (const auto& owned : in.instructions()) {
    auto copy = std::make_unique<Instruction>(*owned);
    copy->parent = nullptr;
    copy->sharding.reset();
    for (Instruction*& o : copy->operands) o = map.at(o);
    if (copy->body) copy->body = CopyComputation(*copy->body);
    map[owned.get()] = b.Add(std::move(copy), /*infer_shape=*/false);
  }
  if (in.root()) out->set_root(map.at(in.root()));
  return out;
}

}  // namespace podsim::partitioner
