// The HLO importer's call (inlined) and while (a counted loop, its trip count found in the
// module or given) (ir/hlo_import_lower.h).

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

}  // namespace podsim::ir::hlo_internal
