// Reductions and orderings: reduce, argmax, reduce-window, cumsum, sort, top-k.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

namespace {

// A dim of `dims` seen as [outer, n, inner] row-major: element (o, j, in) is at
// (o * n + j) * inner + in.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  Lines(const std::vector<int64_t>& dims, int64_t d) {
    for (int64_t k = 0; k < d; ++k) outer *= dims[k];
    n = dims[d];
    for (size_t k = d + 1; k < dims.size(); ++k) inner *= dims[k];
  }
  int64_t At(int64_t o, int64_t j, int64_t in) const { return (o * n + j) * inner + in; }
};

// Strict order of sort and top-k: numbers ascending, NaN above every number.
bool Less(double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

Literal Reduce(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  std::vector<Accumulator> acc(out.values.size(), Accumulator(i.reduce_kind, i.shape.dtype));
  // Output stride of each operand dim; 0 for reduced dims.
  std::vector<int64_t> step(x.shape.dims.size(), 0);
  const std::vector<int64_t> out_strides = Strides(i.shape.dims);
  for (size_t d = 0, kept = 0; d < x.shape.dims.size(); ++d) {
    if (std::find(i.dimensions.begin(), i.dimensions.end(), static_cast<int64_t>(d)) ==
        i.dimensions.end()) {
      step[d] = out_strides[kept++];
    }
  }
  // Operand elements are folded in row-major order: a fixed, deterministic order.
  ForEachIndex(x.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d) dst += idx[d] * step[d];
    acc[dst].Add(x.values[linear]);
  });
  for (size_t k = 0; k < acc.size(); ++k) out.values[k] = acc[k].Result();
  return out;
}

// Index of the first maximum along the dim; a NaN counts as the maximum (the first NaN wins).
Literal Argmax(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  const Lines l(x.shape.dims, i.dimensions.at(0));
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t in = 0; in < l.inner; ++in) {
      int64_t best = 0;
      for (int64_t j = 1; j < l.n; ++j) {
        if (Less(x.values[l.At(o, best, in)], x.values[l.At(o, j, in)])) best = j;
      }
      out.values[o * l.inner + in] = static_cast<double>(best);
    }
  }
  return out;
}

// Each output element reduces the window taps that land on operand elements of the padded,
// base-dilated operand (p = o * stride + t * window_dilation - pad_low, as in convolution);
// taps on padding or dilation holes contribute the identity.
Literal ReduceWindow(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> xs = Strides(x.shape.dims);
  std::vector<int64_t> sizes;
  for (const WindowDim& w : i.window) sizes.push_back(w.size);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& o, int64_t linear) {
    Accumulator acc(i.reduce_kind, i.shape.dtype);
    ForEachIndex(sizes, [&](const std::vector<int64_t>& t, int64_t) {
      int64_t src = 0;
      for (size_t d = 0; d < o.size(); ++d) {
        const WindowDim& w = i.window[d];
        const int64_t p = o[d] * w.stride + t[d] * w.window_dilation - w.pad_low;
        if (p < 0 || p % w.base_dilation != 0 || p / w.base_dilation >= x.shape.dims[d]) return;
        src += (p / w.base_dilation) * xs[d];
      }
      acc.Add(x.values[src]);
    });
    out.values[linear] = acc.Result();
  });
  return out;
}

// Inclusive: out[j] = x[0] + ... + x[j]; exclusive: x[0] + ... + x[j-1] (0 for j = 0). Sums
// are exact prefix sums (double, or int64 for s32) rounded per output element.
Literal Cumsum(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  const Lines l(x.shape.dims, i.dimensions.at(0));
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t in = 0; in < l.inner; ++in) {
      Accumulator acc(ReduceKind::kAdd, i.shape.dtype);
      for (int64_t j = 0; j < l.n; ++j) {
        const int64_t k = l.At(o, j, in);
        if (i.exclusive) out.values[k] = acc.Result();
        acc.Add(x.values[k]);
        if (!i.exclusive) out.values[k] = acc.Result();
      }
    }
  }
  return out;
}

// Stable sort of each line along the dim; NaN sorts above every number.
Literal Sort(const Instruction& i, const Literal& x) {
  Literal out = x;
  const Lines l(x.shape.dims, i.dimensions.at(0));
  std::vector<double> line(l.n);
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t in = 0; in < l.inner; ++in) {
      for (int64_t j = 0; j < l.n; ++j) line[j] = x.values[l.At(o, j, in)];
      if (i.descending) {
        std::stable_sort(line.begin(), line.end(), [](double a, double b) { return Less(b, a); });
      } else {
        std::stable_sort(line.begin(), line.end(), Less);
      }
      for (int64_t j = 0; j < l.n; ++j) out.values[l.At(o, j, in)] = line[j];
    }
  }
  return out;
}

// The k largest of each row (last dim), largest first; ties keep the lower index first.
Literal TopK(const Instruction& i, const Literal& x) {
  const int64_t n = x.shape.dims.back();
  const int64_t rows = n == 0 ? 0 : x.NumElements() / n;
  const int64_t k = i.k;
  Shape values_shape = x.shape;
  values_shape.dims.back() = k;
  Shape index_shape(DType::kS32, values_shape.dims);
  Literal values = Literal::Zeros(values_shape);
  Literal indices = Literal::Zeros(index_shape);
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.values.data() + r * n;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [row](int64_t a, int64_t b) { return Less(row[b], row[a]); });
    for (int64_t j = 0; j < k; ++j) {
      values.values[r * k + j] = row[order[j]];
      indices.values[r * k + j] = static_cast<double>(order[j]);
    }
  }
  return Literal::Tuple({std::move(values), std::move(indices)});
}

}  // namespace

Literal LocalEvaluator::HandleReduce(const Instruction& i) { return Reduce(i, Op(0)); }
Literal LocalEvaluator::HandleArgmax(const Instruction& i) { return Argmax(i, Op(0)); }
Literal LocalEvaluator::HandleReduceWindow(const Instruction& i) {
  return ReduceWindow(i, Op(0));
}
Literal LocalEvaluator::HandleCumsum(const Instruction& i) { return Cumsum(i, Op(0)); }
Literal LocalEvaluator::HandleSort(const Instruction& i) { return Sort(i, Op(0)); }
Literal LocalEvaluator::HandleTopK(const Instruction& i) { return TopK(i, Op(0)); }

}  // namespace podsim::ir::interp
