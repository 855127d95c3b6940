// The HLO importer's ops that podsim writes out in its own ops or keeps as opaque kernels:
// reductions with an init (and the others as opaque kernels), clamp, custom-calls, mixed-type
// dots, batch norm, select-and-scatter (ir/hlo_import_lower.h).

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

ReduceKind Lowerer::KindOf(const HloInstr& h) const {
  if (const std::optional<ReduceKind> k = TryKindOf(h)) return *k;
  const HloComputation& c = Callee(*h.to_apply);
  Fail(h.to_apply->loc, "to_apply=%" + c.name + " of " + h.name +
                            " is not an add, maximum, minimum, and or or of its two "
                            "parameters; podsim reduces with those only");
}

double Lowerer::OpsPerApplication(const NameRef& ref) const {
  double ops = 0;
  for (const HloInstr& i : Callee(ref).instrs) {
    ops += i.opcode != "parameter" && i.opcode != "constant" && i.opcode != "tuple" &&
           i.opcode != "get-tuple-element";
  }
  return std::max(ops, 1.0);
}

std::optional<ReduceKind> Lowerer::TryKindOf(const HloInstr& h) const {
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
  return std::nullopt;
}

bool Lowerer::IsScalarConstant(const Instruction* i, double* v) {
  if (i->opcode != Opcode::kConstant || !i->shape.dims.empty() || i->shape.is_tuple) {
    return false;
  }
  *v = i->literal.values[0];
  return true;
}

bool Lowerer::IsIdentity(const Instruction* init, ReduceKind kind) {
  double v = 0;
  if (!IsScalarConstant(init, &v)) return false;
  if (init->shape.dtype == DType::kPred) {
    return kind == ReduceKind::kAnd ? v == 1 : kind == ReduceKind::kOr && v == 0;
  }
  return v == ReduceIdentity(kind);
}

Opcode Lowerer::CombineOp(ReduceKind k) {
  switch (k) {
    case ReduceKind::kAdd:
      return Opcode::kAdd;
    case ReduceKind::kMax:
      return Opcode::kMaximum;
    case ReduceKind::kMin:
      return Opcode::kMinimum;
    case ReduceKind::kAnd:
      return Opcode::kAnd;
    case ReduceKind::kOr:
      return Opcode::kOr;
  }
  return Opcode::kAdd;
}

Instruction* Lowerer::ScalarLike(Computation* c, const HloInstr& h, double value,
                                 const Shape& like, const std::string& name) {
  const DType t = like.dtype;
  Instruction* k = Make(c, h, Opcode::kConstant, Shape(t, {}), {}, name,
                        [&](Instruction& a) { a.literal = Literal::Scalar(t, value); });
  return BroadcastTo(c, h, k, like);
}

Instruction* Lowerer::BroadcastTo(Computation* c, const HloInstr& h, Instruction* scalar,
                                  const Shape& shape) {
  if (scalar->shape == shape) return scalar;
  return Make(c, h, Opcode::kBroadcast, shape, {scalar}, "broadcast");
}

Instruction* Lowerer::LowerReduce(Computation* c, const Values& v, const HloInstr& h) {
  if (h.operands.empty() || h.operands.size() % 2 != 0) {
    Fail(h.opcode_loc, h.opcode + " " + h.name + " takes inputs and as many inits, got " +
                           std::to_string(h.operands.size()) + " operands");
  }
  const std::optional<ReduceKind> known = h.operands.size() == 2 ? TryKindOf(h) : std::nullopt;
  if (!known) {
    // A variadic reduction (argmax's (value, index) pairs, ...) or another computation: an
    // opaque kernel applying the computation once per input element (per window element of
    // each output for reduce-window), one flop per op it has.
    if (!h.to_apply) Fail(h.opcode_loc, h.opcode + " " + h.name + " needs to_apply=");
    double applications = static_cast<double>(Operand(v, h, 0)->shape.NumElements());
    if (h.opcode == "reduce-window") {
      const Shape& out = h.shape.is_tuple ? h.shape.tuple_shapes.at(0) : h.shape;
      applications = static_cast<double>(out.NumElements());
      for (const WindowDim& w : h.attrs.window) applications *= static_cast<double>(w.size);
    }
    Instruction* opaque = Opaque(c, v, h, applications * OpsPerApplication(*h.to_apply));
    // Each keeps its computation: a general reduction or reduce-window.
    if (h.opcode == "reduce-window") {
      opaque->window = h.attrs.window;
      if (opaque->window.empty()) {
        opaque->window.resize(static_cast<size_t>(Operand(v, h, 0)->shape.rank()));
      }
    }
    return WithRegion(opaque, h);
  }
  const ReduceKind kind = *known;
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
    Fail(h.operands[1].loc, "reduce-window " + h.name +
                                ": its init value is not the "
                                "identity of " +
                                std::string(ReduceKindName(kind)) +
                                " (podsim pads with the identity)");
  }
  Instruction* red = Emit(c, r, op, h.shape, {x}, h.name + ".reduce");
  Instruction* b = BroadcastTo(c, h, init, h.shape);
  return Make(c, h, CombineOp(kind), h.shape, {red, b}, "");
}

Instruction* Lowerer::LowerClamp(Computation* c, const Values& v, const HloInstr& h) {
  RequireOperands(h, 3);
  Instruction* x = Operand(v, h, 1);
  Instruction* lo = BroadcastTo(c, h, Operand(v, h, 0), x->shape);
  Instruction* hi = BroadcastTo(c, h, Operand(v, h, 2), x->shape);
  Instruction* m = Make(c, h, Opcode::kMaximum, h.shape, {x, lo}, "max");
  return Make(c, h, Opcode::kMinimum, h.shape, {m, hi}, "");
}

Instruction* Lowerer::LowerCustomCall(Computation* c, const Values& v, const HloInstr& h) {
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
    Warn(h.opcode_loc, "custom-call target \"" + target +
                           "\" is not modelled: kept as an "
                           "opaque kernel that reads its operands and writes its result with 0 "
                           "flops (give its flops with --custom-call-flops " +
                           target + "=F)");
  }
  std::vector<Instruction*> operands;
  for (size_t n = 0; n < h.operands.size(); ++n) operands.push_back(Operand(v, h, n));
  return Emit(c, k, Opcode::kCustomCall, h.shape, std::move(operands));
}

Instruction* Lowerer::LowerMixedDot(Computation* c, const Values& v, const HloInstr& h) {
  Instruction* a = Operand(v, h, 0);
  Instruction* b = Operand(v, h, 1);
  const DType r = h.shape.dtype;
  if (a->shape.is_tuple || b->shape.is_tuple) return nullptr;
  if (a->shape.dtype == r && b->shape.dtype == r) return nullptr;
  if (a->shape.dtype == b->shape.dtype) {
    Shape narrow = h.shape;
    narrow.dtype = a->shape.dtype;
    Instruction* d = Emit(c, h, Opcode::kDot, narrow, {a, b}, h.name + ".dot");
    if (IsInterpretable(a->shape.dtype) && IsInterpretable(r) &&
        ByteWidth(r) > ByteWidth(narrow.dtype)) {
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

Instruction* Lowerer::LowerBatchNorm(Computation* c, const Values& v, const HloInstr& h) {
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
    Fail(h.opcode_loc,
         h.opcode + " " + h.name + ": feature_index must name a dim of " + xs.ToString());
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
  Instruction* rstd =
      Make(c, h, Opcode::kRsqrt, fs, {bin(Opcode::kAdd, var, eps, "var_eps")}, "rstd");
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
    Instruction* mean_dy =
        along_f(bin(Opcode::kMultiply, d_offset, inv_nf, "mean_dy"), "mean_dy_b");
    Instruction* mean_dyx =
        along_f(bin(Opcode::kMultiply, d_scale, inv_nf, "mean_dyx"), "mean_dyx_b");
    Instruction* inner = bin(Opcode::kSubtract, bin(Opcode::kSubtract, dy, mean_dy, "dy_c"),
                             bin(Opcode::kMultiply, xhat, mean_dyx, "xhat_m"), "inner");
    Instruction* k = along_f(bin(Opcode::kMultiply, scale, rstd, "scale_rstd"), "k_b");
    outs = {bin(Opcode::kMultiply, inner, k, "dx"), d_scale, d_offset};
  }
  std::vector<Shape> shapes;
  for (Instruction* o : outs) shapes.push_back(o->shape);
  return Emit(c, h, Opcode::kTuple, Shape::Tuple(shapes), outs);
}

Instruction* Lowerer::Opaque(Computation* c, const Values& v, const HloInstr& h, double flops) {
  std::vector<Instruction*> operands;
  for (size_t n = 0; n < h.operands.size(); ++n) operands.push_back(Operand(v, h, n));
  return Make(c, h, Opcode::kCustomCall, h.shape, std::move(operands), "", [&](Instruction& a) {
    a.custom_call_target = "xla:" + h.opcode;
    a.custom_call_flops = flops;
  });
}

Instruction* Lowerer::WithRegion(Instruction* opaque, const HloInstr& h) {
  return WithRegion(opaque, h, *h.to_apply);
}

Instruction* Lowerer::WithRegion(Instruction* opaque, const HloInstr& h, const NameRef& ref) {
  const HloComputation& callee = Callee(ref);
  Computation* body = out_.module->AddComputation(out_.module->UniqueName(callee.name));
  body->set_root(Lower(callee, body, ParamMode::kEntry, {}));
  opaque->body = body;
  opaque->dimensions = h.attrs.dimensions;
  // With its region, the form is checked (ir/shape_rules_collective.cc).
  CheckShapeRule(opaque, h);
  return opaque;
}

Instruction* Lowerer::LowerSelectAndScatter(Computation* c, const Values& v, const HloInstr& h) {
  // (operand, source, init), window: each window of the operand selects one position by
  // select= (as XLA's evaluator: the first tap, replaced by a later tap unless select(kept,
  // tap)), one application per tap; then each source element is combined into the output,
  // init everywhere, at its window's position by scatter=.
  RequireOperands(h, 3);
  if (!h.select || !h.scatter) {
    Fail(h.opcode_loc, "select-and-scatter " + h.name + " needs select= and scatter=");
  }
  Instruction* x = Operand(v, h, 0);
  Instruction* source = Operand(v, h, 1);
  Instruction* init = Operand(v, h, 2);
  if (x->shape.is_tuple || source->shape.is_tuple || init->shape.is_tuple ||
      init->shape.rank() != 0 || h.shape != x->shape) {
    Fail(h.opcode_loc,
         "select-and-scatter " + h.name +
             " takes an array, a source and a scalar init, and gives the array's shape");
  }
  std::vector<WindowDim> window = h.attrs.window;
  if (window.empty()) window.resize(static_cast<size_t>(x->shape.rank()));
  double taps = 1;
  for (const WindowDim& w : window) taps *= static_cast<double>(w.size);
  Instruction* chosen = Make(c, h, Opcode::kCustomCall, Shape(DType::kS32, source->shape.dims), {x},
                             "select", [&](Instruction& a) {
                               a.custom_call_target = "xla:window-select";
                               a.custom_call_flops =
                                   static_cast<double>(source->shape.NumElements()) * taps *
                                   OpsPerApplication(*h.select);
                               a.window = window;
                             });
  WithRegion(chosen, h, *h.select);
  const Shape flat(x->shape.dtype, {x->shape.NumElements()});
  Instruction* table = BroadcastTo(c, h, init, flat);
  Instruction* scattered = Make(
      c, h, Opcode::kCustomCall, flat, {table, chosen, source}, "scatter", [&](Instruction& a) {
        a.custom_call_target = "xla:scatter";
        a.custom_call_flops =
            static_cast<double>(source->shape.NumElements()) * OpsPerApplication(*h.scatter);
      });
  WithRegion(scattered, h, *h.scatter);
  return Make(c, h, Opcode::kReshape, h.shape, {scattered}, "");
}

}  // namespace podsim::ir::hlo_internal
