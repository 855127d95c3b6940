// SPMD handler for ops that slide a window along some dims: convolution, reduce-window, pad and
// slice. Dims the op does not touch keep any split, as in handlers_dimwise.cc. A windowed dim that
// is split stays split: each partition exchanges halos with its neighbours and runs the op on
// its tile plus halos with one static configuration (partitioner/halo.h; GShard Figure 5a for
// convolution and reduce-window, 5b for pad, and slice as a window of size 1 with the slice's
// stride). The output of a windowed dim is split the same number of ways over the same
// partitions as the input (ceil-division tiles, the padding of the last tiles unspecified).
//
// Which layout: the operand's (its split carried through every dim) or the declared result's,
// the cheaper by ReshardCostModel (operand reshards + halo bytes + result reshard; the declared
// one on ties). Fallbacks, logged as "fallback" in the provenance: a halo larger than a
// neighbour's tile makes that dim whole; dims the op contracts or mixes (convolution input
// features, grouped output features) are made whole.

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "ir/visitor.h"
#include "partitioner/halo.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

namespace {

struct WindowedDim {
  int64_t in_dim;   // dim of operand 0
  int64_t out_dim;  // dim of the result
  ir::WindowDim window;
};

// What the value outside the operand is, for the halo exchange's padding.
enum class Fill : uint8_t {
  kNone,            // slice: no valid output reads outside the operand
  kZero,            // convolution
  kReduceIdentity,  // reduce-window: the identity of its reduction
  kPadValue,        // pad: its padding value (operand 1)
};

// How a windowed op maps its operands' dims to its result's, and how its local copy takes the
// window narrowed to the tile.
struct WindowOp {
  // Per operand: operand dim -> result dim it passes or slides into, -1 when it must be whole.
  std::vector<std::vector<int64_t>> pass;
  std::vector<WindowedDim> windowed;  // dims of operand 0 that slide a window
  Fill fill = Fill::kNone;
  // Writes windowed dim k's local window (after a halo exchange when `exchanged`) into the
  // local instruction; `extent` is the local operand's extent along it.
  std::function<void(Instruction& local, size_t k, const WindowedDim& w,
                     const ir::WindowDim& window, bool exchanged, int64_t extent)>
      narrow;
};

bool Trivial(const ir::WindowDim& w) { return w == ir::WindowDim{}; }

// One handler per windowed op (ir::ConstVisitor).
class DescribeWindowOp : public ir::ConstVisitor<WindowOp> {
 public:
  WindowOp DefaultAction(const Instruction& i) override {
    throw Error("internal: %" + i.name + " is not a windowed op");
  }
  WindowOp HandleConvolution(const Instruction& i) override {
    WindowOp op = Start(i, Fill::kZero);
    const ir::ConvDims& c = i.conv;
    op.pass[0][c.input_batch] = c.output_batch;
    if (i.feature_group_count == 1) op.pass[1][c.kernel_output_feature] = c.output_feature;
    for (size_t s = 0; s < c.input_spatial.size(); ++s) {
      op.pass[0][c.input_spatial[s]] = c.output_spatial[s];
      op.windowed.push_back({c.input_spatial[s], c.output_spatial[s], i.window[s]});
    }
    op.narrow = [](Instruction& local, size_t k, const WindowedDim&, const ir::WindowDim& window,
                   bool, int64_t) { local.window[k] = window; };
    return op;
  }
  WindowOp HandleReduceWindow(const Instruction& i) override {
    WindowOp op = Start(i, Fill::kReduceIdentity);
    for (int64_t d = 0; d < i.operands[0]->shape.rank(); ++d) {
      op.pass[0][d] = d;
      if (!Trivial(i.window[d])) op.windowed.push_back({d, d, i.window[d]});
    }
    op.narrow = [](Instruction& local, size_t, const WindowedDim& w, const ir::WindowDim& window,
                   bool, int64_t) { local.window[w.in_dim] = window; };
    return op;
  }
  WindowOp HandlePad(const Instruction& i) override {
    WindowOp op = Start(i, Fill::kPadValue);
    for (int64_t d = 0; d < i.operands[0]->shape.rank(); ++d) {
      op.pass[0][d] = d;
      const ir::PadDim& p = i.padding[d];
      if (p == ir::PadDim{}) continue;
      op.windowed.push_back({d, d, ir::WindowDim{1, 1, p.low, p.high, p.interior + 1, 1}});
    }
    op.narrow = [](Instruction& local, size_t, const WindowedDim& w, const ir::WindowDim& window,
                   bool, int64_t) {
      local.padding[w.in_dim] =
          ir::PadDim{window.pad_low, window.pad_high, window.base_dilation - 1};
    };
    return op;
  }
  WindowOp HandleSlice(const Instruction& i) override {
    WindowOp op = Start(i, Fill::kNone);
    const Shape& x = i.operands[0]->shape;
    for (int64_t d = 0; d < x.rank(); ++d) {
      op.pass[0][d] = d;
      if (i.slice_starts[d] == 0 && i.slice_limits[d] == x.dims[d] && i.slice_strides[d] == 1) {
        continue;
      }
      op.windowed.push_back(
          {d, d, ir::WindowDim{1, i.slice_strides[d], -i.slice_starts[d], 0, 1, 1}});
    }
    op.narrow = [](Instruction& local, size_t, const WindowedDim& w, const ir::WindowDim& window,
                   bool exchanged, int64_t extent) {
      if (!exchanged) return;
      local.slice_starts[w.in_dim] = window.pad_low;
      local.slice_limits[w.in_dim] = extent;
    };
    return op;
  }

 private:
  static WindowOp Start(const Instruction& i, Fill fill) {
    WindowOp op;
    for (const Instruction* o : i.operands) op.pass.emplace_back(o->shape.rank(), -1);
    op.fill = fill;
    return op;
  }
};

WindowOp Describe(const Instruction& i) {
  DescribeWindowOp describe;
  return ir::Accept<WindowOp>(i, describe);
}

// A compute layout for the result with a halo plan per windowed dim (nullopt: not split).
struct WindowCandidate {
  TileLayout layout;
  std::vector<std::optional<HaloPlan>> plans;  // per WindowOp::windowed entry
  std::vector<int64_t> too_wide;               // result dims made whole: halo > tile
  double cost = 0;
};

HaloGeometry Geometry(const Instruction& i, const WindowedDim& w, int64_t tiles) {
  HaloGeometry g;
  g.tiles = tiles;
  g.in_extent = i.operands[0]->shape.dims[w.in_dim];
  g.in_shard = ShardExtent(g.in_extent, tiles);
  g.out_extent = i.shape.dims[w.out_dim];
  g.out_shard = ShardExtent(g.out_extent, tiles);
  g.window = w.window;
  return g;
}

}  // namespace

// The kernel of a convolution split along its spatial dims, as the weight gradient of a
// spatially partitioned convolution has it (ir/autodiff_rules.cc: the input convolved with the
// output's adjoint as the kernel, whose spatial dims are the split ones). Per spatial dim the
// result is out[r] = sum over taps t of x_dilated_padded[r * stride + t * window_dilation] k[t];
// tile c of the kernel holds taps [c * To, (c + 1) * To), so partition c can sum its own taps
// if it has the x positions they read: x tile c plus halos. That is a windowed op in which
// the taps play the outputs (extent O, To per tile) and the output positions r play the
// window (size R, stride window_dilation, window dilation stride): PlanHalo plans it, the
// halo is exchanged like a forward convolution's, and each partition convolves its buffer
// with its kernel tile into a partial result over the whole output, AllReduced later (XLA's
// "window-contracting" convolution; GShard Table 4's O(1) AllReduce of a weight gradient).
// The kernel's padding taps (an uneven last tile) are zeroed first.
std::optional<ShardedValue> SpmdVisitor::HandleKernelSplitConvolution(const Instruction& i) {
  if (i.opcode != Opcode::kConvolution || i.feature_group_count != 1) return std::nullopt;
  const ir::ConvDims& cd = i.conv;
  const ShardedValue& kv = Operand(i, 1);
  if (kv.layout.partial() != 1) return std::nullopt;
  const Shape& x = i.operands[0]->shape;
  const Shape& k = i.operands[1]->shape;
  std::vector<int64_t> kernel_keep(k.rank(), -1);
  std::vector<size_t> split;  // spatial indices s whose kernel dim is split
  for (size_t s = 0; s < cd.kernel_spatial.size(); ++s) {
    const int64_t kd = cd.kernel_spatial[s];
    if (kv.layout.tiles(kd) == 1) continue;
    // Every tile must hold a real tap, so that no partition sums padding alone.
    const int64_t t = kv.layout.tiles(kd), to = ShardExtent(k.dims[kd], t);
    if ((t - 1) * to >= k.dims[kd]) return std::nullopt;
    kernel_keep[kd] = kd;
    split.push_back(s);
  }
  if (split.empty()) return std::nullopt;
  const int64_t n = options_.num_partitions;
  const TileLayout k_layout = kv.layout.Projected(kernel_keep);
  std::vector<std::pair<const TileLayout*, int64_t>> x_picks(x.rank(), {nullptr, 0});
  std::vector<int64_t> partial_dims;
  for (size_t s : split) {
    x_picks[cd.input_spatial[s]] = {&k_layout, cd.kernel_spatial[s]};
    partial_dims.push_back(cd.kernel_spatial[s]);
  }
  const std::optional<TileLayout> x_layout = TileLayout::FromPicks(x_picks, n);
  if (!x_layout) return std::nullopt;
  std::vector<HaloGeometry> geometry;
  std::vector<HaloPlan> plans;
  for (size_t s : split) {
    const ir::WindowDim& w = i.window[s];
    HaloGeometry g;
    g.tiles = k_layout.tiles(cd.kernel_spatial[s]);
    g.in_extent = x.dims[cd.input_spatial[s]];
    g.in_shard = ShardExtent(g.in_extent, g.tiles);
    g.out_extent = k.dims[cd.kernel_spatial[s]];
    g.out_shard = ShardExtent(g.out_extent, g.tiles);
    g.window = ir::WindowDim{i.shape.dims[cd.output_spatial[s]],
                             w.window_dilation,
                             w.pad_low,
                             w.pad_high,
                             w.base_dilation,
                             w.stride};
    std::optional<HaloPlan> plan = PlanHalo(g);
    if (!plan) return std::nullopt;
    geometry.push_back(g);
    plans.push_back(std::move(*plan));
  }

  Instruction* xl = OperandAs(i, 0, *x_layout).local;
  Instruction* kl = OperandAs(i, 1, k_layout).local;
  ir::Builder& b = sb().b();
  const ir::DType dtype = x.dtype;
  Instruction* zero = sb().Scalar(dtype, 0);
  std::unique_ptr<Instruction> li = std::make_unique<Instruction>(i);
  for (size_t j = 0; j < split.size(); ++j) {
    const size_t s = split[j];
    const HaloGeometry& g = geometry[j];
    const HaloPlan& plan = plans[j];
    const int64_t kd = cd.kernel_spatial[s];
    xl = ExchangeHalo(sb(), resharder_, xl, cd.input_spatial[s], *x_layout, cd.input_spatial[s], g,
                      plan, zero, {i.name, "operand 0", ""});
    if (g.out_shard * g.tiles != g.out_extent) {
      // Tap positions past the kernel's extent (the last tile's padding) contribute nothing.
      const Shape index(ir::DType::kS32, kl->shape.dims);
      Instruction* tap =
          b.Add(b.Iota(index, kd),
                b.BroadcastScalar(b.Mul(sb().TileCoord(k_layout, kd), sb().S32(g.out_shard)),
                                  index.dims));
      Instruction* real = b.Compare(tap, b.BroadcastScalar(sb().S32(g.out_extent), index.dims),
                                    ir::Comparison::kLt);
      kl = b.Select(real, kl, b.BroadcastScalar(zero, kl->shape.dims));
    }
    // The plan's window, taps and positions swapped back into the convolution's roles.
    const ir::WindowDim& p = plan.local;
    li->window[s] = ir::WindowDim{g.out_shard, p.window_dilation, p.pad_low,
                                  p.pad_high,  p.base_dilation,   p.stride};
  }
  const TileLayout out_layout =
      k_layout.Projected(std::vector<int64_t>(i.shape.rank(), -1), partial_dims);
  Instruction* local = CloneLocal(*li, {xl, kl}, i.shape);
  return ShardedValue{local, i.shape, out_layout};
}

ShardedValue SpmdVisitor::HandleWindowed(const Instruction& i) {
  if (std::optional<ShardedValue> v = HandleKernelSplitConvolution(i)) return *v;
  const WindowOp op = Describe(i);
  const int64_t out_rank = i.shape.rank();
  std::vector<bool> passed(out_rank, false);
  for (const auto& p : op.pass) {
    for (int64_t o : p) {
      if (o >= 0) passed[o] = true;
    }
  }
  const TileLayout declared = Declared(i);
  Resharder costs(options_.cost_model, nullptr);
  const double latency = options_.cost_model.collective_latency_bytes;

  auto make = [&](TileLayout l) {
    WindowCandidate c{l, {}, {}, 0};
    for (int64_t o = 0; o < out_rank; ++o) {
      if (!passed[o] && c.layout.tiles(o) > 1) c.layout = c.layout.Gathered(o);
    }
    c.plans.assign(op.windowed.size(), std::nullopt);
    for (size_t k = 0; k < op.windowed.size(); ++k) {
      const WindowedDim& w = op.windowed[k];
      const int64_t t = c.layout.tiles(w.out_dim);
      if (t == 1) continue;
      c.plans[k] = PlanHalo(Geometry(i, w, t));
      if (!c.plans[k]) {
        c.too_wide.push_back(w.out_dim);
        c.layout = c.layout.Gathered(w.out_dim);
      }
    }
    for (size_t k = 0; k < i.operands.size(); ++k) {
      const ShardedValue& v = Operand(i, static_cast<int64_t>(k));
      c.cost += costs.Cost(v.global, v.layout, c.layout.Projected(op.pass[k]));
    }
    const Shape x_local = c.layout.Projected(op.pass[0]).ShardShape(i.operands[0]->shape);
    for (size_t k = 0; k < op.windowed.size(); ++k) {
      if (!c.plans[k]) continue;
      const int64_t along = x_local.dims[op.windowed[k].in_dim];
      const double slab = static_cast<double>(x_local.ByteSize()) / static_cast<double>(along);
      c.cost += HaloCost(*c.plans[k], slab, latency);
    }
    c.cost += costs.Cost(i.shape, c.layout, declared);
    return c;
  };
  std::vector<int64_t> from_operand(out_rank, -1);
  for (size_t d = 0; d < op.pass[0].size(); ++d) {
    if (op.pass[0][d] >= 0) from_operand[op.pass[0][d]] = static_cast<int64_t>(d);
  }
  WindowCandidate best = make(declared);
  WindowCandidate other = make(Operand(i, 0).layout.Projected(from_operand));
  if (other.cost < best.cost) best = std::move(other);
  const TileLayout& layout = best.layout;

  // Operands in the compute layout; splits the op cannot keep are logged as fallbacks.
  const std::string name(ir::OpcodeName(i.opcode));
  std::vector<Instruction*> locals;
  for (size_t k = 0; k < i.operands.size(); ++k) {
    const ShardedValue& v = Operand(i, static_cast<int64_t>(k));
    std::vector<int64_t> whole, wide;
    for (int64_t d = 0; d < v.global.rank(); ++d) {
      if (v.layout.tiles(d) == 1) continue;
      const int64_t o = op.pass[k][d];
      if (o < 0) {
        whole.push_back(d);
      } else if (std::find(best.too_wide.begin(), best.too_wide.end(), o) != best.too_wide.end()) {
        wide.push_back(d);
      }
    }
    std::string note;
    if (!whole.empty()) note = "fallback: " + name + " needs dims " + ir::DimsToString(whole) + " whole";
    if (!wide.empty()) {
      note += std::string(note.empty() ? "" : "; ") + "fallback: " + name + " halo along dims " +
              ir::DimsToString(wide) + " is larger than a tile";
    }
    locals.push_back(
        OperandAs(i, static_cast<int64_t>(k), layout.Projected(op.pass[k]), note).local);
  }

  // The fill read where a window leaves the operand (and by every masked position).
  const ir::DType dtype = i.operands[0]->shape.dtype;
  Instruction* fill = nullptr;
  switch (op.fill) {
    case Fill::kZero: fill = sb().Scalar(dtype, 0); break;
    case Fill::kReduceIdentity: fill = sb().Scalar(dtype, ir::ReduceIdentity(i.reduce_kind)); break;
    case Fill::kPadValue: fill = locals[1]; break;
    case Fill::kNone: break;
  }

  // Halo exchange per split windowed dim, then the op with its window narrowed to the tile.
  const TileLayout x_layout = layout.Projected(op.pass[0]);
  std::unique_ptr<Instruction> li = std::make_unique<Instruction>(i);
  const Shape x_local = x_layout.ShardShape(i.operands[0]->shape);
  for (size_t k = 0; k < op.windowed.size(); ++k) {
    const WindowedDim& w = op.windowed[k];
    ir::WindowDim local = w.window;
    if (best.plans[k]) {
      const HaloGeometry g = Geometry(i, w, layout.tiles(w.out_dim));
      locals[0] = ExchangeHalo(sb(), resharder_, locals[0], w.in_dim, x_layout, w.in_dim, g,
                               *best.plans[k], fill, {i.name, "operand 0", ""});
      local = best.plans[k]->local;
    }
    op.narrow(*li, k, w, local, best.plans[k].has_value(), locals[0]->shape.dims[w.in_dim]);
  }
  if (i.opcode == Opcode::kSlice) {
    // Untouched dims: the whole local tile.
    for (int64_t d = 0; d < x_local.rank(); ++d) {
      if (i.slice_starts[d] == 0 && i.slice_limits[d] == i.operands[0]->shape.dims[d] &&
          i.slice_strides[d] == 1) {
        li->slice_limits[d] = x_local.dims[d];
      }
    }
  }
  Instruction* local = CloneLocal(*li, std::move(locals), layout.ShardShape(i.shape));
  return ShardedValue{local, i.shape, layout};
}

}  // namespace podsim::partitioner
