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

Literal EvalGeneralReduce(const Instruction& instr, const Operands& ops,
                          const std::function<Literal(std::vector<Literal>)>& apply) {
  const size_t n = ops.size() / 2;
  if (n == 0 || ops.size() % 2 != 0) Fail(instr, "a general reduction takes inputs and as many inits");
  const Shape& in = ops[0]->shape;
  for (size_t k = 0; k < n; ++k) {
    if (ops[k]->shape.is_tuple || ops[k]->shape.dims != in.dims || !ops[n + k]->shape.dims.empty() ||
        ops[n + k]->shape.is_tuple) {
      Fail(instr, "a general reduction needs inputs of one shape and scalar inits");
    }
  }
  const int64_t rank = in.rank();
  std::vector<char> reduced(static_cast<size_t>(rank), 0);
  for (int64_t d : instr.dimensions) {
    if (d < 0 || d >= rank || reduced[static_cast<size_t>(d)]) Fail(instr, "bad region_dims");
    reduced[static_cast<size_t>(d)] = 1;
  }
  std::vector<int64_t> kept_dims, red_dims, kept_of, red_of;
  for (int64_t d = 0; d < rank; ++d) {
    (reduced[static_cast<size_t>(d)] ? red_dims : kept_dims).push_back(in.dims[static_cast<size_t>(d)]);
    (reduced[static_cast<size_t>(d)] ? red_of : kept_of).push_back(d);
  }
  const std::vector<int64_t> strides = Strides(in.dims);
  int64_t out_elements = 1;
  for (int64_t e : kept_dims) out_elements *= e;
  std::vector<std::vector<double>> results(n, std::vector<double>(static_cast<size_t>(out_elements)));
  ForEachIndex(kept_dims, [&](const std::vector<int64_t>& kept, int64_t out) {
    int64_t base = 0;
    for (size_t j = 0; j < kept.size(); ++j) base += kept[j] * strides[static_cast<size_t>(kept_of[j])];
    std::vector<Literal> acc;
    for (size_t k = 0; k < n; ++k) acc.push_back(*ops[n + k]);
    ForEachIndex(red_dims, [&](const std::vector<int64_t>& r, int64_t) {
      int64_t at = base;
      for (size_t j = 0; j < r.size(); ++j) at += r[j] * strides[static_cast<size_t>(red_of[j])];
      std::vector<Literal> args = acc;
      for (size_t k = 0; k < n; ++k) {
        args.push_back(Literal::Scalar(ops[k]->shape.dtype, ops[k]->values[static_cast<size_t>(at)]));
      }
      Literal next = apply(std::move(args));
      if (n == 1 && !next.shape.is_tuple) {
        acc[0] = std::move(next);
      } else if (next.shape.is_tuple && next.elements.size() == n) {
        for (size_t k = 0; k < n; ++k) acc[k] = std::move(next.elements[k]);
      } else {
        Fail(instr, "its computation returns " + next.shape.ToString() + ", not " +
                        std::to_string(n) + " scalar(s)");
      }
    });
    for (size_t k = 0; k < n; ++k) results[k][static_cast<size_t>(out)] = acc[k].values.at(0);
  });
  std::vector<Literal> outs;
  for (size_t k = 0; k < n; ++k) {
    outs.emplace_back(Shape(ops[n + k]->shape.dtype, kept_dims), std::move(results[k]));
  }
  if (!instr.shape.is_tuple) return std::move(outs[0]);
  return Literal::Tuple(std::move(outs));
}

Literal EvalGeneralSort(const Instruction& instr, const Operands& ops,
                        const std::function<Literal(std::vector<Literal>)>& compare) {
  if (ops.empty()) Fail(instr, "a sort takes at least one array");
  const Shape& in = ops[0]->shape;
  for (const Literal* o : ops) {
    if (o->shape.is_tuple || o->shape.dims != in.dims) Fail(instr, "a sort needs arrays of one shape");
  }
  if (instr.dimensions.size() != 1 || instr.dimensions[0] < 0 || instr.dimensions[0] >= in.rank()) {
    Fail(instr, "a sort needs one region_dims dim of its arrays");
  }
  const int64_t d = instr.dimensions[0];
  const int64_t len = in.dims[static_cast<size_t>(d)];
  const int64_t stride = Strides(in.dims)[static_cast<size_t>(d)];
  std::vector<int64_t> outer = in.dims;
  outer[static_cast<size_t>(d)] = 1;
  std::vector<std::vector<double>> out;
  for (const Literal* o : ops) out.push_back(o->values);
  const auto less = [&](int64_t base, int64_t a, int64_t b) {
    std::vector<Literal> args;
    for (const Literal* o : ops) {
      args.push_back(Literal::Scalar(o->shape.dtype, o->values[static_cast<size_t>(base + a * stride)]));
      args.push_back(Literal::Scalar(o->shape.dtype, o->values[static_cast<size_t>(base + b * stride)]));
    }
    const Literal r = compare(std::move(args));
    if (r.shape.is_tuple || r.values.size() != 1) Fail(instr, "its comparator must return a scalar");
    return r.values[0] != 0;
  };
  const std::vector<int64_t> strides = Strides(in.dims);
  std::vector<int64_t> order(static_cast<size_t>(len)), scratch(static_cast<size_t>(len));
  ForEachIndex(outer, [&](const std::vector<int64_t>& index, int64_t) {
    int64_t base = 0;
    for (size_t j = 0; j < index.size(); ++j) base += index[j] * strides[j];
    std::iota(order.begin(), order.end(), int64_t{0});
    // Bottom-up merge sort: stable, and bounded whatever the comparator answers.
    for (int64_t width = 1; width < len; width *= 2) {
      for (int64_t lo = 0; lo < len; lo += 2 * width) {
        const int64_t mid = std::min(lo + width, len), hi = std::min(lo + 2 * width, len);
        int64_t a = lo, b = mid, k = lo;
        while (a < mid && b < hi) {
          scratch[static_cast<size_t>(k++)] =
              less(base, order[static_cast<size_t>(b)], order[static_cast<size_t>(a)])
                  ? order[static_cast<size_t>(b++)]
                  : order[static_cast<size_t>(a++)];
        }
        while (a < mid) scratch[static_cast<size_t>(k++)] = order[static_cast<size_t>(a++)];
        while (b < hi) scratch[static_cast<size_t>(k++)] = order[static_cast<size_t>(b++)];
      }
      order.swap(scratch);
    }
    for (size_t k = 0; k < ops.size(); ++k) {
      for (int64_t p = 0; p < len; ++p) {
        out[k][static_cast<size_t>(base + p * stride)] =
            ops[k]->values[static_cast<size_t>(base + order[static_cast<size_t>(p)] * stride)];
      }
    }
  });
  std::vector<Literal> outs;
  for (size_t k = 0; k < ops.size(); ++k) outs.emplace_back(ops[k]->shape, std::move(out[k]));
  if (!instr.shape.is_tuple) return std::move(outs[0]);
  return Literal::Tuple(std::move(outs));
}

}  // namespace podsim::ir::interp
