// Custom-calls that apply a called computation (an imported XLA program's general reduction,
// sort, scatter, reduce-window and select-and-scatter's window selection). The computation
// runs on scalars through `apply`, one application at a time, in a fixed order, so the result
// is deterministic whatever the computation does (interpreter_internal.h).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

namespace {

// The n scalars a computation returned: a scalar (n = 1) or a tuple of n scalars.
void TakeResults(const Instruction& instr, Literal next, std::vector<Literal>& acc) {
  const size_t n = acc.size();
  if (n == 1 && !next.shape.is_tuple && next.values.size() == 1) {
    acc[0] = std::move(next);
    return;
  }
  if (next.shape.is_tuple && next.elements.size() == n) {
    for (size_t k = 0; k < n; ++k) {
      if (next.elements[k].shape.is_tuple || next.elements[k].values.size() != 1) break;
      if (k + 1 == n) {
        for (size_t j = 0; j < n; ++j) acc[j] = std::move(next.elements[j]);
        return;
      }
    }
  }
  Fail(instr, "its computation returns " + next.shape.ToString() + ", not " + std::to_string(n) +
                  " scalar(s)");
}

Literal ScalarAt(const Literal& x, int64_t at) {
  return Literal::Scalar(x.shape.dtype, x.values[static_cast<size_t>(at)]);
}

// An array result, or a tuple of n.
Literal Outputs(const Instruction& instr, std::vector<Literal> outs) {
  if (!instr.shape.is_tuple) return std::move(outs[0]);
  return Literal::Tuple(std::move(outs));
}

// Calls fn(o, src) for each output index o of a windowed op over `in` (HLO window semantics:
// tap t of output o reads padded, base-dilated position o * stride + t * window_dilation -
// pad_low), with src the row-major position of every tap that lands on an element of `in`, in
// row-major tap order; taps on padding or dilation holes are skipped.
void ForEachWindowTap(const Instruction& instr, const std::vector<int64_t>& in,
                      const std::vector<int64_t>& out,
                      const std::function<void(int64_t out, int64_t src, bool first)>& fn) {
  if (instr.window.size() != in.size() || out.size() != in.size()) {
    Fail(instr, "needs one region_window dim per dim of its input");
  }
  const std::vector<int64_t> strides = Strides(in);
  std::vector<int64_t> sizes;
  for (const WindowDim& w : instr.window) sizes.push_back(w.size);
  ForEachIndex(out, [&](const std::vector<int64_t>& o, int64_t linear) {
    bool first = true;
    ForEachIndex(sizes, [&](const std::vector<int64_t>& t, int64_t) {
      int64_t src = 0;
      for (size_t d = 0; d < o.size(); ++d) {
        const WindowDim& w = instr.window[d];
        const int64_t p = o[d] * w.stride + t[d] * w.window_dilation - w.pad_low;
        if (p < 0 || p % w.base_dilation != 0 || p / w.base_dilation >= in[d]) return;
        src += (p / w.base_dilation) * strides[d];
      }
      fn(linear, src, first);
      first = false;
    });
    if (first) fn(linear, -1, true);
  });
}

// The n of operands that are n inputs of one shape and n scalar inits.
size_t InputsAndInits(const Instruction& instr, const Operands& ops, const std::string& what) {
  const size_t n = ops.size() / 2;
  if (n == 0 || ops.size() % 2 != 0) Fail(instr, what + " takes inputs and as many inits");
  for (size_t k = 0; k < n; ++k) {
    if (ops[k]->shape.is_tuple || ops[k]->shape.dims != ops[0]->shape.dims ||
        !ops[n + k]->shape.dims.empty() || ops[n + k]->shape.is_tuple) {
      Fail(instr, what + " needs inputs of one shape and scalar inits");
    }
  }
  return n;
}

const Shape& FirstShape(const Shape& s) { return s.is_tuple ? s.tuple_shapes.at(0) : s; }

}  // namespace

Literal EvalGeneralReduce(const Instruction& instr, const Operands& ops, const Apply& apply) {
  const size_t n = InputsAndInits(instr, ops, "a general reduction");
  const Shape& in = ops[0]->shape;
  const int64_t rank = in.rank();
  std::vector<char> reduced(static_cast<size_t>(rank), 0);
  for (int64_t d : instr.dimensions) {
    if (d < 0 || d >= rank || reduced[static_cast<size_t>(d)]) Fail(instr, "bad region_dims");
    reduced[static_cast<size_t>(d)] = 1;
  }
  std::vector<int64_t> kept_dims, red_dims, kept_of, red_of;
  for (int64_t d = 0; d < rank; ++d) {
    (reduced[static_cast<size_t>(d)] ? red_dims : kept_dims)
        .push_back(in.dims[static_cast<size_t>(d)]);
    (reduced[static_cast<size_t>(d)] ? red_of : kept_of).push_back(d);
  }
  const std::vector<int64_t> strides = Strides(in.dims);
  int64_t out_elements = 1;
  for (int64_t e : kept_dims) out_elements *= e;
  std::vector<std::vector<double>> results(n,
                                           std::vector<double>(static_cast<size_t>(out_elements)));
  ForEachIndex(kept_dims, [&](const std::vector<int64_t>& kept, int64_t out) {
    int64_t base = 0;
    for (size_t j = 0; j < kept.size(); ++j) {
      base += kept[j] * strides[static_cast<size_t>(kept_of[j])];
    }
    std::vector<Literal> acc;
    for (size_t k = 0; k < n; ++k) acc.push_back(*ops[n + k]);
    ForEachIndex(red_dims, [&](const std::vector<int64_t>& r, int64_t) {
      int64_t at = base;
      for (size_t j = 0; j < r.size(); ++j) at += r[j] * strides[static_cast<size_t>(red_of[j])];
      std::vector<Literal> args = acc;
      for (size_t k = 0; k < n; ++k) args.push_back(ScalarAt(*ops[k], at));
      TakeResults(instr, apply(std::move(args)), acc);
    });
    for (size_t k = 0; k < n; ++k) results[k][static_cast<size_t>(out)] = acc[k].values.at(0);
  });
  std::vector<Literal> outs;
  for (size_t k = 0; k < n; ++k) {
    outs.emplace_back(Shape(ops[n + k]->shape.dtype, kept_dims), std::move(results[k]));
  }
  return Outputs(instr, std::move(outs));
}

Literal EvalGeneralSort(const Instruction& instr, const Operands& ops, const Apply& compare) {
  if (ops.empty()) Fail(instr, "a sort takes at least one array");
  const Shape& in = ops[0]->shape;
  for (const Literal* o : ops) {
    if (o->shape.is_tuple || o->shape.dims != in.dims) {
      Fail(instr, "a sort needs arrays of one shape");
    }
  }
  if (instr.dimensions.size() != 1 || instr.dimensions[0] < 0 || instr.dimensions[0] >= in.rank()) {
    Fail(instr, "a sort needs one region_dims dim of its arrays");
  }
  const int64_t d = instr.dimensions[0];
  const int64_t len = in.dims[static_cast<size_t>(d)];
  const std::vector<int64_t> strides = Strides(in.dims);
  const int64_t stride = strides[static_cast<size_t>(d)];
  std::vector<int64_t> outer = in.dims;
  outer[static_cast<size_t>(d)] = 1;
  std::vector<std::vector<double>> out;
  for (const Literal* o : ops) out.push_back(o->values);
  const auto less = [&](int64_t base, int64_t a, int64_t b) {
    std::vector<Literal> args;
    for (const Literal* o : ops) {
      args.push_back(ScalarAt(*o, base + a * stride));
      args.push_back(ScalarAt(*o, base + b * stride));
    }
    const Literal r = compare(std::move(args));
    if (r.shape.is_tuple || r.values.size() != 1) {
      Fail(instr, "its comparator must return a scalar");
    }
    return r.values[0] != 0;
  };
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
  return Outputs(instr, std::move(outs));
}

Literal EvalGeneralScatter(const Instruction& instr, const Operands& ops, const Apply& combine) {
  const size_t n = ops.size() / 2;
  if (n == 0 || ops.size() % 2 == 0) {
    Fail(instr, "a scatter takes tables, one index array and as many updates");
  }
  const Shape& table = ops[0]->shape;
  const Literal& index = *ops[n];
  if (table.is_tuple || table.rank() < 1 || index.shape.is_tuple) {
    Fail(instr, "a scatter needs array tables of rank >= 1 and an index array");
  }
  std::vector<int64_t> update_dims = index.shape.dims;
  update_dims.insert(update_dims.end(), table.dims.begin() + 1, table.dims.end());
  for (size_t k = 0; k < n; ++k) {
    if (ops[k]->shape.is_tuple || ops[k]->shape.dims != table.dims ||
        ops[n + 1 + k]->shape.is_tuple || ops[n + 1 + k]->shape.dims != update_dims) {
      Fail(instr,
           "a scatter needs tables of one shape [rows, row...] and updates [index..., row...]");
    }
  }
  const int64_t rows = table.dims[0];
  const int64_t row = table.NumElements() / std::max<int64_t>(rows, 1);
  std::vector<Literal> out;
  for (size_t k = 0; k < n; ++k) out.push_back(*ops[k]);
  std::vector<Literal> acc(n);
  for (size_t u = 0; u < index.values.size(); ++u) {
    const double j = index.values[u];
    if (!(j >= 0 && j < static_cast<double>(rows))) continue;  // a skipped window
    const int64_t base = static_cast<int64_t>(j) * row;
    for (int64_t r = 0; r < row; ++r) {
      std::vector<Literal> args;
      for (size_t k = 0; k < n; ++k) args.push_back(ScalarAt(out[k], base + r));
      for (size_t k = 0; k < n; ++k) {
        args.push_back(ScalarAt(*ops[n + 1 + k], static_cast<int64_t>(u) * row + r));
      }
      TakeResults(instr, combine(std::move(args)), acc);
      for (size_t k = 0; k < n; ++k) {
        out[k].values[static_cast<size_t>(base + r)] = acc[k].values[0];
      }
    }
  }
  return Outputs(instr, std::move(out));
}

Literal EvalGeneralReduceWindow(const Instruction& instr, const Operands& ops, const Apply& apply) {
  const size_t n = InputsAndInits(instr, ops, "a reduce-window");
  const Shape& in = ops[0]->shape;
  const std::vector<int64_t>& out_dims = FirstShape(instr.shape).dims;
  std::vector<Literal> outs;
  for (size_t k = 0; k < n; ++k) {
    outs.push_back(Literal::Zeros(Shape(ops[n + k]->shape.dtype, out_dims)));
  }
  std::vector<Literal> acc(n);
  ForEachWindowTap(instr, in.dims, out_dims, [&](int64_t o, int64_t src, bool first) {
    if (first) {
      for (size_t k = 0; k < n; ++k) acc[k] = *ops[n + k];
    }
    if (src >= 0) {
      std::vector<Literal> args = acc;
      for (size_t k = 0; k < n; ++k) args.push_back(ScalarAt(*ops[k], src));
      TakeResults(instr, apply(std::move(args)), acc);
    }
    for (size_t k = 0; k < n; ++k) outs[k].values[static_cast<size_t>(o)] = acc[k].values[0];
  });
  return Outputs(instr, std::move(outs));
}

Literal EvalWindowSelect(const Instruction& instr, const Operands& ops, const Apply& select) {
  if (ops.size() != 1 || ops[0]->shape.is_tuple || instr.shape.is_tuple) {
    Fail(instr, "a window selection takes one array and gives one index array");
  }
  const Literal& x = *ops[0];
  Literal out = Literal::Zeros(instr.shape);
  ForEachWindowTap(instr, x.shape.dims, instr.shape.dims, [&](int64_t o, int64_t src, bool first) {
    double& chosen = out.values[static_cast<size_t>(o)];
    if (first) {  // the first tap on the input (-1: the window holds none)
      chosen = static_cast<double>(src);
      return;
    }
    const Literal keep = select({ScalarAt(x, static_cast<int64_t>(chosen)), ScalarAt(x, src)});
    if (keep.shape.is_tuple || keep.values.size() != 1) {
      Fail(instr, "its select must return a scalar");
    }
    if (keep.values[0] == 0) chosen = static_cast<double>(src);
  });
  return out;
}

}  // namespace podsim::ir::interp
