// The HLO importer's control and communication forms (ir/hlo_import_lower.h): call and fusion
// (inlined), while (a counted loop, its trip count found in the module or given), conditional,
// async start/done pairs and the tuple form of all-to-all.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/hlo_import_lower.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace podsim::ir::hlo_internal {

Instruction* Lowerer::LowerCall(Computation* c, const Values& v, const HloInstr& h) {
  const NameRef* callee = h.to_apply ? &*h.to_apply : h.calls ? &*h.calls : nullptr;
  if (!callee) Fail(h.opcode_loc, h.opcode + " " + h.name + " needs to_apply= or calls=");
  std::vector<Instruction*> args;
  for (size_t k = 0; k < h.operands.size(); ++k) args.push_back(Operand(v, h, k));
  return Lower(Callee(*callee), c, ParamMode::kInline, args);
}

int64_t Lowerer::TripCount(const HloInstr& h, const std::vector<Instruction*>& init) const {
  if (auto it = options_.trip_counts.find(h.name); it != options_.trip_counts.end()) {
    return it->second;
  }
  const std::string_view key = "\"known_trip_count\":{\"n\":\"";
  if (size_t at = h.backend_config.find(key); at != std::string::npos) {
    // The digits of "n":"<count>"; anything else there is an error, not a guess.
    int64_t n = -1;
    const char* first = h.backend_config.data() + at + key.size();
    const char* last = h.backend_config.data() + h.backend_config.size();
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || end == last || *end != '"' || n < 0) {
      Fail(h.opcode_loc, "while " + h.name +
                             ": backend_config's known_trip_count is not a "
                             "count >= 0");
    }
    return n;
  }
  const HloComputation& cond = Callee(*h.condition);
  const HloComputation& body = Callee(*h.body);
  auto find = [](const HloComputation& c, const NameRef& r) -> const HloInstr* {
    auto it = c.by_name.find(r.name);
    return it == c.by_name.end() ? nullptr : &c.instrs[it->second];
  };
  auto constant_of = [&](const HloComputation& c, const NameRef& r, double* out) {
    const HloInstr* i = find(c, r);
    if (!i || i->opcode != "constant" || !i->literal || i->shape.is_tuple ||
        !i->shape.dims.empty()) {
      return false;
    }
    *out = i->literal->values[0];
    return true;
  };
  auto element_of = [&](const HloComputation& c, const NameRef& r) -> int64_t {
    const HloInstr* i = find(c, r);
    if (!i || i->opcode != "get-tuple-element" || i->operands.empty()) return -1;
    const HloInstr* p = find(c, i->operands[0]);
    return p && p->opcode == "parameter" ? i->tuple_index : -1;
  };
  const HloInstr& root = cond.instrs[cond.root];
  std::optional<int64_t> found;
  if (root.opcode == "compare" && root.operands.size() == 2) {
    Comparison cmp = root.attrs.comparison;
    int64_t k = element_of(cond, root.operands[0]);
    double limit = 0;
    bool ok = k >= 0 && constant_of(cond, root.operands[1], &limit);
    if (!ok) {  // constant <cmp> element: mirror the comparison
      k = element_of(cond, root.operands[1]);
      ok = k >= 0 && constant_of(cond, root.operands[0], &limit);
      const Comparison mirror[] = {Comparison::kEq, Comparison::kNe, Comparison::kGt,
                                   Comparison::kGe, Comparison::kLt, Comparison::kLe};
      cmp = mirror[static_cast<int>(cmp)];
    }
    double start = 0, step = 0;
    const HloInstr& broot = body.instrs[body.root];
    if (ok && static_cast<size_t>(k) < init.size() && IsScalarConstant(init[k], &start) &&
        broot.opcode == "tuple" && static_cast<size_t>(k) < broot.operands.size()) {
      const HloInstr* next = find(body, broot.operands[k]);
      if (next && next->opcode == "add" && next->operands.size() == 2) {
        for (int s = 0; s < 2 && step == 0; ++s) {
          if (element_of(body, next->operands[s]) == k) {
            constant_of(body, next->operands[1 - s], &step);
          }
        }
      }
      if (step > 0 &&
          (cmp == Comparison::kLt || cmp == Comparison::kLe || cmp == Comparison::kNe)) {
        const double span = limit - start + (cmp == Comparison::kLe ? 1 : 0);
        found = Trips(h, span / step);
      } else if (step < 0 &&
                 (cmp == Comparison::kGt || cmp == Comparison::kGe || cmp == Comparison::kNe)) {
        const double span = start - limit + (cmp == Comparison::kGe ? 1 : 0);
        found = Trips(h, span / -step);
      }
    }
  }
  if (!found) {
    Fail(h.opcode_loc,
         "while " + h.name +
             ": its trip count is not in the module (no known_trip_count in "
             "backend_config, and condition %" +
             cond.name +
             " is not a comparison of a counter "
             "that starts at a constant and steps by a constant); give it with --trip-count " +
             h.name + "=N");
  }
  return *found;
}

int64_t Lowerer::Trips(const HloInstr& h, double iterations) const {
  if (!(iterations <= 2147483648.0)) {
    Fail(h.opcode_loc, "while " + h.name + ": its condition gives more than 2^31 iterations");
  }
  return iterations <= 0 ? 0 : static_cast<int64_t>(std::ceil(iterations));
}

Instruction* Lowerer::LowerWhile(Computation* c, const Values& v, const HloInstr& h) {
  RequireOperands(h, 1);
  if (!h.condition || !h.body)
    Fail(h.opcode_loc, "while " + h.name + " needs condition= and body=");
  Instruction* state = Operand(v, h, 0);
  const bool tuple_state = state->shape.is_tuple;
  std::vector<Instruction*> carried;
  if (!tuple_state) {
    carried.push_back(state);
  } else {
    for (size_t k = 0; k < state->shape.tuple_shapes.size(); ++k) {
      carried.push_back(Element(c, h, state, static_cast<int64_t>(k)));
    }
  }
  const int64_t trips = TripCount(h, carried);
  const HloComputation& hbody = Callee(*h.body);
  Computation* body = out_.module->AddComputation(out_.module->UniqueName(hbody.name));
  Instruction* root = Lower(hbody, body, ParamMode::kLoop, carried, tuple_state);
  std::vector<Instruction*> next;
  if (!tuple_state) {
    next.push_back(root);
  } else {
    for (size_t k = 0; k < carried.size(); ++k) {
      next.push_back(Element(body, h, root, static_cast<int64_t>(k)));
    }
  }
  HloInstr t = h;
  t.attrs = Instruction();
  t.op_name.clear();
  std::vector<Shape> shapes;
  for (Instruction* n : next) shapes.push_back(n->shape);
  body->set_root(Emit(body, t, Opcode::kTuple, Shape::Tuple(shapes), next, hbody.name + ".next"));
  Instruction* loop =
      Make(c, h, Opcode::kLoop, Shape::Tuple(shapes), carried, "", [&](Instruction& a) {
        a.trip_count = trips;
        a.body = body;
      });
  return tuple_state ? loop : Element(c, h, loop, 0);
}

Instruction* Lowerer::Element(Computation* c, const HloInstr& h, Instruction* tuple, int64_t k) {
  if (tuple->opcode == Opcode::kTuple) return tuple->operands[static_cast<size_t>(k)];
  return Make(c, h, Opcode::kGetTupleElement, tuple->shape.tuple_shapes[static_cast<size_t>(k)],
              {tuple}, "element", [&](Instruction& a) { a.tuple_index = k; });
}

Instruction* Lowerer::SelectValue(Computation* c, const HloInstr& h, Instruction* pred,
                                  Instruction* on_true, Instruction* on_false) {
  if (on_true->shape.is_tuple) {
    std::vector<Instruction*> elements;
    std::vector<Shape> shapes;
    for (size_t k = 0; k < on_true->shape.tuple_shapes.size(); ++k) {
      const auto e = static_cast<int64_t>(k);
      elements.push_back(
          SelectValue(c, h, pred, Element(c, h, on_true, e), Element(c, h, on_false, e)));
      shapes.push_back(elements.back()->shape);
    }
    return Make(c, h, Opcode::kTuple, Shape::Tuple(shapes), elements, "selected");
  }
  Instruction* p = pred;
  if (!on_true->shape.dims.empty()) {
    p = Make(c, h, Opcode::kBroadcast, Shape(DType::kPred, on_true->shape.dims), {pred}, "pred");
  }
  return Make(c, h, Opcode::kSelect, on_true->shape, {p, on_true, on_false}, "selected");
}

Instruction* Lowerer::LowerConditional(Computation* c, const Values& v, const HloInstr& h) {
  std::vector<const NameRef*> branches;
  if (h.true_computation && h.false_computation) {
    branches = {&*h.true_computation, &*h.false_computation};
  } else {
    for (const NameRef& b : h.branch_computations) branches.push_back(&b);
  }
  if (branches.empty()) {
    Fail(h.opcode_loc, "conditional " + h.name +
                           " needs true_computation= and false_computation=, or "
                           "branch_computations=");
  }
  RequireOperands(h, branches.size() + 1);
  Instruction* selector = Operand(v, h, 0);
  const bool by_pred = selector->shape.dtype == DType::kPred;
  if (!selector->shape.dims.empty() || selector->shape.is_tuple ||
      (!by_pred && selector->shape.dtype != DType::kS32) || (by_pred && branches.size() != 2)) {
    Fail(h.operands[0].loc, "conditional " + h.name +
                                ": the selector must be a pred[] (two branches) or an s32[] "
                                "branch index, got " +
                                selector->shape.ToString());
  }
  // XLA runs branch `index` (the last one when out of range); pred true is branch 0.
  auto branch_of = [&](double s) -> size_t {
    if (by_pred) return s != 0 ? 0 : 1;
    const size_t n = branches.size();
    return s < 0 || s >= static_cast<double>(n) ? n - 1 : static_cast<size_t>(s);
  };
  auto run = [&](size_t b) {
    Instruction* value = Lower(Callee(*branches[b]), c, ParamMode::kInline, {Operand(v, h, b + 1)});
    if (value->shape != h.shape) {
      Fail(branches[b]->loc, "conditional " + h.name + ": branch %" + branches[b]->name +
                                 " gives " + value->shape.ToString() + ", not " +
                                 h.shape.ToString());
    }
    return value;
  };
  double known = 0;
  if (IsScalarConstant(selector, &known)) return run(branch_of(known));
  // The selector is a value: every branch is computed and the result selected, which gives the
  // values exactly and costs every branch (an upper bound on the time of the one XLA runs).
  Warn(h.opcode_loc, "conditional " + h.name + ": its " + std::to_string(branches.size()) +
                         " branches are all computed and the result selected; the cost counts "
                         "every branch (an upper bound)");
  std::vector<Instruction*> values;
  for (size_t b = 0; b < branches.size(); ++b) values.push_back(run(b));
  Instruction* result = values.back();
  for (size_t b = values.size() - 1; b-- > 0;) {
    Instruction* pred = selector;
    if (!by_pred) {
      Instruction* k =
          Make(c, h, Opcode::kConstant, Shape(DType::kS32, {}), {}, "branch", [&](Instruction& a) {
            a.literal = Literal::Scalar(DType::kS32, static_cast<double>(b));
          });
      pred = Make(c, h, Opcode::kCompare, Shape(DType::kPred, {}), {selector, k}, "is_branch",
                  [](Instruction& a) { a.comparison = Comparison::kEq; });
    }
    result = SelectValue(c, h, pred, values[b], result);
  }
  return result;
}

Instruction* Lowerer::LowerAsync(Computation* c, Values& v, const HloInstr& h) {
  const std::string& op = h.opcode;
  if (!op.ends_with("-start")) {
    // -done and async-update: the value the start gave.
    RequireOperands(h, 1);
    Instruction* started = Operand(v, h, 0);
    if (op != "async-update" && started->shape != h.shape) {
      Fail(h.shape_loc, op + " " + h.name + " is " + h.shape.ToString() + ", its start gives " +
                            started->shape.ToString());
    }
    return started;
  }
  // A start is its operation, timed as one collective that overlaps whatever does not wait for
  // it (podsim's simulator runs collectives asynchronously); its result is the start's tuple
  // element 1 ((operands, result, context...)), or the start's shape when it is an array.
  HloInstr wrapped = h;
  if (h.shape.is_tuple) {
    if (h.shape.tuple_shapes.size() < 2) {
      Fail(h.shape_loc, op + " " + h.name + " must give (operands, result, ...)");
    }
    wrapped.shape = h.shape.tuple_shapes[1];
  }
  if (op == "async-start") {
    if (!h.calls) Fail(h.opcode_loc, "async-start " + h.name + " needs calls=");
    std::vector<Instruction*> args;
    for (size_t k = 0; k < h.operands.size(); ++k) args.push_back(Operand(v, h, k));
    Instruction* value = Lower(Callee(*h.calls), c, ParamMode::kInline, args);
    if (value->shape != wrapped.shape) {
      Fail(h.shape_loc, "async-start " + h.name + ": %" + h.calls->name + " gives " +
                            value->shape.ToString() + ", not " + wrapped.shape.ToString());
    }
    return value;
  }
  wrapped.opcode = op.substr(0, op.size() - 6);
  Opcode base;
  if (!ParseOpcode(wrapped.opcode, &base) || !IsCollective(base)) {
    Fail(h.opcode_loc, "opcode '" + op + "' is not supported by the HLO importer yet");
  }
  return LowerOne(c, v, wrapped);
}

Instruction* Lowerer::LowerTupleAllToAll(Computation* c, const Values& v, const HloInstr& h) {
  // all-to-all of N arrays (no dimensions=): array j goes to the group's j-th partition and
  // result j comes from it. podsim's all-to-all on the arrays stacked along a new leading dim,
  // split and concatenated along it, then unstacked.
  const size_t n = h.operands.size();
  if (n == 0 || !h.shape.is_tuple || h.shape.tuple_shapes.size() != n) {
    Fail(h.shape_loc, "all-to-all " + h.name + " of " + std::to_string(n) +
                          " arrays must give a tuple of as many");
  }
  const Shape s = Operand(v, h, 0)->shape;
  std::vector<Instruction*> rows;
  Shape row(s.dtype, {1});
  row.dims.insert(row.dims.end(), s.dims.begin(), s.dims.end());
  for (size_t k = 0; k < n; ++k) {
    Instruction* x = Operand(v, h, k);
    if (x->shape != s || h.shape.tuple_shapes[k] != s) {
      Fail(h.operands[k].loc, "all-to-all " + h.name +
                                  ": podsim reads the tuple form with arrays of one shape (" +
                                  s.ToString() + "), got " + x->shape.ToString());
    }
    rows.push_back(Make(c, h, Opcode::kReshape, row, {x}, "row"));
  }
  Shape stacked = row;
  stacked.dims[0] = static_cast<int64_t>(n);
  Instruction* all = n == 1 ? rows[0]
                            : Make(c, h, Opcode::kConcatenate, stacked, rows, "stacked",
                                   [](Instruction& a) { a.dimensions = {0}; });
  HloInstr e = h;
  e.attrs.split_dimension = e.attrs.concat_dimension = 0;
  Instruction* moved = Emit(c, e, Opcode::kAllToAll, stacked, {all}, h.name + ".stacked");
  std::vector<Instruction*> parts;
  for (size_t k = 0; k < n; ++k) {
    Instruction* r = Make(c, h, Opcode::kSlice, row, {moved}, "part", [&](Instruction& a) {
      a.slice_starts.assign(stacked.dims.size(), 0);
      a.slice_limits = stacked.dims;
      a.slice_strides.assign(stacked.dims.size(), 1);
      a.slice_starts[0] = static_cast<int64_t>(k);
      a.slice_limits[0] = static_cast<int64_t>(k + 1);
    });
    parts.push_back(Make(c, h, Opcode::kReshape, s, {r}, "result"));
  }
  return Make(c, h, Opcode::kTuple, h.shape, parts, "");
}

}  // namespace podsim::ir::hlo_internal
