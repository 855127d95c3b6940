// Data movement: broadcast, reshape, transpose, slice, dynamic-slice, dynamic-update-slice, pad,
// concatenate, reverse, gather. Values move unchanged (they already have the result dtype).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

Literal Transposed(const Literal& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> dims;
  for (int64_t d : perm) dims.push_back(x.shape.dims[d]);
  Literal out = Literal::Zeros(Shape(x.shape.dtype, dims));
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  // Input stride of each output dim.
  std::vector<int64_t> step;
  for (int64_t d : perm) step.push_back(in_strides[d]);
  ForEachIndex(dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * step[d];
    out.values[linear] = x.values[src];
  });
  return out;
}

namespace {

// Start index of a dynamic slice along dim d: the s32 operand clamped to [0, dim - size].
int64_t ClampedStart(const Literal& start, int64_t dim, int64_t size) {
  const int64_t s = static_cast<int64_t>(start.values.at(0));
  return std::clamp<int64_t>(s, 0, std::max<int64_t>(dim - size, 0));
}

Literal Broadcast(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t k = 0; k < i.dimensions.size(); ++k) src += idx[i.dimensions[k]] * in_strides[k];
    out.values[linear] = x.values[src];
  });
  return out;
}

Literal Slice(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      src += (i.slice_starts[d] + idx[d] * i.slice_strides[d]) * in_strides[d];
    }
    out.values[linear] = x.values[src];
  });
  return out;
}

Literal DynamicSlice(const Instruction& i, const Operands& ops) {
  const Literal& x = *ops[0];
  const size_t rank = x.shape.dims.size();
  std::vector<int64_t> starts(rank);
  for (size_t d = 0; d < rank; ++d) {
    starts[d] = ClampedStart(*ops[1 + d], x.shape.dims[d], i.slice_sizes[d]);
  }
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += (starts[d] + idx[d]) * in_strides[d];
    out.values[linear] = x.values[src];
  });
  return out;
}

Literal DynamicUpdateSlice(const Instruction& i, const Operands& ops) {
  const Literal& x = *ops[0];
  const Literal& update = *ops[1];
  const size_t rank = x.shape.dims.size();
  std::vector<int64_t> starts(rank);
  for (size_t d = 0; d < rank; ++d) {
    starts[d] = ClampedStart(*ops[2 + d], x.shape.dims[d], update.shape.dims[d]);
  }
  Literal out = x;
  const std::vector<int64_t> out_strides = Strides(x.shape.dims);
  ForEachIndex(update.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t dst = 0;
    for (size_t d = 0; d < rank; ++d) dst += (starts[d] + idx[d]) * out_strides[d];
    out.values[dst] = update.values[linear];
  });
  return out;
}

Literal Pad(const Instruction& i, const Literal& x, double pad_value) {
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    // Output position o maps to p = o - low in the interior-dilated operand; p lands on operand
    // element p / (interior + 1) when it is a multiple of interior + 1 inside the operand.
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      const PadDim& pd = i.padding[d];
      const int64_t p = idx[d] - pd.low;
      const int64_t step = pd.interior + 1;
      if (p < 0 || p % step != 0 || p / step >= x.shape.dims[d]) {
        out.values[linear] = pad_value;
        return;
      }
      src += (p / step) * in_strides[d];
    }
    out.values[linear] = x.values[src];
  });
  return out;
}

Literal Concatenate(const Instruction& i, const Operands& ops) {
  Literal out = Literal::Zeros(i.shape);
  const int64_t axis = i.dimensions.at(0);
  const std::vector<int64_t> out_strides = Strides(i.shape.dims);
  int64_t offset = 0;
  for (const Literal* x : ops) {
    ForEachIndex(x->shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
      int64_t dst = offset * out_strides[axis];
      for (size_t d = 0; d < idx.size(); ++d) dst += idx[d] * out_strides[d];
      out.values[dst] = x->values[linear];
    });
    offset += x->shape.dims[axis];
  }
  return out;
}

Literal Reverse(const Instruction& i, const Literal& x) {
  Literal out = Literal::Zeros(i.shape);
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  std::vector<bool> reversed(x.shape.dims.size(), false);
  for (int64_t d : i.dimensions) reversed[d] = true;
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      src += (reversed[d] ? x.shape.dims[d] - 1 - idx[d] : idx[d]) * in_strides[d];
    }
    out.values[linear] = x.values[src];
  });
  return out;
}

// out[pre..., j..., post...] = x[pre..., clamp(indices[j...], 0, n - 1), post...].
Literal Gather(const Instruction& i, const Literal& x, const Literal& indices) {
  Literal out = Literal::Zeros(i.shape);
  const int64_t axis = i.dimensions.at(0);
  const int64_t n = x.shape.dims[axis];
  const size_t index_rank = indices.shape.dims.size();
  const std::vector<int64_t> in_strides = Strides(x.shape.dims);
  const std::vector<int64_t> index_strides = Strides(indices.shape.dims);
  if (n == 0 && out.NumElements() > 0) Fail(i, "gathers from an empty axis");
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t j = 0;
    for (size_t k = 0; k < index_rank; ++k) j += idx[axis + k] * index_strides[k];
    const int64_t row =
        std::clamp<int64_t>(static_cast<int64_t>(indices.values[j]), 0, n - 1);
    int64_t src = row * in_strides[axis];
    for (int64_t d = 0; d < axis; ++d) src += idx[d] * in_strides[d];
    for (size_t d = axis + 1; d < x.shape.dims.size(); ++d) {
      src += idx[d - 1 + index_rank] * in_strides[d];
    }
    out.values[linear] = x.values[src];
  });
  return out;
}

}  // namespace

Literal LocalEvaluator::HandleBroadcast(const Instruction& i) { return Broadcast(i, Op(0)); }
Literal LocalEvaluator::HandleReshape(const Instruction& i) {
  Literal out = Op(0);
  out.shape = i.shape;
  return out;
}
Literal LocalEvaluator::HandleTranspose(const Instruction& i) {
  return Transposed(Op(0), i.dimensions);
}
Literal LocalEvaluator::HandleSlice(const Instruction& i) { return Slice(i, Op(0)); }
Literal LocalEvaluator::HandleDynamicSlice(const Instruction& i) { return DynamicSlice(i, ops_); }
Literal LocalEvaluator::HandleDynamicUpdateSlice(const Instruction& i) {
  return DynamicUpdateSlice(i, ops_);
}
Literal LocalEvaluator::HandlePad(const Instruction& i) {
  return Pad(i, Op(0), Op(1).values.at(0));
}
Literal LocalEvaluator::HandleConcatenate(const Instruction& i) { return Concatenate(i, ops_); }
Literal LocalEvaluator::HandleReverse(const Instruction& i) { return Reverse(i, Op(0)); }
Literal LocalEvaluator::HandleGather(const Instruction& i) { return Gather(i, Op(0), Op(1)); }

}  // namespace podsim::ir::interp
