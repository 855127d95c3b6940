// The HLO importer's scatter (ir/hlo_import_lower.h), the mirror of its gather
// (hlo_import_indexing.cc): the operand's indexed dims first and flattened into rows, one s32
// row index per update batch element and window position, and "xla:scatter" combining each
// update row into its row with the scatter's computation.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ir/hlo_import_indexing.h"
#include "ir/hlo_import_lower.h"

namespace podsim::ir::hlo_internal {

Instruction* Lowerer::LowerScatter(Computation* c, const Values& v, const HloInstr& h) {
  // The operand's indexed dims (and those a window covers only in part) first and flattened to
  // rows [L, rest...]; one s32 row index per (update batch element, window position), -1 where
  // XLA skips the window; the updates transposed to [batch..., window..., rest...]; then
  // "xla:scatter" with the combiner as its region (ir/interpreter_internal.h), reshaped and
  // transposed back into the operand's dim order.
  const size_t n = h.operands.size();
  if (n < 3 || n % 2 == 0) {
    Fail(h.opcode_loc, "scatter " + h.name + " takes operands, indices and as many updates, got " +
                           std::to_string(n) + " operands");
  }
  auto fail = [&](const std::string& what) {
    Fail(h.opcode_loc, "scatter " + h.name + ": " + what);
  };
  const size_t arrays = (n - 1) / 2;
  Instruction* idx = Operand(v, h, arrays);
  std::vector<Shape> operand_shapes;
  for (size_t k = 0; k < arrays; ++k) operand_shapes.push_back(Operand(v, h, k)->shape);
  const Shape expected = arrays == 1 ? operand_shapes[0] : Shape::Tuple(operand_shapes);
  if (expected != h.shape) {
    Fail(h.shape_loc, "scatter " + h.name + ": shape " + h.shape.ToString() +
                          " is not its operands' " + expected.ToString());
  }
  if (!h.to_apply) fail("needs to_apply=");
  const Shape& xs = operand_shapes[0];
  const Shape& is = idx->shape;
  if (idx->shape.is_tuple || !IsInteger(is.dtype)) fail("needs integer scatter indices");
  const int64_t rank = xs.rank();
  const std::vector<int64_t> window_dims = ListOf(h, "update_window_dims");
  const std::vector<int64_t> inserted = ListOf(h, "inserted_window_dims");
  const std::vector<int64_t> to_operand = ListOf(h, "scatter_dims_to_operand_dims");
  const std::vector<int64_t> operand_batch = ListOf(h, "input_batching_dims");
  const std::vector<int64_t> index_batch = ListOf(h, "scatter_indices_batching_dims");
  const int64_t ivd =
      IndexVectorDim(h, is, to_operand.size(), "scatter_dims_to_operand_dims", fail);
  if (operand_batch.size() != index_batch.size()) {
    fail("input_batching_dims and scatter_indices_batching_dims differ in length");
  }
  for (const auto* list : {&to_operand, &inserted, &operand_batch}) {
    std::vector<int64_t> sorted = *list;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      fail("a dim is named twice in its dimension numbers");
    }
    for (int64_t d : sorted) {
      if (d < 0 || d >= rank) {
        fail("dim " + std::to_string(d) + " is not a dim of the operand " + xs.ToString());
      }
    }
  }
  // The indices' batch dims (all but the index vector dim), as the updates' scatter dims.
  std::vector<int64_t> batch_dims;
  for (int64_t j = 0; j < is.rank(); ++j) {
    if (j != ivd) batch_dims.push_back(is.dims[static_cast<size_t>(j)]);
  }
  auto batch_pos = [&](int64_t j) { return j < ivd ? j : j - 1; };
  for (int64_t j : index_batch) {
    if (j < 0 || j >= is.rank() || j == ivd) {
      fail("scatter_indices_batching_dims names " + std::to_string(j) +
           ", not a batch dim of the indices " + is.ToString());
    }
  }
  // Each operand dim's update dim (-1 for inserted and batching dims, of window 1) and window.
  const Shape& us = Operand(v, h, arrays + 1)->shape;
  if (us.is_tuple || us.rank() != static_cast<int64_t>(batch_dims.size() + window_dims.size()) ||
      !std::is_sorted(window_dims.begin(), window_dims.end())) {
    fail("its updates " + us.ToString() +
         " are not the indices' batch dims and the sorted update_window_dims");
  }
  std::vector<int64_t> update_dim_of(static_cast<size_t>(rank), -1),
      window(static_cast<size_t>(rank), 1);
  size_t next_window = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (Contains(inserted, d) || Contains(operand_batch, d)) continue;
    if (next_window == window_dims.size()) fail("update_window_dims has too few dims");
    const int64_t u = window_dims[next_window++];
    if (u < 0 || u >= us.rank()) fail("update_window_dims names dim " + std::to_string(u));
    update_dim_of[static_cast<size_t>(d)] = u;
    window[static_cast<size_t>(d)] = us.dims[static_cast<size_t>(u)];
    if (window[static_cast<size_t>(d)] > xs.dims[static_cast<size_t>(d)]) {
      fail("its update window of " + std::to_string(window[static_cast<size_t>(d)]) +
           " elements does not fit dim " + std::to_string(d) + " of " + xs.ToString());
    }
  }
  if (next_window != window_dims.size()) fail("update_window_dims has too many dims");
  std::vector<int64_t> scatter_update_dims;  // the updates' dims of the indices' batch
  for (int64_t u = 0; u < us.rank(); ++u) {
    if (!Contains(window_dims, u)) scatter_update_dims.push_back(u);
  }
  for (size_t k = 0; k < batch_dims.size(); ++k) {
    if (us.dims[static_cast<size_t>(scatter_update_dims[k])] != batch_dims[k]) {
      fail("its updates " + us.ToString() + " do not have the indices' batch dims " +
           DimsToString(batch_dims));
    }
  }
  for (size_t k = 0; k < operand_batch.size(); ++k) {
    if (xs.dims[static_cast<size_t>(operand_batch[k])] !=
        batch_dims[static_cast<size_t>(batch_pos(index_batch[k]))]) {
      fail("batching dim " + std::to_string(operand_batch[k]) +
           " differs in size from its indices dim");
    }
  }
  for (size_t k = 1; k < arrays; ++k) {
    if (Operand(v, h, arrays + 1 + k)->shape.dims != us.dims) fail("its updates differ in shape");
  }

  // Points: indexed, inserted and batching dims, and dims a window covers in part (from 0);
  // rest: dims every update writes whole (each an update dim).
  std::vector<int64_t> points, rest;
  for (int64_t d = 0; d < rank; ++d) {
    const bool point = Contains(to_operand, d) || update_dim_of[static_cast<size_t>(d)] < 0 ||
                       window[static_cast<size_t>(d)] != xs.dims[static_cast<size_t>(d)];
    (point ? points : rest).push_back(d);
  }
  int64_t flat = 1;
  for (int64_t d : points) flat *= xs.dims[static_cast<size_t>(d)];
  if (flat > std::numeric_limits<int32_t>::max()) {
    fail("its indexed dims hold " + std::to_string(flat) + " elements; podsim's row index is s32");
  }
  std::vector<int64_t> perm = points;
  perm.insert(perm.end(), rest.begin(), rest.end());
  std::vector<int64_t> wide_dims = batch_dims;  // then a window dim per windowed point
  std::vector<int64_t> update_perm = scatter_update_dims;
  for (int64_t d : points) {
    if (update_dim_of[static_cast<size_t>(d)] >= 0) {
      wide_dims.push_back(window[static_cast<size_t>(d)]);
      update_perm.push_back(update_dim_of[static_cast<size_t>(d)]);
    }
  }
  for (int64_t d : rest) update_perm.push_back(update_dim_of[static_cast<size_t>(d)]);
  const Shape wide(DType::kS32, wide_dims);
  Shape points_first(xs.dtype, {});
  for (int64_t d : perm) points_first.dims.push_back(xs.dims[static_cast<size_t>(d)]);
  Shape rows(xs.dtype, {flat});
  rows.dims.insert(rows.dims.end(),
                   points_first.dims.begin() + static_cast<std::ptrdiff_t>(points.size()),
                   points_first.dims.end());

  // The row index: sum over the points of (start + window position) * stride, or -1 where a
  // start puts the window out of bounds (XLA skips the whole update window).
  auto constant = [&](double value, DType t, const Shape& like, const std::string& name) {
    return ScalarLike(c, h, value, Shape(t, like.dims), name);
  };
  auto widen = [&](Instruction* x, const std::string& name) {
    if (x->shape.dims == wide_dims) return x;
    return Make(c, h, Opcode::kBroadcast, Shape(x->shape.dtype, wide_dims), {x}, name,
                [&](Instruction& a) {
                  for (size_t k = 0; k < batch_dims.size(); ++k) {
                    a.dimensions.push_back(static_cast<int64_t>(k));
                  }
                });
  };
  const Shape batch_pred(DType::kPred, batch_dims);
  Instruction* linear = nullptr;
  Instruction* valid = nullptr;
  int64_t stride = flat;
  int64_t window_at = static_cast<int64_t>(batch_dims.size());
  for (int64_t d : points) {
    const std::string tag = "d" + std::to_string(d);
    const int64_t extent = xs.dims[static_cast<size_t>(d)];
    stride /= extent;
    Instruction* comp = nullptr;
    if (auto b = std::find(operand_batch.begin(), operand_batch.end(), d);
        b != operand_batch.end()) {
      const int64_t j = index_batch[static_cast<size_t>(b - operand_batch.begin())];
      comp = Make(c, h, Opcode::kIota, Shape(DType::kS32, batch_dims), {}, "iota_" + tag,
                  [&](Instruction& a) { a.dimensions = {batch_pos(j)}; });
    } else if (auto m = std::find(to_operand.begin(), to_operand.end(), d); m != to_operand.end()) {
      comp = StartComponent(c, h, idx, ivd, m - to_operand.begin(), batch_dims, tag);
      const Shape bs(is.dtype, batch_dims);
      Instruction* lo =
          Make(c, h, Opcode::kCompare, batch_pred, {comp, constant(0, is.dtype, bs, "zero_" + tag)},
               "ge0_" + tag, [](Instruction& a) { a.comparison = Comparison::kGe; });
      Instruction* hi =
          Make(c, h, Opcode::kCompare, batch_pred,
               {comp, constant(static_cast<double>(extent - window[static_cast<size_t>(d)]),
                               is.dtype, bs, "last_" + tag)},
               "fits_" + tag, [](Instruction& a) { a.comparison = Comparison::kLe; });
      Instruction* ok = Make(c, h, Opcode::kAnd, batch_pred, {lo, hi}, "in_" + tag);
      valid = valid ? Make(c, h, Opcode::kAnd, batch_pred, {valid, ok}, "valid_" + tag) : ok;
      if (comp->shape.dtype != DType::kS32) {
        comp =
            Make(c, h, Opcode::kConvert, Shape(DType::kS32, batch_dims), {comp}, "starts32_" + tag);
      }
    }
    if (update_dim_of[static_cast<size_t>(d)] >= 0) {
      Instruction* at = Make(c, h, Opcode::kIota, wide, {}, "window_" + tag,
                             [&](Instruction& a) { a.dimensions = {window_at}; });
      ++window_at;
      comp =
          comp ? Make(c, h, Opcode::kAdd, wide, {widen(comp, "wide_" + tag), at}, "windowed_" + tag)
               : at;
    }
    if (comp == nullptr) continue;  // an inserted dim never indexed: always 0
    if (stride != 1) {
      comp = Make(
          c, h, Opcode::kMultiply, comp->shape,
          {comp, constant(static_cast<double>(stride), DType::kS32, comp->shape, "stride_" + tag)},
          "scaled_" + tag);
    }
    linear = linear
                 ? Make(c, h, Opcode::kAdd, wide,
                        {widen(linear, "acc_" + tag), widen(comp, "wider_" + tag)}, "linear_" + tag)
                 : comp;
  }
  if (linear == nullptr) linear = constant(0, DType::kS32, wide, "row0");
  linear = widen(linear, "row");
  if (valid) {
    linear = Make(c, h, Opcode::kSelect, wide,
                  {widen(valid, "valid_wide"), linear, constant(-1, DType::kS32, wide, "skip")},
                  "row_index");
  }

  // Tables, updates, the scatter, and back.
  std::vector<Instruction*> operands;
  for (size_t k = 0; k < arrays; ++k) {
    Instruction* t = Operand(v, h, k);
    const Shape ts(t->shape.dtype, rows.dims);
    if (!IsIdentityPermutation(perm)) {
      t = Make(c, h, Opcode::kTranspose, Shape(t->shape.dtype, points_first.dims), {t},
               "points_first" + std::to_string(k), [&](Instruction& a) { a.dimensions = perm; });
    }
    if (t->shape != ts) t = Make(c, h, Opcode::kReshape, ts, {t}, "table" + std::to_string(k));
    operands.push_back(t);
  }
  operands.push_back(linear);
  for (size_t k = 0; k < arrays; ++k) {
    Instruction* u = Operand(v, h, arrays + 1 + k);
    Shape ws(u->shape.dtype, wide_dims);
    ws.dims.insert(ws.dims.end(), rows.dims.begin() + 1, rows.dims.end());
    if (!IsIdentityPermutation(update_perm)) {
      Shape t(u->shape.dtype, {});
      for (int64_t p : update_perm) t.dims.push_back(u->shape.dims[static_cast<size_t>(p)]);
      u = Make(c, h, Opcode::kTranspose, t, {u}, "updates_t" + std::to_string(k),
               [&](Instruction& a) { a.dimensions = update_perm; });
    }
    if (u->shape != ws) u = Make(c, h, Opcode::kReshape, ws, {u}, "updates" + std::to_string(k));
    operands.push_back(u);
  }
  std::vector<Shape> row_shapes;
  for (size_t k = 0; k < arrays; ++k) row_shapes.emplace_back(operand_shapes[k].dtype, rows.dims);
  const bool reshaped = operands[0] != Operand(v, h, 0);
  const HloComputation& combiner = Callee(*h.to_apply);
  const bool overwrite = combiner.instrs[combiner.root].opcode == "parameter";
  double updates = 0;
  for (size_t k = arrays + 1; k < operands.size(); ++k) {
    updates += static_cast<double>(operands[k]->shape.NumElements());
  }
  Instruction* scatter =
      Make(c, h, Opcode::kCustomCall, arrays == 1 ? row_shapes[0] : Shape::Tuple(row_shapes),
           operands, reshaped ? "rows" : "", [&](Instruction& a) {
             a.custom_call_target = "xla:scatter";
             a.custom_call_flops = overwrite ? 0 : updates * OpsPerApplication(*h.to_apply);
           });
  WithRegion(scatter, h);
  if (!reshaped) return scatter;
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    inverse[static_cast<size_t>(perm[k])] = static_cast<int64_t>(k);
  }
  std::vector<Instruction*> outs;
  for (size_t k = 0; k < arrays; ++k) {
    Instruction* r = arrays == 1 ? scatter : Element(c, h, scatter, static_cast<int64_t>(k));
    const std::string tag = std::to_string(k);
    const Shape pf(r->shape.dtype, points_first.dims);
    if (r->shape != pf) r = Make(c, h, Opcode::kReshape, pf, {r}, "unflat" + tag);
    if (!IsIdentityPermutation(perm)) {
      r = Make(c, h, Opcode::kTranspose, operand_shapes[k], {r}, arrays == 1 ? "" : "out" + tag,
               [&](Instruction& a) { a.dimensions = inverse; });
    }
    outs.push_back(r);
  }
  if (arrays == 1) return outs[0];
  return Emit(c, h, Opcode::kTuple, h.shape, outs);
}

}  // namespace podsim::ir::hlo_internal
