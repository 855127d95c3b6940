// The vector-Jacobian product of every op (ir/autodiff_internal.h).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>

#include "ir/autodiff_internal.h"
#include "ir/visitor.h"

namespace podsim::ir::autodiff {
namespace {

// The vector-Jacobian products, one handler per op family or op.
class Vjp : public ConstVisitor<void> {
 public:
  Vjp(Differentiator& d, Builder& b, Frame& f, const Adjoint& adjoint)
      : d_(d), b_(b), f_(f), adj_(adjoint), g_(adjoint.array) {}

  void DefaultAction(const Instruction& i) override { NoRule(i); }
  void HandleLeaf(const Instruction&) override {}

  void HandleNegate(const Instruction& i) override { Acc(i, 0, [&] { return b_.Neg(g_); }); }
  void HandleExp(const Instruction& i) override { Acc(i, 0, [&] { return b_.Mul(g_, Y(i)); }); }
  void HandleLog(const Instruction& i) override { Acc(i, 0, [&] { return b_.Div(g_, X(i, 0)); }); }
  void HandleSqrt(const Instruction& i) override {
    Acc(i, 0, [&] { return b_.Div(g_, b_.Mul(b_.Full(i.shape, 2.0), Y(i))); });
  }
  void HandleRsqrt(const Instruction& i) override {
    // y = x^(-1/2): dy/dx = -x^(-3/2) / 2 = -y^3 / 2.
    Acc(i, 0, [&] {
      Instruction* y = Y(i);
      return b_.Mul(g_, b_.Mul(b_.Full(i.shape, -0.5), b_.Mul(y, b_.Mul(y, y))));
    });
  }
  void HandleTanh(const Instruction& i) override {
    Acc(i, 0, [&] { return b_.Mul(g_, b_.Sub(b_.Full(i.shape, 1.0), b_.Mul(Y(i), Y(i)))); });
  }
  void HandleAbs(const Instruction& i) override {
    Acc(i, 0, [&] {
      Instruction* x = X(i, 0);
      Instruction* zero = b_.Zeros(i.shape);
      Instruction* sign =
          b_.Select(b_.Compare(x, zero, Comparison::kGt), b_.Full(i.shape, 1.0),
                    b_.Select(b_.Compare(x, zero, Comparison::kLt), b_.Full(i.shape, -1.0), zero));
      return b_.Mul(g_, sign);
    });
  }
  void HandleConvert(const Instruction& i) override {
    const DType from = i.operand(0)->shape.dtype;
    Acc(i, 0, [&] { return from == i.shape.dtype ? g_ : b_.Convert(g_, from); });
  }

  void HandleAdd(const Instruction& i) override {
    Acc(i, 0, [&] { return g_; });
    Acc(i, 1, [&] { return g_; });
  }
  void HandleSubtract(const Instruction& i) override {
    Acc(i, 0, [&] { return g_; });
    Acc(i, 1, [&] { return b_.Neg(g_); });
  }
  void HandleMultiply(const Instruction& i) override {
    Acc(i, 0, [&] { return b_.Mul(g_, X(i, 1)); });
    Acc(i, 1, [&] { return b_.Mul(g_, X(i, 0)); });
  }
  void HandleDivide(const Instruction& i) override {
    if (const std::optional<SoftmaxMatch> softmax = MatchSoftmax(i)) {
      // The softmax as one op, as TensorFlow's Softmax gradient and jax.nn.softmax's rule take
      // it: dx = p * (g - sum_d(g * p)), reading the output alone. The max only shifts the
      // logits (the softmax does not change with it), so no gradient flows through it; the
      // interior gets no adjoint from here (only from other readers it may have).
      const Instruction* x = softmax->x;
      if (f_.active.count(x) && !x->shape.is_tuple) {
        Instruction* p = Y(i);
        const std::vector<int64_t>& dims = i.shape.dims;
        std::vector<int64_t> keep;
        for (int64_t k = 0; k < i.shape.rank(); ++k) {
          if (k != softmax->dim) keep.push_back(k);
        }
        Instruction* dot = b_.Broadcast(b_.Reduce(b_.Mul(g_, p), {softmax->dim}, ReduceKind::kAdd),
                                        dims, keep);
        Instruction* v = b_.Mul(p, b_.Sub(g_, dot));
        Instruction*& a = f_.adjoint[x].array;
        a = a == nullptr ? v : b_.Add(a, v);
      }
      return;
    }
    Acc(i, 0, [&] { return b_.Div(g_, X(i, 1)); });
    Acc(i, 1, [&] { return b_.Neg(b_.Div(b_.Mul(g_, Y(i)), X(i, 1))); });
  }
  void HandleMaximum(const Instruction& i) override { Choose(i, Comparison::kGt); }
  void HandleMinimum(const Instruction& i) override { Choose(i, Comparison::kLt); }
  void HandlePower(const Instruction& i) override {
    // d(a^b)/da = b a^(b-1); d(a^b)/db = log(a) a^b.
    Acc(i, 0, [&] {
      Instruction* bm1 = b_.Sub(X(i, 1), b_.Full(i.shape, 1.0));
      return b_.Mul(g_, b_.Mul(X(i, 1), b_.Pow(X(i, 0), bm1)));
    });
    Acc(i, 1, [&] { return b_.Mul(g_, b_.Mul(b_.Log(X(i, 0)), Y(i))); });
  }
  void HandleSelect(const Instruction& i) override {
    Acc(i, 1, [&] { return b_.Select(X(i, 0), g_, b_.Zeros(i.shape)); });
    Acc(i, 2, [&] { return b_.Select(X(i, 0), b_.Zeros(i.shape), g_); });
  }

  void HandleBroadcast(const Instruction& i) override {
    Acc(i, 0, [&] {
      std::vector<int64_t> summed;
      for (int64_t d = 0; d < i.shape.rank(); ++d) {
        if (std::find(i.dimensions.begin(), i.dimensions.end(), d) == i.dimensions.end()) {
          summed.push_back(d);
        }
      }
      Instruction* r = summed.empty() ? g_ : b_.Reduce(g_, summed, ReduceKind::kAdd);
      return r->shape.dims == i.operand(0)->shape.dims ? r : b_.Reshape(r, i.operand(0)->shape.dims);
    });
  }
  void HandleReshape(const Instruction& i) override {
    Acc(i, 0, [&] { return b_.Reshape(g_, i.operand(0)->shape.dims); });
  }
  void HandleTranspose(const Instruction& i) override {
    Acc(i, 0, [&] {
      std::vector<int64_t> inverse(i.dimensions.size());
      for (size_t k = 0; k < i.dimensions.size(); ++k) {
        inverse[static_cast<size_t>(i.dimensions[k])] = static_cast<int64_t>(k);
      }
      return b_.Transpose(g_, inverse);
    });
  }
  void HandleSlice(const Instruction& i) override {
    Acc(i, 0, [&] {
      const std::vector<int64_t>& dims = i.operand(0)->shape.dims;
      std::vector<PadDim> pad(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        const int64_t stride = i.slice_strides.empty() ? 1 : i.slice_strides[d];
        const int64_t n = i.shape.dims[d];
        const int64_t last = n == 0 ? i.slice_starts[d] : i.slice_starts[d] + (n - 1) * stride + 1;
        pad[d] = {i.slice_starts[d], dims[d] - last, n == 0 ? 0 : stride - 1};
        if (n == 0) pad[d] = {dims[d], 0, 0};
      }
      return b_.Pad(g_, b_.ConstantScalar(i.shape.dtype, 0.0), pad);
    });
  }
  void HandleDynamicSlice(const Instruction& i) override {
    const Instruction* o = i.operand(0);
    if (!f_.active.count(o) || o->shape.is_tuple) return;
    Instruction*& a = f_.adjoint[o].array;
    const std::vector<Instruction*> starts = Starts(i, 1);
    if (a == nullptr) {
      a = b_.DynamicUpdateSlice(b_.Zeros(o->shape), g_, starts);
      return;
    }
    // Added into the window only (both ops clamp the starts the same way): an in-place
    // dynamic-update-slice touches one slice, where adding a zero-padded copy would read and
    // write the whole adjoint. A layer loop's stacked weight gets its gradient this way, one
    // layer per iteration.
    a = b_.DynamicUpdateSlice(a, b_.Add(b_.DynamicSlice(a, starts, i.shape.dims), g_), starts);
  }
  void HandleDynamicUpdateSlice(const Instruction& i) override {
    const Shape& update = i.operand(1)->shape;
    Acc(i, 0, [&] { return b_.DynamicUpdateSlice(g_, b_.Zeros(update), Starts(i, 2)); });
    Acc(i, 1, [&] { return b_.DynamicSlice(g_, Starts(i, 2), update.dims); });
  }
  void HandlePad(const Instruction& i) override {
    const std::vector<int64_t>& dims = i.operand(0)->shape.dims;
    Instruction* gx = nullptr;
    auto grad_x = [&] {
      if (gx != nullptr) return gx;
      std::vector<PadDim> crop(dims.size());
      std::vector<int64_t> starts(dims.size(), 0), strides(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        crop[d] = {-i.padding[d].low, -i.padding[d].high, 0};
        strides[d] = i.padding[d].interior + 1;
      }
      Instruction* cropped = b_.Pad(g_, b_.ConstantScalar(i.shape.dtype, 0.0), crop);
      return gx = b_.Slice(cropped, starts, cropped->shape.dims, strides);
    };
    Acc(i, 0, grad_x);
    Acc(i, 1, [&] {
      // The padding value's adjoint: the adjoint of every element that is padding.
      return b_.Sub(b_.Reduce(g_, Iota(0, i.shape.rank()), ReduceKind::kAdd),
                    b_.Reduce(grad_x(), Iota(0, i.shape.rank()), ReduceKind::kAdd));
    });
  }
  void HandleConcatenate(const Instruction& i) override {
    const int64_t d = i.dimensions[0];
    int64_t offset = 0;
    for (size_t k = 0; k < i.operands.size(); ++k) {
      const std::vector<int64_t>& dims = i.operand(k)->shape.dims;
      Acc(i, k, [&] {
        std::vector<int64_t> starts(dims.size(), 0), limits = i.shape.dims;
        starts[static_cast<size_t>(d)] = offset;
        limits[static_cast<size_t>(d)] = offset + dims[static_cast<size_t>(d)];
        return b_.Slice(g_, starts, limits);
      });
      offset += dims[static_cast<size_t>(d)];
    }
  }
  void HandleReverse(const Instruction& i) override {
    Acc(i, 0, [&] { return b_.Reverse(g_, i.dimensions); });
  }
  void HandleGather(const Instruction& i) override {
    // x[..., axis, ...] gathered at indices I (clamped): the adjoint of x is the sum of the
    // adjoints of the rows gathered from it, a contraction of g with one_hot(I) over I's dims
    // (as TPU programs scatter an embedding gradient).
    Acc(i, 0, [&] {
      const Shape& x = i.operand(0)->shape;
      const Shape& idx = i.operand(1)->shape;
      const int64_t axis = i.dimensions[0], ni = idx.rank(), n = x.dims[static_cast<size_t>(axis)];
      Instruction* ix = X(i, 1);
      Instruction* clamped =
          b_.Max(b_.Min(ix, b_.Full(idx, static_cast<double>(n - 1))), b_.Full(idx, 0.0));
      std::vector<int64_t> hot_dims = idx.dims;
      hot_dims.push_back(n);
      Instruction* hot = b_.Convert(
          b_.Compare(b_.Broadcast(clamped, hot_dims, Iota(0, ni)),
                     b_.Iota(Shape(DType::kS32, hot_dims), ni), Comparison::kEq),
          i.shape.dtype);
      DotDims dd;
      dd.lhs_contracting = Iota(axis, axis + ni);
      dd.rhs_contracting = Iota(0, ni);
      Instruction* r = b_.Dot(g_, hot, dd);  // x dims without axis, then axis last
      std::vector<int64_t> perm;
      for (int64_t k = 0; k < x.rank(); ++k) perm.push_back(k < axis ? k : k == axis ? x.rank() - 1 : k - 1);
      return perm == Iota(0, x.rank()) ? r : b_.Transpose(r, perm);
    });
  }

  void HandleDot(const Instruction& i) override {
    const DotDims& dd = i.dot;
    const int64_t rl = i.operand(0)->shape.rank(), rr = i.operand(1)->shape.rank();
    const int64_t nb = static_cast<int64_t>(dd.lhs_batch.size());
    const std::vector<int64_t> lf = Free(rl, dd.lhs_batch, dd.lhs_contracting);
    const std::vector<int64_t> rf = Free(rr, dd.rhs_batch, dd.rhs_contracting);
    const int64_t nlf = static_cast<int64_t>(lf.size()), nrf = static_cast<int64_t>(rf.size());
    // g: [batch, lhs free, rhs free]. d lhs = g . rhs over rhs's free dims, laid out [batch,
    // lhs free, rhs contracting (ascending rhs dim)], then transposed into lhs's layout.
    Acc(i, 0, [&] {
      DotDims back{Iota(0, nb), dd.rhs_batch, Iota(nb + nlf, nb + nlf + nrf), rf};
      Instruction* r = b_.Dot(g_, X(i, 1), back);
      return ToLayout(r, rl, dd.lhs_batch, lf, dd.lhs_contracting, dd.rhs_contracting, nb + nlf);
    });
    Acc(i, 1, [&] {
      DotDims back{Iota(0, nb), dd.lhs_batch, Iota(nb, nb + nlf), lf};
      Instruction* r = b_.Dot(g_, X(i, 0), back);
      return ToLayout(r, rr, dd.rhs_batch, rf, dd.rhs_contracting, dd.lhs_contracting, nb + nrf);
    });
  }

  void HandleConvolution(const Instruction& i) override {
    if (i.feature_group_count != 1) NoRule(i, "feature_group_count > 1");
    const ConvDims& cd = i.conv;
    const Shape& x = i.operand(0)->shape;
    const Shape& w = i.operand(1)->shape;
    const size_t n = i.window.size();
    // Per spatial dim: n' = (in - 1) * base_dilation + 1 (the dilated input), k' = (k - 1) *
    // window_dilation + 1 (the dilated kernel), o the output size. y[o] = sum over t of
    // x_dilated_padded[o * stride + t * window_dilation] * w[t].
    Acc(i, 0, [&] {
      // dx: the adjoint spread back over the taps that read each input element, a stride-1
      // convolution of g dilated by the stride with the kernel reversed and its features
      // swapped (the rule of reduce-window add, with a kernel), then the base dilation undone.
      // The stride's dilation and the padding are the convolution's base dilation and window
      // padding, not an explicit pad, as XLA writes it: the convolution's output then has the
      // input's extent, so a spatially split dx keeps the input's tiles and its halos stay a few
      // elements whatever the partition count (an explicit pad changes the split dim's extent,
      // and ceil-division tiles of the two extents drift apart by one element per tile).
      std::vector<WindowDim> window(n);
      std::vector<int64_t> starts(x.rank(), 0), limits = x.dims, strides(x.rank(), 1);
      for (size_t d = 0; d < n; ++d) {
        const WindowDim& wd = i.window[d];
        const int64_t in = x.dims[cd.input_spatial[d]];
        const int64_t base = (in - 1) * wd.base_dilation + 1;
        const int64_t taps = (w.dims[cd.kernel_spatial[d]] - 1) * wd.window_dilation + 1;
        const int64_t out = (i.shape.dims[cd.output_spatial[d]] - 1) * wd.stride + 1;
        const int64_t before = taps - wd.pad_low - 1;
        window[d] = {w.dims[cd.kernel_spatial[d]],   1,         before,
                     base + taps - 1 - out - before, wd.stride, wd.window_dilation};
        limits[cd.input_spatial[d]] = base;
        strides[cd.input_spatial[d]] = wd.base_dilation;
      }
      ConvDims back;
      back.input_batch = cd.output_batch;
      back.input_feature = cd.output_feature;
      back.input_spatial = cd.output_spatial;
      back.kernel_input_feature = cd.kernel_output_feature;
      back.kernel_output_feature = cd.kernel_input_feature;
      back.kernel_spatial = cd.kernel_spatial;
      back.output_batch = cd.input_batch;
      back.output_feature = cd.input_feature;
      back.output_spatial = cd.input_spatial;
      Instruction* r = b_.Convolution(g_, b_.Reverse(X(i, 1), cd.kernel_spatial), back, window);
      return r->shape.dims == x.dims ? r : b_.Slice(r, starts, limits, strides);
    });
    Acc(i, 1, [&] {
      // dw[f_in, f_out, t] = sum over batch and o of x_dilated_padded[o * stride + t *
      // window_dilation] g[o]: a convolution of x with g as the kernel, the batch contracted,
      // g's taps o * stride (window dilation = stride) and w's taps t (stride = window
      // dilation); the output can run past the kernel size, so it is cut to it.
      std::vector<WindowDim> window(n);
      std::vector<int64_t> starts(w.rank(), 0), limits = w.dims;
      for (size_t d = 0; d < n; ++d) {
        const WindowDim& wd = i.window[d];
        window[d] = {i.shape.dims[cd.output_spatial[d]], wd.window_dilation, wd.pad_low,
                     wd.pad_high, wd.base_dilation, wd.stride};
      }
      ConvDims back;
      back.input_batch = cd.input_feature;
      back.input_feature = cd.input_batch;
      back.input_spatial = cd.input_spatial;
      back.kernel_input_feature = cd.output_batch;
      back.kernel_output_feature = cd.output_feature;
      back.kernel_spatial = cd.output_spatial;
      back.output_batch = cd.kernel_input_feature;
      back.output_feature = cd.kernel_output_feature;
      back.output_spatial = cd.kernel_spatial;
      Instruction* r = b_.Convolution(X(i, 0), g_, back, window);
      return r->shape.dims == w.dims ? r : b_.Slice(r, starts, limits);
    });
  }

  void HandleReduce(const Instruction& i) override {
    const Shape& x = i.operand(0)->shape;
    std::vector<int64_t> kept;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (std::find(i.dimensions.begin(), i.dimensions.end(), d) == i.dimensions.end()) kept.push_back(d);
    }
    switch (i.reduce_kind) {
      case ReduceKind::kAdd:
        Acc(i, 0, [&] { return b_.Broadcast(g_, x.dims, kept); });
        return;
      case ReduceKind::kMax:
      case ReduceKind::kMin:
        // The adjoint goes to the elements equal to the result, split equally among ties.
        Acc(i, 0, [&] {
          Instruction* at = b_.Convert(
              b_.Compare(X(i, 0), b_.Broadcast(Y(i), x.dims, kept), Comparison::kEq), x.dtype);
          Instruction* count = b_.Reduce(at, i.dimensions, ReduceKind::kAdd);
          return b_.Mul(b_.Broadcast(b_.Div(g_, count), x.dims, kept), at);
        });
        return;
      default: return;  // and / or: predicates
    }
  }
  void HandleArgmax(const Instruction&) override {}
  void HandleCumsum(const Instruction& i) override {
    // y_j = sum over k <= j (exclusive: k < j) of x_k, so dx_k = sum over j >= k (j > k) of g_j:
    // the same scan run backwards.
    Acc(i, 0, [&] {
      const int64_t d = i.dimensions[0];
      return b_.Reverse(b_.Cumsum(b_.Reverse(g_, {d}), d, i.exclusive), {d});
    });
  }
  void HandleReduceWindow(const Instruction& i) override {
    if (i.reduce_kind == ReduceKind::kMax || i.reduce_kind == ReduceKind::kMin) {
      WindowExtremum(i);
      return;
    }
    if (i.reduce_kind != ReduceKind::kAdd) NoRule(i, "only add, max and min windows are differentiable");
    // Each input element gets the adjoints of the windows that cover it: g dilated by the
    // stride and padded so that a stride-1 window of the same size and dilation, slid over it,
    // lands on exactly those (the transposed convolution of XLA's and JAX's rule). The dilation
    // and padding are the window's (as in the convolution's dx), so the result has the input's
    // extent.
    Acc(i, 0, [&] {
      const std::vector<int64_t>& in = i.operand(0)->shape.dims;
      std::vector<WindowDim> window(in.size());
      std::vector<int64_t> starts(in.size(), 0), limits(in.size()), strides(in.size());
      for (size_t d = 0; d < in.size(); ++d) {
        const WindowDim& w = i.window[d];
        const int64_t base = (in[d] - 1) * w.base_dilation + 1;
        const int64_t taps = (w.size - 1) * w.window_dilation + 1;
        const int64_t out = (i.shape.dims[d] - 1) * w.stride + 1;
        const int64_t before = taps - w.pad_low - 1;
        window[d] = {w.size,           1, before, base + taps - 1 - out - before, w.stride,
                     w.window_dilation};
        limits[d] = base;
        strides[d] = w.base_dilation;
      }
      Instruction* r = b_.ReduceWindow(g_, window, ReduceKind::kAdd);
      return r->shape.dims == in ? r : b_.Slice(r, starts, limits, strides);
    });
  }
  // reduce-window max / min (max pooling): each window's adjoint goes to the elements equal
  // to its result, split equally among ties (as reduce max). One term per window tap t: the
  // elements tap t reads in every window (a size-1 window with the op's stride, padding and
  // base dilation, shifted by the tap's offset; padding reads the fill, which never wins),
  // compared with the result, and the masked adjoint placed back where that tap reads (a
  // size-1 add window with the stride as base dilation and the tap's offset as padding, the
  // input's extent out). Both are windows rather than pad + slice so that a spatially split
  // gradient keeps the input's tiles (see the convolution's dx).
  void WindowExtremum(const Instruction& i) {
    Acc(i, 0, [&] {
      const Shape& x = i.operand(0)->shape;
      const int64_t r = x.rank();
      std::vector<int64_t> taps(r);
      int64_t total_taps = 1;
      for (int64_t d = 0; d < r; ++d) {
        taps[d] = i.window[d].size;
        total_taps *= taps[d];
      }
      std::vector<Instruction*> masks;
      std::vector<std::vector<int64_t>> offsets;  // per tap: its dilated offset in the window
      std::vector<int64_t> tap(r, 0);
      for (int64_t t = 0; t < total_taps; ++t) {
        std::vector<WindowDim> read(r);
        std::vector<int64_t> offset(r);
        for (int64_t d = 0; d < r; ++d) {
          const WindowDim& w = i.window[d];
          offset[d] = tap[d] * w.window_dilation;
          // Output o reads dilated position o * stride + offset - pad_low: a size-1 window with
          // low padding pad_low - offset, and high padding giving exactly the op's outputs.
          const int64_t low = w.pad_low - offset[d];
          const int64_t dilated = (x.dims[d] - 1) * w.base_dilation + 1;
          read[d] = {1,
                     w.stride,
                     low,
                     (i.shape.dims[d] - 1) * w.stride + 1 - dilated - low,
                     w.base_dilation,
                     1};
        }
        Instruction* at = b_.ReduceWindow(X(i, 0), read, i.reduce_kind);
        masks.push_back(b_.Convert(b_.Compare(at, Y(i), Comparison::kEq), i.shape.dtype));
        offsets.push_back(offset);
        for (int64_t d = r - 1; d >= 0 && ++tap[d] == taps[d]; --d) tap[d] = 0;
      }
      Instruction* count = masks[0];
      for (size_t t = 1; t < masks.size(); ++t) count = b_.Add(count, masks[t]);
      Instruction* share = b_.Div(g_, count);  // count >= 1: the result is one of the taps
      Instruction* sum = nullptr;
      for (size_t t = 0; t < masks.size(); ++t) {
        // Input element e (dilated position e * base_dilation) gets output o's term when
        // o * stride + offset - pad_low = e * base_dilation: a size-1 window over the output
        // dilated by the stride, stride base_dilation, low padding offset - pad_low.
        std::vector<WindowDim> place(r);
        for (int64_t d = 0; d < r; ++d) {
          const WindowDim& w = i.window[d];
          const int64_t low = offsets[t][d] - w.pad_low;
          const int64_t dilated = (i.shape.dims[d] - 1) * w.stride + 1;
          place[d] = {1,        w.base_dilation,
                      low,      (x.dims[d] - 1) * w.base_dilation + 1 - dilated - low,
                      w.stride, 1};
        }
        Instruction* term = b_.ReduceWindow(b_.Mul(share, masks[t]), place, ReduceKind::kAdd);
        sum = sum == nullptr ? term : b_.Add(sum, term);
      }
      return sum;
    });
  }

  void HandleTopK(const Instruction& i) override {
    // values[..., j] = x[..., idx[..., j]]: dx[..., m] = sum over j with idx[..., j] == m of g.
    if (adj_.elements.empty() || adj_.elements[0] == nullptr) return;
    Acc(i, 0, [&] {
      Instruction* g = adj_.elements[0];
      const Shape& x = i.operand(0)->shape;
      const int64_t r = x.rank();
      std::vector<int64_t> wide = g->shape.dims;  // [..., k, n]
      wide.push_back(x.dims.back());
      Instruction* idx = b_.GetTupleElement(Y(i), 1);
      Instruction* hit = b_.Compare(b_.Broadcast(idx, wide, Iota(0, r)),
                                    b_.Iota(Shape(DType::kS32, wide), r), Comparison::kEq);
      Instruction* spread =
          b_.Select(hit, b_.Broadcast(g, wide, Iota(0, r)), b_.Zeros(Shape(x.dtype, wide)));
      return b_.Reduce(spread, {r - 1}, ReduceKind::kAdd);
    });
  }

  void HandleTuple(const Instruction& i) override {
    for (size_t k = 0; k < i.operands.size() && k < adj_.elements.size(); ++k) {
      if (adj_.elements[k] == nullptr) continue;
      if (i.operand(k)->shape.is_tuple) NoRule(i, "a tuple inside a tuple");
      Acc(i, k, [&] { return adj_.elements[k]; });
    }
  }
  void HandleGetTupleElement(const Instruction& i) override {
    const Instruction* t = i.operand(0);
    if (!f_.active.count(t)) return;
    Adjoint& a = f_.adjoint[t];
    a.elements.resize(t->shape.tuple_shapes.size(), nullptr);
    Instruction*& e = a.elements[static_cast<size_t>(i.tuple_index)];
    e = e == nullptr ? g_ : b_.Add(e, g_);
  }
  void HandleLoop(const Instruction& i) override {
    const std::vector<Instruction*> adjoints = LoopVjp(d_, b_, f_, adj_, i);
    for (size_t k = 0; k < adjoints.size(); ++k) {
      if (adjoints[k] != nullptr) Acc(i, k, [&] { return adjoints[k]; });
    }
  }

 private:
  // Adds make() to the adjoint of operand k of i, if that operand carries a gradient.
  template <typename F>
  void Acc(const Instruction& i, size_t k, F&& make) {
    const Instruction* o = i.operand(k);
    if (!f_.active.count(o) || o->shape.is_tuple) return;
    Instruction* v = make();
    Instruction*& a = f_.adjoint[o].array;
    a = a == nullptr ? v : b_.Add(a, v);
  }

  Instruction* X(const Instruction& i, size_t k) { return f_.value.at(i.operand(k)); }
  Instruction* Y(const Instruction& i) { return f_.value.at(&i); }

  std::vector<Instruction*> Starts(const Instruction& i, size_t first) {
    std::vector<Instruction*> s;
    for (size_t k = first; k < i.operands.size(); ++k) s.push_back(X(i, k));
    return s;
  }

  // max / min: the adjoint goes to the operand that wins, half to each on a tie.
  void Choose(const Instruction& i, Comparison wins) {
    if (!f_.active.count(i.operand(0)) && !f_.active.count(i.operand(1))) return;
    Instruction* a = X(i, 0);
    Instruction* c = X(i, 1);
    Instruction* w0 = b_.Select(
        b_.Compare(a, c, wins), b_.Full(i.shape, 1.0),
        b_.Select(b_.Compare(a, c, Comparison::kEq), b_.Full(i.shape, 0.5), b_.Zeros(i.shape)));
    Acc(i, 0, [&] { return b_.Mul(g_, w0); });
    Acc(i, 1, [&] { return b_.Mul(g_, b_.Sub(b_.Full(i.shape, 1.0), w0)); });
  }

  static std::vector<int64_t> Free(int64_t rank, const std::vector<int64_t>& batch,
                                   const std::vector<int64_t>& contracting) {
    std::vector<int64_t> free;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
        free.push_back(d);
      }
    }
    return free;
  }

  // r is [batch, own free, other's free...] where the last part lists the operand's contracting
  // dims by the other operand's matching dims in ascending order; transposes r into the
  // operand's layout.
  Instruction* ToLayout(Instruction* r, int64_t rank, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& free, const std::vector<int64_t>& contracting,
                        const std::vector<int64_t>& other_contracting, int64_t contracted_at) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (size_t k = 0; k < batch.size(); ++k) perm[static_cast<size_t>(batch[k])] = static_cast<int64_t>(k);
    for (size_t k = 0; k < free.size(); ++k) {
      perm[static_cast<size_t>(free[k])] = static_cast<int64_t>(batch.size() + k);
    }
    for (size_t k = 0; k < contracting.size(); ++k) {
      int64_t below = 0;  // the other side's contracting dims before this one's partner
      for (int64_t o : other_contracting) below += o < other_contracting[k] ? 1 : 0;
      perm[static_cast<size_t>(contracting[k])] = contracted_at + below;
    }
    return perm == Iota(0, rank) ? r : b_.Transpose(r, perm);
  }

  Differentiator& d_;
  Builder& b_;
  Frame& f_;
  const Adjoint& adj_;
  Instruction* g_;
};

}  // namespace

void ApplyVjp(Differentiator& d, Builder& b, Frame& f, const Adjoint& adjoint,
              const Instruction& i) {
  Vjp rule(d, b, f, adjoint);
  Accept(i, rule);
}

}  // namespace podsim::ir::autodiff
