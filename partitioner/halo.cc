#include "partitioner/halo.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace podsim::partitioner {

using ir::DType;
using ir::Instruction;
using ir::Shape;

namespace {

// Floor and ceiling of a / b for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

}  // namespace

std::optional<HaloPlan> PlanHalo(const HaloGeometry& g) {
  const ir::WindowDim& w = g.window;
  const int64_t t_count = g.tiles, s = g.in_shard, n = g.in_extent, so = g.out_shard;
  if (t_count < 1 || s < 1 || so < 1 || n < 1 || g.out_extent < 1 || w.size < 1 || w.stride < 1 ||
      w.base_dilation < 1 || w.window_dilation < 1) {
    return std::nullopt;
  }
  const int64_t bd = w.base_dilation;
  // Dilated positions one tile's So outputs read: [p_lo, p_lo + span).
  const int64_t span = (so - 1) * w.stride + (w.size - 1) * w.window_dilation + 1;
  std::vector<int64_t> p_lo(t_count), first(t_count), last(t_count);
  std::vector<bool> valid(t_count);
  HaloPlan plan;
  plan.base_dilation = bd;
  plan.tile_left.assign(t_count, 0);
  plan.tile_right.assign(t_count, 0);
  for (int64_t c = 0; c < t_count; ++c) {
    valid[c] = c * so < g.out_extent;
    p_lo[c] = c * so * w.stride - w.pad_low;
    first[c] = CeilDiv(p_lo[c], bd);             // first input element read
    last[c] = FloorDiv(p_lo[c] + span - 1, bd);  // last input element read
    plan.tile_left[c] = c * s - first[c];
    plan.tile_right[c] = last[c] - (c * s + s - 1);
    if (!valid[c]) continue;
    const int64_t real_first = std::max<int64_t>(first[c], 0);
    const int64_t real_last = std::min<int64_t>(last[c], n - 1);
    if (real_first > real_last) continue;  // reads only padding
    plan.left = std::max(plan.left, c * s - real_first);
    plan.right = std::max(plan.right, real_last - (c * s + s - 1));
  }
  if (plan.left > s || plan.right > s) return std::nullopt;
  plan.buffer_start.resize(t_count);
  for (int64_t c = 0; c < t_count; ++c) {
    plan.buffer_start[c] = c * s - plan.left;
    const int64_t end = c * s + s + plan.right;  // one past the buffer's last position
    if (valid[c] && (plan.buffer_start[c] < 0 || end > n)) plan.mask = true;
  }
  auto buffer_last = [&](int64_t c) { return c * s + s - 1 + plan.right; };
  // Fills plan.offset from the affine form (set below) once the mode is chosen.
  auto finish = [&]() {
    plan.offset.resize(t_count);
    for (int64_t c = 0; c < t_count; ++c) plan.offset[c] = plan.offset_base + c * plan.offset_step;
    return plan;
  };

  // Element space: every tile starts at the same phase of the dilation grid.
  const int64_t extent = last[0] - first[0] + 1;
  if ((so * w.stride) % bd == 0 && extent >= 1) {
    const int64_t local_pad_low = first[0] * bd - p_lo[0];
    for (int64_t c = 0; c < t_count; ++c) {
      if (!valid[c]) continue;
      plan.pad_low = std::max(plan.pad_low, plan.buffer_start[c] - first[c]);
      plan.pad_high = std::max(plan.pad_high, last[c] - buffer_last(c));
    }
    // first[c] - buffer_start[c] + pad_low, affine in c because first[c] is.
    plan.offset_step = so * w.stride / bd - s;
    plan.offset_base = first[0] + plan.left + plan.pad_low;
    plan.extent = extent;
    plan.local = w;
    plan.local.pad_low = local_pad_low;
    plan.local.pad_high = span - (local_pad_low + bd * (extent - 1) + 1);
    return finish();
  }

  // Dilated space: the buffer is dilated explicitly, the local op sees no base dilation.
  plan.dilate = bd > 1;
  for (int64_t c = 0; c < t_count; ++c) {
    if (!valid[c]) continue;
    plan.pad_low = std::max(plan.pad_low, plan.buffer_start[c] * bd - p_lo[c]);
    plan.pad_high = std::max(plan.pad_high, p_lo[c] + span - 1 - buffer_last(c) * bd);
  }
  // p_lo[c] - buffer_start[c] * bd + pad_low.
  plan.offset_step = so * w.stride - s * bd;
  plan.offset_base = -w.pad_low + plan.left * bd + plan.pad_low;
  plan.extent = span;
  plan.local = w;
  plan.local.pad_low = 0;
  plan.local.pad_high = 0;
  plan.local.base_dilation = 1;
  return finish();
}

double HaloCost(const HaloPlan& plan, double slab_bytes, double latency_bytes) {
  return static_cast<double>(plan.left + plan.right) * slab_bytes +
         static_cast<double>(plan.permutes()) * latency_bytes;
}

Instruction* ExchangeHalo(SpmdBuilder& sb, const Resharder& resharder, Instruction* x, int64_t dim,
                          const TileLayout& layout, int64_t layout_dim, const HaloGeometry& g,
                          const HaloPlan& plan, Instruction* fill, const ReshardReason& why) {
  ir::Builder& b = sb.b();
  const int64_t s = g.in_shard, r = x->shape.rank();
  if (x->shape.dims[dim] != s) {
    throw Error("internal: halo exchange along dim " + std::to_string(dim) + " of " +
                x->shape.ToString() + " expects " + std::to_string(s) + " elements");
  }
  // coord * step + base for this partition's tile coordinate along the split dim.
  auto per_tile = [&](int64_t step, int64_t base) {
    Instruction* v = sb.TileCoord(layout, layout_dim);
    if (step != 1) v = b.Mul(v, sb.S32(step));
    return base == 0 ? v : b.Add(v, sb.S32(base));
  };
  auto slab = [&](int64_t start, int64_t length) {
    std::vector<int64_t> starts(r, 0), limits = x->shape.dims;
    starts[dim] = start;
    limits[dim] = start + length;
    return b.Slice(x, std::move(starts), std::move(limits));
  };
  auto reason = [&](int64_t count, const char* side) {
    ReshardReason w = why;
    const std::string halo = "halo exchange: " + std::to_string(count) + " element" +
                             (count == 1 ? "" : "s") + " from the " + side +
                             " neighbour along dim " + std::to_string(layout_dim);
    w.note = w.note.empty() ? halo : w.note + "; " + halo;
    return w;
  };

  std::vector<Instruction*> parts;
  if (plan.left > 0) {
    parts.push_back(resharder.Shift(sb, slab(s - plan.left, plan.left), layout, layout_dim, 1,
                                    reason(plan.left, "left")));
  }
  parts.push_back(x);
  if (plan.right > 0) {
    parts.push_back(resharder.Shift(sb, slab(0, plan.right), layout, layout_dim, -1,
                                    reason(plan.right, "right")));
  }
  Instruction* buf = parts.size() == 1 ? x : b.Concatenate(std::move(parts), dim);

  if (plan.mask && fill != nullptr) {
    const Shape index_shape(DType::kS32, buf->shape.dims);
    Instruction* position = b.Add(b.Iota(index_shape, dim),
                                  b.BroadcastScalar(per_tile(s, -plan.left), index_shape.dims));
    Instruction* lo =
        b.Compare(position, b.BroadcastScalar(sb.S32(0), index_shape.dims), ir::Comparison::kGe);
    Instruction* hi = b.Compare(position, b.BroadcastScalar(sb.S32(g.in_extent), index_shape.dims),
                                ir::Comparison::kLt);
    buf = b.Select(b.And(lo, hi), buf, b.BroadcastScalar(fill, buf->shape.dims));
  }

  if (plan.dilate || plan.pad_low > 0 || plan.pad_high > 0) {
    std::vector<ir::PadDim> padding(r);
    padding[dim] =
        ir::PadDim{plan.pad_low, plan.pad_high, plan.dilate ? plan.base_dilation - 1 : 0};
    Instruction* value = fill != nullptr ? fill : sb.Scalar(x->shape.dtype, 0);
    buf = b.Pad(buf, value, std::move(padding));
  }

  const bool moves = plan.offset_step != 0 || plan.offset_base != 0;
  if (!moves && plan.extent == buf->shape.dims[dim]) return buf;
  std::vector<Instruction*> starts(r, sb.S32(0));
  starts[dim] = plan.offset_step == 0 ? sb.S32(plan.offset_base)
                                      : per_tile(plan.offset_step, plan.offset_base);
  std::vector<int64_t> sizes = buf->shape.dims;
  sizes[dim] = plan.extent;
  return b.DynamicSlice(buf, std::move(starts), std::move(sizes));
}

}  // namespace podsim::partitioner
