// The HLO importer's indexing and ordering ops (ir/hlo_import_lower.h): XLA's general gather,
// sort with a comparator, and reduce-precision (scatter, its mirror: hlo_import_scatter.cc).
//
// A gather whose indexed dims take one element each (every form the corpus has: embedding
// lookups, point gathers, batched gathers) is podsim's one-axis gather on the operand with
// its indexed dims moved to the front and flattened, at the row-major linear index of the
// clamped start indices; a batching dim is an indexed dim whose index is the iota of its
// paired indices dim. The result is then reshaped and transposed into XLA's dim order.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "ir/hlo_import_indexing.h"
#include "ir/hlo_import_lower.h"

namespace podsim::ir::hlo_internal {

Instruction* Lowerer::StartComponent(Computation* c, const HloInstr& h, Instruction* idx,
                                     int64_t ivd, int64_t k, const std::vector<int64_t>& batch_dims,
                                     const std::string& tag) {
  const Shape& is = idx->shape;
  if (ivd == is.rank()) return idx;  // one component: the indices themselves
  Shape one = is;
  one.dims[static_cast<size_t>(ivd)] = 1;
  Instruction* comp = Make(c, h, Opcode::kSlice, one, {idx}, "start_" + tag, [&](Instruction& a) {
    a.slice_starts.assign(is.dims.size(), 0);
    a.slice_limits = is.dims;
    a.slice_strides.assign(is.dims.size(), 1);
    a.slice_starts[static_cast<size_t>(ivd)] = k;
    a.slice_limits[static_cast<size_t>(ivd)] = k + 1;
  });
  return Make(c, h, Opcode::kReshape, Shape(is.dtype, batch_dims), {comp}, "startr_" + tag);
}

Instruction* Lowerer::LowerGather(Computation* c, const Values& v, const HloInstr& h) {
  RequireOperands(h, 2);
  Instruction* x = Operand(v, h, 0);
  Instruction* idx = Operand(v, h, 1);
  auto fail = [&](const std::string& what) {
    Fail(h.opcode_loc, "gather " + h.name + ": " + what);
  };
  if (x->shape.is_tuple || idx->shape.is_tuple || !IsInteger(idx->shape.dtype)) {
    fail("needs an array operand and integer start indices");
  }
  const std::vector<int64_t> offset_dims = ListOf(h, "offset_dims");
  const std::vector<int64_t> collapsed = ListOf(h, "collapsed_slice_dims");
  const std::vector<int64_t> start_map = ListOf(h, "start_index_map");
  const std::vector<int64_t> sizes = ListOf(h, "slice_sizes");
  const std::vector<int64_t> operand_batch = ListOf(h, "operand_batching_dims");
  const std::vector<int64_t> index_batch = ListOf(h, "start_indices_batching_dims");
  const Shape& xs = x->shape;
  const Shape& is = idx->shape;
  const int64_t rank = xs.rank();
  const int64_t ivd = IndexVectorDim(h, is, start_map.size(), "start_index_map", fail);
  if (static_cast<int64_t>(sizes.size()) != rank) {
    fail("slice_sizes needs one size per dim of " + xs.ToString());
  }
  if (operand_batch.size() != index_batch.size()) {
    fail("operand_batching_dims and start_indices_batching_dims differ in length");
  }
  auto operand_dim = [&](int64_t d, const char* what) {
    if (d < 0 || d >= rank) {
      fail(std::string(what) + " names dim " + std::to_string(d) + " of the rank-" +
           std::to_string(rank) + " operand");
    }
  };
  for (const auto* list : {&start_map, &collapsed, &operand_batch}) {
    std::vector<int64_t> sorted = *list;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      fail("a dim is named twice in its dimension numbers");
    }
  }
  for (int64_t d : start_map) operand_dim(d, "start_index_map");
  for (int64_t d : collapsed) operand_dim(d, "collapsed_slice_dims");
  for (int64_t d : operand_batch) operand_dim(d, "operand_batching_dims");
  for (int64_t j : index_batch) {
    if (j < 0 || j >= is.rank() || j == ivd) {
      fail("start_indices_batching_dims names " + std::to_string(j) +
           ", not a batch dim of the indices " + is.ToString());
    }
  }
  // The indexed dims ("points") and the rest (sliced from 0). An indexed dim whose slice is
  // wider than one element ("windowed") reads slice-size consecutive elements from its clamped
  // start: each becomes a window dim of the index, one element per position.
  std::vector<int64_t> points, rest, windows;  // windows: the windowed points' sizes, in order
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = sizes[static_cast<size_t>(d)];
    const int64_t extent = xs.dims[static_cast<size_t>(d)];
    if (size < 0 || size > extent) {
      fail("slice size " + std::to_string(size) + " of dim " + std::to_string(d) +
           " does not fit " + xs.ToString());
    }
    const bool point = Contains(start_map, d) || Contains(operand_batch, d);
    if ((Contains(collapsed, d) || Contains(operand_batch, d)) && size != 1) {
      fail("dim " + std::to_string(d) + " is collapsed or batching with slice size " +
           std::to_string(size) + "; it must be 1");
    }
    if (Contains(collapsed, d) && !point) {
      fail("collapsed dim " + std::to_string(d) + " is not indexed");
    }
    if (point && size != 1) windows.push_back(size);
    (point ? points : rest).push_back(d);
  }
  if (points.empty()) fail("indexes no dim");

  // Indices batch shape and where each indices dim lands in it.
  std::vector<int64_t> batch_dims;
  for (int64_t j = 0; j < is.rank(); ++j) {
    if (j != ivd) batch_dims.push_back(is.dims[static_cast<size_t>(j)]);
  }
  const Shape batch(DType::kS32, batch_dims);
  auto batch_pos = [&](int64_t j) { return j < ivd ? j : j - 1; };

  // The operand: the rest dims sliced to their sizes, the indexed dims first and flattened.
  Instruction* table = x;
  bool sliced = false;
  for (int64_t d : rest) sliced |= sizes[static_cast<size_t>(d)] != xs.dims[static_cast<size_t>(d)];
  if (sliced) {
    std::vector<int64_t> limits = xs.dims;
    for (int64_t d : rest) limits[static_cast<size_t>(d)] = sizes[static_cast<size_t>(d)];
    table = Make(c, h, Opcode::kSlice, Shape(xs.dtype, limits), {x}, "window", [&](Instruction& a) {
      a.slice_starts.assign(static_cast<size_t>(rank), 0);
      a.slice_limits = limits;
      a.slice_strides.assign(static_cast<size_t>(rank), 1);
    });
  }
  std::vector<int64_t> perm = points;
  perm.insert(perm.end(), rest.begin(), rest.end());
  if (!IsIdentityPermutation(perm)) {
    Shape s(xs.dtype, {});
    for (int64_t d : perm) s.dims.push_back(table->shape.dims[static_cast<size_t>(d)]);
    table = Make(c, h, Opcode::kTranspose, s, {table}, "points_first",
                 [&](Instruction& a) { a.dimensions = perm; });
  }
  int64_t flat = 1;
  for (int64_t d : points) flat *= xs.dims[static_cast<size_t>(d)];
  if (flat > std::numeric_limits<int32_t>::max()) {
    fail("its indexed dims hold " + std::to_string(flat) +
         " elements; podsim's linear index is s32");
  }
  if (points.size() != 1) {
    Shape s(xs.dtype, {flat});
    for (size_t k = points.size(); k < perm.size(); ++k) s.dims.push_back(table->shape.dims[k]);
    table = Make(c, h, Opcode::kReshape, s, {table}, "flat");
  }

  // The linear index, over the batch dims and then the window dims: sum over the indexed dims of
  // (clamp(start, 0, extent - size) + window position) * stride.
  std::vector<int64_t> wide_dims = batch_dims;
  wide_dims.insert(wide_dims.end(), windows.begin(), windows.end());
  const Shape wide(DType::kS32, wide_dims);
  Instruction* linear = nullptr;
  if (points.size() == 1 && operand_batch.empty() && windows.empty()) {
    // One indexed dim: podsim's gather clamps as XLA does.
    linear = idx;
    if (ivd < is.rank()) {
      linear = Make(c, h, Opcode::kReshape, Shape(is.dtype, batch_dims), {idx}, "index");
    }
  } else {
    auto scalar = [&](int64_t value, const std::string& name, const Shape& like) {
      return ScalarLike(c, h, static_cast<double>(value), like, name);
    };
    int64_t stride = flat;
    int64_t window = static_cast<int64_t>(batch_dims.size());  // the next window dim of `wide`
    for (int64_t d : points) {
      const std::string tag = "d" + std::to_string(d);
      const int64_t extent = xs.dims[static_cast<size_t>(d)];
      const int64_t size = sizes[static_cast<size_t>(d)];
      stride /= extent;
      Instruction* comp = nullptr;
      if (auto b = std::find(operand_batch.begin(), operand_batch.end(), d);
          b != operand_batch.end()) {
        const int64_t j = index_batch[static_cast<size_t>(b - operand_batch.begin())];
        comp = Make(c, h, Opcode::kIota, batch, {}, "iota_" + tag,
                    [&](Instruction& a) { a.dimensions = {batch_pos(j)}; });
      } else {
        const int64_t k = std::find(start_map.begin(), start_map.end(), d) - start_map.begin();
        comp = StartComponent(c, h, idx, ivd, k, batch_dims, tag);
        if (comp->shape.dtype != DType::kS32) {
          comp = Make(c, h, Opcode::kConvert, batch, {comp}, "starts32_" + tag);
        }
        comp = Make(c, h, Opcode::kMaximum, batch, {comp, scalar(0, "zero_" + tag, batch)},
                    "lo_" + tag);
        comp = Make(c, h, Opcode::kMinimum, batch,
                    {comp, scalar(extent - size, "max_" + tag, batch)}, "clamped_" + tag);
      }
      if (!windows.empty()) {
        comp = Make(c, h, Opcode::kBroadcast, wide, {comp}, "wide_" + tag, [&](Instruction& a) {
          for (size_t k = 0; k < batch_dims.size(); ++k) a.dimensions.push_back(static_cast<int64_t>(k));
        });
      }
      if (size != 1) {
        Instruction* at = Make(c, h, Opcode::kIota, wide, {}, "window_" + tag,
                               [&](Instruction& a) { a.dimensions = {window}; });
        ++window;
        comp = Make(c, h, Opcode::kAdd, wide, {comp, at}, "windowed_" + tag);
      }
      if (stride != 1) {
        comp = Make(c, h, Opcode::kMultiply, wide, {comp, scalar(stride, "stride_" + tag, wide)},
                    "scaled_" + tag);
      }
      linear = linear ? Make(c, h, Opcode::kAdd, wide, {linear, comp}, "linear_" + tag) : comp;
    }
  }

  // XLA's result: the batch dims where offset_dims leaves room, the offset dims (every operand
  // dim neither collapsed nor batching, in order; an uncollapsed indexed dim has size 1).
  std::vector<int64_t> offset_sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(collapsed, d) && !Contains(operand_batch, d)) {
      offset_sizes.push_back(sizes[static_cast<size_t>(d)]);
    }
  }
  const int64_t out_rank = static_cast<int64_t>(batch_dims.size() + offset_sizes.size());
  if (offset_dims.size() != offset_sizes.size() ||
      !std::is_sorted(offset_dims.begin(), offset_dims.end())) {
    fail("offset_dims must list, in order, the result dims of the " +
         std::to_string(offset_sizes.size()) + " operand dims neither collapsed nor batching");
  }
  std::vector<int64_t> out_perm(static_cast<size_t>(out_rank), -1);
  for (size_t k = 0; k < offset_dims.size(); ++k) {
    const int64_t p = offset_dims[k];
    if (p < 0 || p >= out_rank || out_perm[static_cast<size_t>(p)] != -1) {
      fail("offset_dims names result dim " + std::to_string(p) + " twice or out of range");
    }
    out_perm[static_cast<size_t>(p)] = static_cast<int64_t>(batch_dims.size() + k);
  }
  int64_t next_batch = 0;
  for (int64_t& p : out_perm) {
    if (p == -1) p = next_batch++;
  }
  // podsim's gather gives [batch, windows, rest]; the windowed and rest dims go back into the
  // operand's order, then the unit dims of uncollapsed points are put in (offset form).
  Shape gathered(xs.dtype, wide_dims);
  std::vector<int64_t> gathered_from;  // operand dim of each dim after the batch dims
  for (int64_t d : points) {
    if (sizes[static_cast<size_t>(d)] != 1) gathered_from.push_back(d);
  }
  for (size_t k = points.size(); k < perm.size(); ++k) {
    gathered.dims.push_back(table->shape.dims[k]);
    gathered_from.push_back(perm[k]);
  }
  Shape offset_form(xs.dtype, batch_dims);
  offset_form.dims.insert(offset_form.dims.end(), offset_sizes.begin(), offset_sizes.end());
  std::vector<int64_t> in_order(gathered_from.size());
  std::iota(in_order.begin(), in_order.end(), int64_t{0});
  std::stable_sort(in_order.begin(), in_order.end(), [&](int64_t a, int64_t b) {
    return gathered_from[static_cast<size_t>(a)] < gathered_from[static_cast<size_t>(b)];
  });
  std::vector<int64_t> to_order;
  for (size_t k = 0; k < batch_dims.size(); ++k) to_order.push_back(static_cast<int64_t>(k));
  for (int64_t k : in_order) to_order.push_back(static_cast<int64_t>(batch_dims.size()) + k);
  const bool reorder = !IsIdentityPermutation(to_order);
  Shape ordered(xs.dtype, {});
  for (int64_t k : to_order) ordered.dims.push_back(gathered.dims[static_cast<size_t>(k)]);
  const bool reshape = offset_form != ordered;
  const bool transpose = !IsIdentityPermutation(out_perm);
  Instruction* g = Make(c, h, Opcode::kGather, gathered, {table, linear},
                        reorder || reshape || transpose ? "take" : "",
                        [](Instruction& a) { a.dimensions = {0}; });
  if (reorder) {
    g = Make(c, h, Opcode::kTranspose, ordered, {g}, "operand_order",
             [&](Instruction& a) { a.dimensions = to_order; });
  }
  if (reshape) g = Make(c, h, Opcode::kReshape, offset_form, {g}, transpose ? "offsets" : "");
  if (transpose) {
    Shape s(xs.dtype, {});
    for (int64_t p : out_perm) s.dims.push_back(offset_form.dims[static_cast<size_t>(p)]);
    g = Make(c, h, Opcode::kTranspose, s, {g}, "",
             [&](Instruction& a) { a.dimensions = out_perm; });
  }
  if (g->shape != h.shape) {
    Fail(h.shape_loc, "gather " + h.name + ": shape " + h.shape.ToString() +
                          " does not match its dimension numbers, which give " +
                          g->shape.ToString());
  }
  return g;
}

Instruction* Lowerer::LowerSort(Computation* c, const Values& v, const HloInstr& h) {
  // One array ordered by compare(parameter(0), parameter(1)) GT or LT is podsim's stable sort
  // (a stable order is one of the orders an unstable sort may give). Sorts of several arrays,
  // or by another comparator, are opaque kernels that read and write their arrays.
  if (h.operands.size() == 1 && h.to_apply && h.attrs.dimensions.size() == 1) {
    const HloComputation& cmp = Callee(*h.to_apply);
    const HloInstr& root = cmp.instrs[cmp.root];
    auto param = [&](size_t k) -> int64_t {
      auto it = cmp.by_name.find(root.operands[k].name);
      if (it == cmp.by_name.end() || cmp.instrs[it->second].opcode != "parameter") return -1;
      return cmp.instrs[it->second].attrs.parameter_number;
    };
    const Comparison dir = root.attrs.comparison;
    if (root.opcode == "compare" && root.operands.size() == 2 &&
        (dir == Comparison::kGt || dir == Comparison::kLt)) {
      const int64_t a = param(0), b = param(1);
      if ((a == 0 && b == 1) || (a == 1 && b == 0)) {
        const bool descending = (dir == Comparison::kGt) == (a == 0);
        return Make(c, h, Opcode::kSort, h.shape, {Operand(v, h, 0)}, "", [&](Instruction& s) {
          s.dimensions = h.attrs.dimensions;
          s.descending = descending;
        });
      }
    }
  }
  // Kept with its comparator and dim, so the interpreter can apply it.
  Instruction* opaque = Opaque(c, v, h, 0);
  return h.to_apply && h.attrs.dimensions.size() == 1 ? WithRegion(opaque, h) : opaque;
}

Instruction* Lowerer::LowerReducePrecision(Computation* c, const Values& v, const HloInstr& h) {
  // Rounding to e exponent and m mantissa bits: nothing for a type no wider, a round trip
  // through bf16 for f32 at (8, 7) (the same rounding, with f32's exponent range); any other
  // format is an elementwise kernel whose values are not interpreted.
  RequireOperands(h, 1);
  Instruction* x = Operand(v, h, 0);
  if (x->shape.is_tuple || !IsFloating(x->shape.dtype) || h.exponent_bits < 1 ||
      h.mantissa_bits < 0) {
    Fail(h.opcode_loc, "reduce-precision " + h.name +
                           " needs a floating-point operand, exponent_bits= and mantissa_bits=");
  }
  struct Format {
    DType type;
    int64_t e, m;
  };
  static constexpr Format kFormats[] = {{DType::kF64, 11, 52},  {DType::kF32, 8, 23},
                                        {DType::kBF16, 8, 7},   {DType::kF16, 5, 10},
                                        {DType::kF8E5M2, 5, 2}, {DType::kF8E4M3FN, 4, 3}};
  const Format* f = nullptr;
  for (const Format& k : kFormats) {
    if (k.type == x->shape.dtype) f = &k;
  }
  if (f && h.exponent_bits >= f->e && h.mantissa_bits >= f->m) return x;
  if (x->shape.dtype == DType::kF32 && h.exponent_bits >= 8 && h.mantissa_bits == 7) {
    Instruction* narrow =
        Make(c, h, Opcode::kConvert, Shape(DType::kBF16, x->shape.dims), {x}, "bf16");
    return Make(c, h, Opcode::kConvert, h.shape, {narrow}, "");
  }
  return Opaque(c, v, h, static_cast<double>(x->shape.NumElements()));
}

}  // namespace podsim::ir::hlo_internal
