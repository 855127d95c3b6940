// Lowers hlo_internal::HloText to podsim's IR (ir/hlo_import.h), checking every instruction's
// declared shape against podsim's shape rules as it goes so that an error names its line.
// docs/hlo-import.md is the table of what becomes what.

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
#include "ir/hlo_import.h"
#include "ir/hlo_import_internal.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace hlo_internal {
namespace {

using text_internal::Lexer;

// How the parameters of a computation being lowered get their values.
enum class ParamMode {
  kEntry,   // podsim parameters of the same numbers
  kInline,  // the caller's operands (call, and computations applied elementwise)
  kLoop,    // a loop body: parameter(0) is the carried tuple, podsim parameters 1..n
};

class Lowerer {
 public:
  Lowerer(const HloText& text, Lexer& lex, const HloImportOptions& options, HloImport& out)
      : text_(text), lex_(lex), options_(options), out_(out) {}

  void Run() {
    out_.module = std::make_unique<Module>(text_.name);
    DecidePartitioned();
    const HloComputation& entry = text_.computations[text_.entry];
    Computation* c = out_.module->AddComputation(entry.name, /*is_entry=*/true);
    Instruction* root = Lower(entry, c, ParamMode::kEntry, {});
    c->set_root(root);
    SetAliases(entry, root);
    out_.module->OrderComputations();
    out_.module->RemoveDeadCode();
    try {
      Verify(*out_.module);
    } catch (const Error& e) {
      lex_.Fail(entry.loc, std::string("the imported module does not verify: ") + e.what());
    }
  }

 private:
  using Values = std::unordered_map<std::string, Instruction*>;

  [[noreturn]] void Fail(Loc loc, const std::string& what) const { lex_.Fail(loc, what); }
  void Warn(Loc loc, const std::string& what) { out_.warnings.push_back(lex_.Where(loc) + ": " + what); }

  const HloComputation& Callee(const NameRef& ref) const {
    auto it = text_.by_name.find(ref.name);
    if (it == text_.by_name.end()) Fail(ref.loc, "%" + ref.name + " names no computation");
    return text_.computations[it->second];
  }

  void DecidePartitioned() {
    bool spmd = text_.computations[text_.entry].name.ends_with("_spmd");
    int64_t devices = text_.num_partitions;
    for (const HloComputation& c : text_.computations) {
      for (const HloInstr& i : c.instrs) {
        Opcode op;
        const bool collective = ParseOpcode(i.opcode, &op) && IsCollective(op);
        if (collective || i.opcode == "partition-id" || i.opcode.ends_with("-start")) spmd = true;
        if (text_.num_partitions == 0 && (collective || i.opcode.ends_with("-start"))) {
          if (i.attrs.iota_replica_groups) {
            devices = std::max(devices, i.attrs.iota_replica_groups->devices.size());
          }
          for (const auto& g : i.attrs.replica_groups) {
            for (int64_t d : g) devices = std::max(devices, d + 1);
          }
          for (const auto& [s, t] : i.attrs.source_target_pairs) {
            devices = std::max({devices, s + 1, t + 1});
          }
        }
      }
    }
    out_.partitioned = spmd;
    out_.num_partitions = devices;
  }

  // The scope of an instruction: its op_name without the last component (the primitive), so
  // that breakdowns are by the user's layer names.
  static std::string ScopeOf(const HloInstr& h) {
    const size_t slash = h.op_name.rfind('/');
    return slash == std::string::npos ? h.op_name : h.op_name.substr(0, slash);
  }

  // Adds an instruction built from `h`'s attributes and checks its shape against the rules.
  Instruction* Emit(Computation* c, const HloInstr& h, Opcode op, const Shape& shape,
                    std::vector<Instruction*> operands, const std::string& name = "") {
    auto ins = std::make_unique<Instruction>(h.attrs);
    ins->opcode = op;
    ins->shape = shape;
    ins->operands = std::move(operands);
    ins->name = name.empty() ? h.name : name;
    ins->scope = ScopeOf(h);
    if (out_.partitioned) ins->sharding.reset();
    Instruction* added = c->Add(std::move(ins));
    Shape expected;
    try {
      expected = InferShape(*added);
    } catch (const Error& e) {
      Fail(h.loc, std::string(e.what()));
    }
    if (expected != added->shape) {
      Fail(h.shape_loc, h.name + ": shape " + added->shape.ToString() + " does not match the " +
                            std::string(OpcodeName(op)) + " shape rule, which gives " +
                            expected.ToString());
    }
    return added;
  }

  Instruction* Operand(const Values& values, const HloInstr& h, size_t k) const {
    if (k >= h.operands.size()) {
      Fail(h.opcode_loc, h.opcode + " " + h.name + " needs at least " + std::to_string(k + 1) +
                             " operand(s), got " + std::to_string(h.operands.size()));
    }
    const NameRef& r = h.operands[k];
    auto it = values.find(r.name);
    if (it == values.end()) {
      Fail(r.loc, "%" + r.name + " is not defined before its use in this computation");
    }
    return it->second;
  }

  void RequireOperands(const HloInstr& h, size_t n) const {
    if (h.operands.size() != n) {
      Fail(h.opcode_loc, h.opcode + " takes " + std::to_string(n) + " operand(s), got " +
                             std::to_string(h.operands.size()));
    }
  }

  // The reduction a two-parameter computation applies: its root is add/maximum/minimum/and/or
  // (or multiply, unsupported) of its two parameters.
  ReduceKind KindOf(const HloInstr& h) const {
    if (!h.to_apply) Fail(h.opcode_loc, h.opcode + " " + h.name + " needs to_apply=");
    const HloComputation& c = Callee(*h.to_apply);
    const HloInstr& root = c.instrs[c.root];
    auto is_param = [&](size_t k) {
      if (k >= root.operands.size()) return false;
      auto it = c.by_name.find(root.operands[k].name);
      return it != c.by_name.end() && c.instrs[it->second].opcode == "parameter";
    };
    if (root.operands.size() == 2 && is_param(0) && is_param(1) && !root.shape.is_tuple &&
        root.shape.dims.empty()) {
      if (root.opcode == "add") return ReduceKind::kAdd;
      if (root.opcode == "maximum") return ReduceKind::kMax;
      if (root.opcode == "minimum") return ReduceKind::kMin;
      if (root.opcode == "and") return ReduceKind::kAnd;
      if (root.opcode == "or") return ReduceKind::kOr;
    }
    Fail(h.to_apply->loc, "to_apply=%" + c.name + " of " + h.name +
                              " is not an add, maximum, minimum, and or or of its two "
                              "parameters; podsim reduces with those only");
  }

  static bool IsScalarConstant(const Instruction* i, double* v) {
    if (i->opcode != Opcode::kConstant || !i->shape.dims.empty() || i->shape.is_tuple) {
      return false;
    }
    *v = i->literal.values[0];
    return true;
  }

  // Whether `init` is the identity of `kind` (so the HLO init operand changes nothing).
  static bool IsIdentity(const Instruction* init, ReduceKind kind) {
    double v = 0;
    if (!IsScalarConstant(init, &v)) return false;
    if (init->shape.dtype == DType::kPred) {
      return kind == ReduceKind::kAnd ? v == 1 : kind == ReduceKind::kOr && v == 0;
    }
    return v == ReduceIdentity(kind);
  }

  static Opcode CombineOp(ReduceKind k) {
    switch (k) {
      case ReduceKind::kAdd: return Opcode::kAdd;
      case ReduceKind::kMax: return Opcode::kMaximum;
      case ReduceKind::kMin: return Opcode::kMinimum;
      case ReduceKind::kAnd: return Opcode::kAnd;
      case ReduceKind::kOr: return Opcode::kOr;
    }
    return Opcode::kAdd;
  }

  // A scalar broadcast to `shape` (the value itself when shape is a scalar).
  Instruction* BroadcastTo(Computation* c, const HloInstr& h, Instruction* scalar,
                           const Shape& shape) {
    if (scalar->shape == shape) return scalar;
    return Make(c, h, Opcode::kBroadcast, shape, {scalar}, "broadcast");
  }

  Instruction* LowerReduce(Computation* c, const Values& v, const HloInstr& h) {
    if (h.operands.size() != 2) {
      Fail(h.opcode_loc, "reduce " + h.name + " has " + std::to_string(h.operands.size() / 2) +
                             " inputs: variadic reductions are not supported yet");
    }
    const ReduceKind kind = KindOf(h);
    Instruction* x = Operand(v, h, 0);
    Instruction* init = Operand(v, h, 1);
    const Opcode op = h.opcode == "reduce" ? Opcode::kReduce : Opcode::kReduceWindow;
    HloInstr r = h;
    r.attrs.reduce_kind = kind;
    if (op == Opcode::kReduceWindow && r.attrs.window.empty()) {
      r.attrs.window.resize(static_cast<size_t>(x->shape.rank()));
    }
    if (IsIdentity(init, kind)) return Emit(c, r, op, h.shape, {x});
    if (op == Opcode::kReduceWindow) {
      // The init also fills the padding: with another value the result is not a reduction of
      // the window plus a constant.
      Fail(h.operands[1].loc, "reduce-window " + h.name + ": its init value is not the "
                              "identity of " + std::string(ReduceKindName(kind)) +
                              " (podsim pads with the identity)");
    }
    Instruction* red = Emit(c, r, op, h.shape, {x}, h.name + ".reduce");
    Instruction* b = BroadcastTo(c, h, init, h.shape);
    return Make(c, h, CombineOp(kind), h.shape, {red, b}, "");
  }

  // clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi may be scalars.
  Instruction* LowerClamp(Computation* c, const Values& v, const HloInstr& h) {
    RequireOperands(h, 3);
    Instruction* x = Operand(v, h, 1);
    Instruction* lo = BroadcastTo(c, h, Operand(v, h, 0), x->shape);
    Instruction* hi = BroadcastTo(c, h, Operand(v, h, 2), x->shape);
    Instruction* m = Make(c, h, Opcode::kMaximum, h.shape, {x, lo}, "max");
    return Make(c, h, Opcode::kMinimum, h.shape, {m, hi}, "");
  }

  Instruction* LowerCall(Computation* c, const Values& v, const HloInstr& h) {
    const NameRef* callee = h.to_apply ? &*h.to_apply : h.calls ? &*h.calls : nullptr;
    if (!callee) Fail(h.opcode_loc, h.opcode + " " + h.name + " needs to_apply= or calls=");
    std::vector<Instruction*> args;
    for (size_t k = 0; k < h.operands.size(); ++k) args.push_back(Operand(v, h, k));
    return Lower(Callee(*callee), c, ParamMode::kInline, args);
  }

  // The trip count of a while: the override, backend_config's known_trip_count, or the
  // condition `gte(param, k) <cmp> constant` with element k starting at a constant and the
  // body adding a constant to it.
  int64_t TripCount(const HloInstr& h, const std::vector<Instruction*>& init) const {
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
        Fail(h.opcode_loc, "while " + h.name + ": backend_config's known_trip_count is not a "
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
        if (step > 0 && (cmp == Comparison::kLt || cmp == Comparison::kLe ||
                         cmp == Comparison::kNe)) {
          const double span = limit - start + (cmp == Comparison::kLe ? 1 : 0);
          found = Trips(h, span / step);
        } else if (step < 0 && (cmp == Comparison::kGt || cmp == Comparison::kGe ||
                                cmp == Comparison::kNe)) {
          const double span = start - limit + (cmp == Comparison::kGe ? 1 : 0);
          found = Trips(h, span / -step);
        }
      }
    }
    if (!found) {
      Fail(h.opcode_loc,
           "while " + h.name + ": its trip count is not in the module (no known_trip_count in "
           "backend_config, and condition %" + cond.name + " is not a comparison of a counter "
           "that starts at a constant and steps by a constant); give it with --trip-count " +
               h.name + "=N");
    }
    return *found;
  }

  // ceil(iterations) of a counted while, refused beyond 2^31 (a count no real program has,
  // which would also overflow the cast).
  int64_t Trips(const HloInstr& h, double iterations) const {
    if (!(iterations <= 2147483648.0)) {
      Fail(h.opcode_loc, "while " + h.name + ": its condition gives more than 2^31 iterations");
    }
    return iterations <= 0 ? 0 : static_cast<int64_t>(std::ceil(iterations));
  }

  Instruction* LowerWhile(Computation* c, const Values& v, const HloInstr& h) {
    RequireOperands(h, 1);
    if (!h.condition || !h.body) Fail(h.opcode_loc, "while " + h.name + " needs condition= and body=");
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
    body->set_root(Emit(body, t, Opcode::kTuple, Shape::Tuple(shapes), next,
                        hbody.name + ".next"));
    Instruction* loop = Make(c, h, Opcode::kLoop, Shape::Tuple(shapes), carried, "",
                             [&](Instruction& a) {
                               a.trip_count = trips;
                               a.body = body;
                             });
    return tuple_state ? loop : Element(c, h, loop, 0);
  }

  // Element k of a tuple value: the operand itself when the value is a tuple instruction.
  Instruction* Element(Computation* c, const HloInstr& h, Instruction* tuple, int64_t k) {
    if (tuple->opcode == Opcode::kTuple) return tuple->operands[static_cast<size_t>(k)];
    return Make(c, h, Opcode::kGetTupleElement, tuple->shape.tuple_shapes[static_cast<size_t>(k)],
                {tuple}, "element", [&](Instruction& a) { a.tuple_index = k; });
  }

  Instruction* LowerCustomCall(Computation* c, const Values& v, const HloInstr& h) {
    const std::string& target = h.custom_call_target;
    if (target == "Sharding") {
      RequireOperands(h, 1);
      Instruction* x = Operand(v, h, 0);
      if (out_.partitioned || !h.attrs.sharding) return x;
      // An annotation: a reshape to the same shape that carries the sharding (free in the
      // cost model, as the custom-call is in XLA once the partitioner has read it).
      return Emit(c, h, Opcode::kReshape, h.shape, {x});
    }
    if (target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape") {
      RequireOperands(h, 1);
      Instruction* x = Operand(v, h, 0);
      const bool to_manual = target == "SPMDFullToShardShape";
      HloInstr m = h;
      m.attrs.tiling = to_manual ? x->sharding : h.attrs.sharding;
      if (!m.attrs.tiling) {
        Fail(h.loc, target + " " + h.name + ": " +
                        (to_manual ? "its operand has no sharding" : "it has no sharding") +
                        " to give the tiling of the manual region");
      }
      m.attrs.sharding.reset();
      return Emit(c, m, to_manual ? Opcode::kAutoToManual : Opcode::kManualToAuto, h.shape, {x});
    }
    if (target == "TopK") {
      RequireOperands(h, 1);
      HloInstr t = h;
      if (!h.shape.is_tuple || h.shape.tuple_shapes.size() != 2) {
        Fail(h.shape_loc, "TopK " + h.name + " must give a (values, indices) tuple");
      }
      t.attrs.k = h.shape.tuple_shapes[0].dims.empty() ? 0 : h.shape.tuple_shapes[0].dims.back();
      return Emit(c, t, Opcode::kTopK, h.shape, {Operand(v, h, 0)});
    }
    // Any other target: kept, with the cost the user gives it.
    HloInstr k = h;
    k.attrs.custom_call_target = target;
    if (target.empty()) Fail(h.opcode_loc, "custom-call " + h.name + " has no custom_call_target");
    if (auto it = options_.custom_call_flops.find(target); it != options_.custom_call_flops.end()) {
      k.attrs.custom_call_flops = it->second;
    } else if (warned_targets_.insert(target).second) {
      Warn(h.opcode_loc, "custom-call target \"" + target + "\" is not modelled: kept as an "
                         "opaque kernel that reads its operands and writes its result with 0 "
                         "flops (give its flops with --custom-call-flops " + target + "=F)");
    }
    std::vector<Instruction*> operands;
    for (size_t n = 0; n < h.operands.size(); ++n) operands.push_back(Operand(v, h, n));
    return Emit(c, k, Opcode::kCustomCall, h.shape, std::move(operands));
  }

  // A dot whose result type is not its operands' (XLA's preferred_element_type: f8 x f8 ->
  // bf16, bf16 x bf16 -> f32), or whose operands differ in type. Operands of one type: the dot in
  // that type, then a convert, so the matrix unit runs at the operands' rate as XLA runs it
  // (interpreted values are rounded to the operand type first: a warning says so where the
  // interpreter would see it). Operands of two types: both converted to the result type first
  // (on TPUs without an f8 matrix unit, f8 operands are widened to bf16 as here). nullptr for a
  // dot of one type throughout.
  Instruction* LowerMixedDot(Computation* c, const Values& v, const HloInstr& h) {
    Instruction* a = Operand(v, h, 0);
    Instruction* b = Operand(v, h, 1);
    const DType r = h.shape.dtype;
    if (a->shape.is_tuple || b->shape.is_tuple) return nullptr;
    if (a->shape.dtype == r && b->shape.dtype == r) return nullptr;
    if (a->shape.dtype == b->shape.dtype) {
      Shape narrow = h.shape;
      narrow.dtype = a->shape.dtype;
      Instruction* d = Emit(c, h, Opcode::kDot, narrow, {a, b}, h.name + ".dot");
      if (IsInterpretable(a->shape.dtype) && IsInterpretable(r) && ByteWidth(r) > ByteWidth(narrow.dtype)) {
        Warn(h.opcode_loc, "dot " + h.name + " (" + std::string(DTypeName(a->shape.dtype)) +
                               " operands, " + std::string(DTypeName(r)) +
                               " result) is computed in " + std::string(DTypeName(a->shape.dtype)) +
                               " and converted: its cost is XLA's, interpreted values are rounded "
                               "to the operand type");
      }
      return Make(c, h, Opcode::kConvert, h.shape, {d}, "");
    }
    auto widen = [&](Instruction* x, const char* which) {
      if (x->shape.dtype == r) return x;
      Shape s = x->shape;
      s.dtype = r;
      return Make(c, h, Opcode::kConvert, s, {x}, which);
    };
    return Emit(c, h, Opcode::kDot, h.shape, {widen(a, "lhs"), widen(b, "rhs")});
  }

  // An instruction podsim makes for `h` (named after it, with ".suffix" unless `suffix` is
  // empty, in its scope), without h's attributes but those `set` gives it.
  template <typename Set>
  Instruction* Make(Computation* c, const HloInstr& h, Opcode op, const Shape& shape,
                    std::vector<Instruction*> operands, const std::string& suffix, Set set) {
    HloInstr m = h;
    m.attrs = Instruction();
    set(m.attrs);
    return Emit(c, m, op, shape, std::move(operands), suffix.empty() ? "" : h.name + "." + suffix);
  }
  Instruction* Make(Computation* c, const HloInstr& h, Opcode op, const Shape& shape,
                    std::vector<Instruction*> operands, const std::string& suffix) {
    return Make(c, h, op, shape, std::move(operands), suffix, [](Instruction&) {});
  }

  // batch-norm-training and batch-norm-grad, written out in podsim's ops as XLA's
  // BatchNormExpander does (biased variance over every dim but feature_index):
  //   training: mean = E[x], var = E[(x - mean)^2], y = (x - mean) rsqrt(var + eps) scale + offset
  //   grad:     xhat = (x - mean) rsqrt(var + eps), d_offset = sum dy, d_scale = sum dy xhat,
  //             dx = scale rsqrt(var + eps) (dy - d_offset / N - xhat d_scale / N)
  Instruction* LowerBatchNorm(Computation* c, const Values& v, const HloInstr& h) {
    const bool training = h.opcode == "batch-norm-training";
    RequireOperands(h, training ? 3 : 5);
    Instruction* x = Operand(v, h, 0);
    const Shape xs = x->shape;
    if (xs.is_tuple || !IsFloating(xs.dtype)) {
      Fail(h.opcode_loc, h.opcode + " " + h.name + " needs a floating-point array operand");
    }
    const auto it = h.ints.find("feature_index");
    const int64_t f = it == h.ints.end() ? -1 : it->second;
    if (f < 0 || f >= xs.rank()) {
      Fail(h.opcode_loc, h.opcode + " " + h.name + ": feature_index must name a dim of " +
                             xs.ToString());
    }
    const Shape fs(xs.dtype, {xs.dims[static_cast<size_t>(f)]});
    std::vector<int64_t> others;
    for (int64_t d = 0; d < xs.rank(); ++d) {
      if (d != f) others.push_back(d);
    }
    const double n = static_cast<double>(xs.NumElements()) / static_cast<double>(fs.dims[0]);
    auto scalar = [&](double value, const std::string& name) {
      return Make(c, h, Opcode::kConstant, Shape(xs.dtype, {}), {}, name,
                  [&](Instruction& a) { a.literal = Literal::Scalar(xs.dtype, value); });
    };
    auto full = [&](Instruction* s, const Shape& to, const std::string& name) {
      return Make(c, h, Opcode::kBroadcast, to, {s}, name, [](Instruction&) {});
    };
    auto along_f = [&](Instruction* per_feature, const std::string& name) {
      return Make(c, h, Opcode::kBroadcast, xs, {per_feature}, name,
                  [&](Instruction& a) { a.dimensions = {f}; });
    };
    auto sum = [&](Instruction* y, const std::string& name) {
      return Make(c, h, Opcode::kReduce, fs, {y}, name, [&](Instruction& a) {
        a.dimensions = others;
        a.reduce_kind = ReduceKind::kAdd;
      });
    };
    auto bin = [&](Opcode op, Instruction* a, Instruction* b, const std::string& name) {
      return Make(c, h, op, a->shape, {a, b}, name);
    };
    Instruction* inv_n = scalar(1.0 / n, "inv_n");
    Instruction* scale = Operand(v, h, 1);
    Instruction* mean = nullptr;
    Instruction* var = nullptr;
    if (training) {
      mean = bin(Opcode::kMultiply, sum(x, "sum"), full(inv_n, fs, "inv_n_f"), "mean");
    } else {
      mean = Operand(v, h, 2);
      var = Operand(v, h, 3);
    }
    Instruction* centered = bin(Opcode::kSubtract, x, along_f(mean, "mean_b"), "centered");
    if (training) {
      Instruction* sq = bin(Opcode::kMultiply, centered, centered, "sq");
      var = bin(Opcode::kMultiply, sum(sq, "sq_sum"), full(inv_n, fs, "inv_n_v"), "var");
    }
    Instruction* eps = full(scalar(h.epsilon, "eps"), fs, "eps_f");
    Instruction* rstd = Make(c, h, Opcode::kRsqrt, fs, {bin(Opcode::kAdd, var, eps, "var_eps")},
                             "rstd");
    Instruction* xhat = bin(Opcode::kMultiply, centered, along_f(rstd, "rstd_b"), "xhat");
    std::vector<Instruction*> outs;
    if (training) {
      Instruction* scaled = bin(Opcode::kMultiply, xhat, along_f(scale, "scale_b"), "scaled");
      outs = {bin(Opcode::kAdd, scaled, along_f(Operand(v, h, 2), "offset_b"), "y"), mean, var};
    } else {
      Instruction* dy = Operand(v, h, 4);
      Instruction* d_offset = sum(dy, "d_offset");
      Instruction* d_scale = sum(bin(Opcode::kMultiply, dy, xhat, "dy_xhat"), "d_scale");
      Instruction* inv_nf = full(inv_n, fs, "inv_n_g");
      Instruction* mean_dy = along_f(bin(Opcode::kMultiply, d_offset, inv_nf, "mean_dy"), "mean_dy_b");
      Instruction* mean_dyx = along_f(bin(Opcode::kMultiply, d_scale, inv_nf, "mean_dyx"), "mean_dyx_b");
      Instruction* inner = bin(Opcode::kSubtract, bin(Opcode::kSubtract, dy, mean_dy, "dy_c"),
                               bin(Opcode::kMultiply, xhat, mean_dyx, "xhat_m"), "inner");
      Instruction* k = along_f(bin(Opcode::kMultiply, scale, rstd, "scale_rstd"), "k_b");
      outs = {bin(Opcode::kMultiply, inner, k, "dx"), d_scale, d_offset};
    }
    std::vector<Shape> shapes;
    for (Instruction* o : outs) shapes.push_back(o->shape);
    return Emit(c, h, Opcode::kTuple, Shape::Tuple(shapes), outs);
  }

  // An op podsim has no rule for, as an opaque kernel that reads its operands, writes its result
  // and does `flops` (custom-call "xla:<opcode>"); its values cannot be interpreted.
  Instruction* Opaque(Computation* c, const Values& v, const HloInstr& h, double flops) {
    std::vector<Instruction*> operands;
    for (size_t n = 0; n < h.operands.size(); ++n) operands.push_back(Operand(v, h, n));
    return Make(c, h, Opcode::kCustomCall, h.shape, std::move(operands), "", [&](Instruction& a) {
      a.custom_call_target = "xla:" + h.opcode;
      a.custom_call_flops = flops;
    });
  }

  Instruction* LowerOne(Computation* c, Values& v, const HloInstr& h) {
    const std::string& op = h.opcode;
    if (op == "constant") {
      HloInstr k = h;
      k.attrs.literal = *h.literal;
      if (h.Has("elided")) {
        Warn(h.loc, "constant " + h.name + " was printed elided ({...}): its values are zeros");
      }
      return Emit(c, k, Opcode::kConstant, h.shape, {});
    }
    if (op == "copy" || op == "opt-barrier") {
      RequireOperands(h, 1);
      return Operand(v, h, 0);  // layouts and scheduling barriers: no value change
    }
    if (op == "bitcast") {
      RequireOperands(h, 1);
      Instruction* x = Operand(v, h, 0);
      if (x->shape.is_tuple || x->shape.dtype != h.shape.dtype) {
        Fail(h.opcode_loc, "bitcast " + h.name + " changes the element type: podsim reads "
                           "bitcasts that reshape only");
      }
      return x->shape == h.shape ? x : Emit(c, h, Opcode::kReshape, h.shape, {x});
    }
    if (op == "get-tuple-element") {
      RequireOperands(h, 1);
      Instruction* t = Operand(v, h, 0);
      if (!t->shape.is_tuple || h.tuple_index < 0 ||
          h.tuple_index >= static_cast<int64_t>(t->shape.tuple_shapes.size())) {
        Fail(h.opcode_loc, "get-tuple-element " + h.name + ": index=" +
                               std::to_string(h.tuple_index) + " is not an element of " +
                               t->shape.ToString());
      }
      if (t->opcode == Opcode::kTuple) return t->operands[static_cast<size_t>(h.tuple_index)];
      HloInstr g = h;
      g.attrs.tuple_index = h.tuple_index;
      return Emit(c, g, Opcode::kGetTupleElement, h.shape, {t});
    }
    if (op == "reduce" || op == "reduce-window") return LowerReduce(c, v, h);
    if (op == "batch-norm-training" || op == "batch-norm-grad") return LowerBatchNorm(c, v, h);
    if (op == "bitcast-convert") {
      // Reinterpreting bits: the same type is the value itself; another type is a kernel that
      // reads and writes the bytes (its values are not interpretable).
      RequireOperands(h, 1);
      Instruction* x = Operand(v, h, 0);
      if (x->shape == h.shape) return x;
      return Opaque(c, v, h, 0);
    }
    if (op == "clamp") return LowerClamp(c, v, h);
    if (op == "call") return LowerCall(c, v, h);
    if (op == "while") return LowerWhile(c, v, h);
    if (op == "custom-call") return LowerCustomCall(c, v, h);
    if (op == "iota") {
      if (h.iota_dimension < 0) Fail(h.opcode_loc, "iota " + h.name + " needs iota_dimension=");
      HloInstr i = h;
      i.attrs.dimensions = {h.iota_dimension};
      return Emit(c, i, Opcode::kIota, h.shape, {});
    }
    if (op == "partition-id") {
      // podsim's partition-id is s32; XLA's is u32.
      Instruction* id = Emit(c, h, Opcode::kPartitionId, Shape(DType::kS32, {}), {},
                             h.shape.dtype == DType::kS32 ? "" : h.name + ".s32");
      if (h.shape.dtype == DType::kS32) return id;
      return Make(c, h, Opcode::kConvert, h.shape, {id}, "");
    }
    Opcode opcode;
    if (!ParseOpcode(op, &opcode) || opcode == Opcode::kLoop || opcode == Opcode::kParameter ||
        opcode == Opcode::kArgmax || opcode == Opcode::kCumsum || opcode == Opcode::kSort ||
        opcode == Opcode::kTopK || opcode == Opcode::kRandomUniform ||
        opcode == Opcode::kAutoToManual || opcode == Opcode::kManualToAuto ||
        opcode == Opcode::kGather) {
      Fail(h.opcode_loc, "opcode '" + op + "' is not supported by the HLO importer yet");
    }
    HloInstr e = h;
    if (IsCollective(opcode) && opcode != Opcode::kAllGather && opcode != Opcode::kAllToAll &&
        opcode != Opcode::kCollectivePermute) {
      e.attrs.reduce_kind = KindOf(h);
    }
    if (opcode == Opcode::kAllToAll) {
      if (h.attrs.dimensions.size() != 1) {
        Fail(h.opcode_loc, "all-to-all " + h.name + " without dimensions={d} (the tuple form) "
                           "is not supported");
      }
      e.attrs.split_dimension = e.attrs.concat_dimension = h.attrs.dimensions[0];
    }
    if (opcode == Opcode::kDot && h.operands.size() == 2 && !h.shape.is_tuple) {
      if (Instruction* mixed = LowerMixedDot(c, v, h)) return mixed;
    }
    if (opcode == Opcode::kConvolution && h.ints.count("batch_group_count") &&
        h.ints.at("batch_group_count") != 1) {
      // A filter gradient with batch groups (of a depthwise convolution): podsim's convolution
      // has feature groups only, so it is an opaque kernel with the convolution's flops, two per
      // multiply-add: output elements x kernel window x input features per output feature
      // (the kernel's input-feature dim).
      RequireOperands(h, 2);
      const Shape& k = Operand(v, h, 1)->shape;
      const ConvDims& cd = h.attrs.conv;
      auto kernel_dim = [&](int64_t d) {
        if (k.is_tuple || d < 0 || d >= k.rank() || !h.Has("dim_labels")) {
          Fail(h.opcode_loc, "convolution " + h.name + ": dim_labels do not fit its kernel " +
                                 k.ToString());
        }
        return static_cast<double>(k.dims[static_cast<size_t>(d)]);
      };
      double window = kernel_dim(cd.kernel_input_feature);
      for (int64_t d : cd.kernel_spatial) window *= kernel_dim(d);
      return Opaque(c, v, h, 2.0 * static_cast<double>(h.shape.NumElements()) * window);
    }
    std::vector<Instruction*> operands;
    for (size_t k = 0; k < h.operands.size(); ++k) operands.push_back(Operand(v, h, k));
    return Emit(c, e, opcode, h.shape, std::move(operands));
  }

  // Lowers `hc` into `target`; returns the value of its root.
  Instruction* Lower(const HloComputation& hc, Computation* target, ParamMode mode,
                     const std::vector<Instruction*>& args, bool tuple_state = true) {
    if (++depth_ > 64) Fail(hc.loc, "calls nest more than 64 deep (or recurse)");
    Values values;
    values.reserve(hc.instrs.size());
    std::vector<Instruction*> loop_params;
    if (mode == ParamMode::kLoop) {
      HloInstr it;
      it.name = "iteration";
      Instruction* iter = Emit(target, it, Opcode::kParameter, Shape(DType::kS32, {}), {},
                               hc.name + ".iteration");
      iter->parameter_number = 0;
      for (size_t k = 0; k < args.size(); ++k) {
        HloInstr p;
        p.name = hc.name + ".carried";
        p.attrs.parameter_number = static_cast<int64_t>(k + 1);
        loop_params.push_back(Emit(target, p, Opcode::kParameter, args[k]->shape, {}));
      }
    }
    for (const HloInstr& h : hc.instrs) {
      Instruction* value = nullptr;
      if (h.opcode == "parameter") {
        const int64_t n = h.attrs.parameter_number;
        if (mode == ParamMode::kEntry) {
          HloInstr p = h;
          p.attrs.parameter_number = n;
          value = Emit(target, p, Opcode::kParameter, h.shape, {});
        } else if (mode == ParamMode::kInline) {
          if (n < 0 || static_cast<size_t>(n) >= args.size()) {
            Fail(h.loc, "parameter(" + std::to_string(n) + ") of " + hc.name + " has no operand");
          }
          value = args[static_cast<size_t>(n)];
        } else {
          if (n != 0) Fail(h.loc, "a while body takes one parameter, parameter(0)");
          if (!tuple_state) {
            value = loop_params[0];
          } else {
            std::vector<Shape> shapes;
            for (Instruction* p : loop_params) shapes.push_back(p->shape);
            value = Make(target, h, Opcode::kTuple, Shape::Tuple(shapes), loop_params, "");
          }
        }
        if (value->shape != h.shape) {
          Fail(h.shape_loc, "parameter " + h.name + " is " + h.shape.ToString() +
                                ", its value is " + value->shape.ToString());
        }
      } else {
        value = LowerOne(target, values, h);
      }
      values[h.name] = value;
    }
    --depth_;
    return values.at(hc.instrs[hc.root].name);
  }

  void SetAliases(const HloComputation& entry, const Instruction* root) {
    std::vector<OutputAlias> aliases;
    const auto params = out_.module->entry()->parameters();
    for (const auto& [output, parameter] : text_.aliases) {
      const bool ok = root->shape.is_tuple && output >= 0 &&
                      output < static_cast<int64_t>(root->shape.tuple_shapes.size()) &&
                      parameter >= 0 && parameter < static_cast<int64_t>(params.size()) &&
                      root->shape.tuple_shapes[static_cast<size_t>(output)] ==
                          params[static_cast<size_t>(parameter)]->shape;
      if (ok) {
        aliases.push_back({output, parameter});
      } else {
        Warn(entry.loc, "input_output_alias {" + std::to_string(output) + "}: (" +
                            std::to_string(parameter) + ") does not match the shapes; dropped");
      }
    }
    out_.module->set_output_aliases(std::move(aliases));
  }

  const HloText& text_;
  Lexer& lex_;
  const HloImportOptions& options_;
  HloImport& out_;
  int depth_ = 0;
  std::set<std::string> warned_targets_;
};

}  // namespace
}  // namespace hlo_internal

HloImport ImportHlo(std::string_view text, const std::string& filename,
                    const HloImportOptions& options) {
  text_internal::Lexer lex(text, filename);
  hlo_internal::HloText parsed = hlo_internal::ParseHloText(lex);
  HloImport out;
  hlo_internal::Lowerer(parsed, lex, options, out).Run();
  return out;
}

bool LooksLikeXlaHlo(std::string_view text) {
  for (std::string_view marker : {"]{", "to_apply=", "entry_computation_layout", "metadata={",
                                  "backend_config=", " while(", " call(",
                                  "iota_dimension="}) {
    if (text.find(marker) != std::string_view::npos) return true;
  }
  // An instruction named without '%' ("  x = f32[2] ...").
  size_t line = 0;
  for (int n = 0; n < 64 && line < text.size(); ++n) {
    const size_t end = std::min(text.find('\n', line), text.size());
    std::string_view l = text.substr(line, end - line);
    const size_t first = l.find_first_not_of(" \t");
    if (first != std::string_view::npos) {
      l.remove_prefix(first);
      if (l.starts_with("ROOT ")) l.remove_prefix(5);
      const size_t eq = l.find(" = ");
      if (eq != std::string_view::npos && eq > 0 && l[0] != '%' && l[0] != '/' &&
          l.substr(0, eq).find_first_of(" ,(){}") == std::string_view::npos) {
        return true;
      }
    }
    line = end + 1;
  }
  return false;
}

}  // namespace podsim::ir
