#pragma once
// Internal to the XLA HLO importer: the lowering of hlo_internal::HloText to podsim's IR. The
// driver and the generic ops are in hlo_import_lower.cc, call, fusion, while, conditional, async
// pairs and tuple all-to-all in hlo_import_loops.cc,
// the ops XLA has and podsim writes out or keeps opaque (reductions with inits, clamp,
// custom-calls, mixed-type dots, batch norm) in hlo_import_expand.cc, gather, sort and
// reduce-precision in hlo_import_indexing.cc, scatter in hlo_import_scatter.cc.

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/hlo_import.h"
#include "ir/hlo_import_internal.h"

namespace podsim::ir::hlo_internal {

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

  void Run();

 private:
  using Values = std::unordered_map<std::string, Instruction*>;

  [[noreturn]] void Fail(Loc loc, const std::string& what) const { lex_.Fail(loc, what); }
  void Warn(Loc loc, const std::string& what) {
    out_.warnings.push_back(lex_.Where(loc) + ": " + what);
  }

  const HloComputation& Callee(const NameRef& ref) const;

  void DecidePartitioned();

  // The scope of an instruction: its op_name without the last component (the primitive), so
  // that breakdowns are by the user's layer names.
  static std::string ScopeOf(const HloInstr& h);

  // Adds an instruction built from `h`'s attributes and checks its shape against the rules.
  Instruction* Emit(Computation* c, const HloInstr& h, Opcode op, const Shape& shape,
                    std::vector<Instruction*> operands, const std::string& name = "");

  // The instruction's shape is the one its rule gives; an error at h otherwise.
  void CheckShapeRule(const Instruction* added, const HloInstr& h) const;

  Instruction* Operand(const Values& values, const HloInstr& h, size_t k) const;

  void RequireOperands(const HloInstr& h, size_t n) const;

  // The reduction a two-parameter computation applies: its root is add/maximum/minimum/and/or
  // (or multiply, unsupported) of its two parameters.
  ReduceKind KindOf(const HloInstr& h) const;
  std::optional<ReduceKind> TryKindOf(const HloInstr& h) const;
  // The ops of a computation applied per element (its instructions but parameters and
  // constants): the flops of one application, for the kernels podsim keeps opaque.
  double OpsPerApplication(const NameRef& ref) const;
  // select-and-scatter: "xla:window-select" (the select= region) giving the operand position
  // each source element goes to, then "xla:scatter" of the source into init (the scatter=
  // region).
  Instruction* LowerSelectAndScatter(Computation* c, const Values& v, const HloInstr& h);

  static bool IsScalarConstant(const Instruction* i, double* v);

  // Whether `init` is the identity of `kind` (so the HLO init operand changes nothing).
  static bool IsIdentity(const Instruction* init, ReduceKind kind);

  static Opcode CombineOp(ReduceKind k);

  // A scalar broadcast to `shape` (the value itself when shape is a scalar).
  Instruction* BroadcastTo(Computation* c, const HloInstr& h, Instruction* scalar,
                           const Shape& shape);
  // The constant `value` of like's type broadcast to like's shape (the constant named after h
  // with ".name").
  Instruction* ScalarLike(Computation* c, const HloInstr& h, double value, const Shape& like,
                          const std::string& name);

  Instruction* LowerReduce(Computation* c, const Values& v, const HloInstr& h);

  // clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi may be scalars.
  Instruction* LowerClamp(Computation* c, const Values& v, const HloInstr& h);

  Instruction* LowerCall(Computation* c, const Values& v, const HloInstr& h);

  // The trip count of a while: the override, backend_config's known_trip_count, or the
  // condition `gte(param, k) <cmp> constant` with element k starting at a constant and the
  // body adding a constant to it.
  int64_t TripCount(const HloInstr& h, const std::vector<Instruction*>& init) const;

  // ceil(iterations) of a counted while, refused beyond 2^31 (a count no real program has,
  // which would also overflow the cast).
  int64_t Trips(const HloInstr& h, double iterations) const;

  Instruction* LowerWhile(Computation* c, const Values& v, const HloInstr& h);

  // select(pred, on_true, on_false) of two values of one shape, tuples element by element.
  Instruction* SelectValue(Computation* c, const HloInstr& h, Instruction* pred,
                           Instruction* on_true, Instruction* on_false);
  // The branch a constant selector picks, inlined; else every branch, and the result selected.
  Instruction* LowerConditional(Computation* c, const Values& v, const HloInstr& h);
  // <collective>-start and async-start (calls=): the operation itself; -done and async-update:
  // the started value.
  Instruction* LowerAsync(Computation* c, Values& v, const HloInstr& h);
  // all-to-all of a tuple of arrays (no dimensions=).
  Instruction* LowerTupleAllToAll(Computation* c, const Values& v, const HloInstr& h);

  // Element k of a tuple value: the operand itself when the value is a tuple instruction.
  Instruction* Element(Computation* c, const HloInstr& h, Instruction* tuple, int64_t k);

  Instruction* LowerCustomCall(Computation* c, const Values& v, const HloInstr& h);

  // A dot whose result type is not its operands' (XLA's preferred_element_type: f8 x f8 ->
  // bf16, bf16 x bf16 -> f32), or whose operands differ in type. Operands of one type: the dot in
  // that type, then a convert, so the matrix unit runs at the operands' rate as XLA runs it
  // (interpreted values are rounded to the operand type first: a warning says so where the
  // interpreter would see it). Operands of two types: both converted to the result type first
  // (on TPUs without an f8 matrix unit, f8 operands are widened to bf16 as here). nullptr for a
  // dot of one type throughout.
  Instruction* LowerMixedDot(Computation* c, const Values& v, const HloInstr& h);

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
  Instruction* LowerBatchNorm(Computation* c, const Values& v, const HloInstr& h);

  // An op podsim has no rule for, as an opaque kernel that reads its operands, writes its result
  // and does `flops` (custom-call "xla:<opcode>"); its values cannot be interpreted.
  Instruction* Opaque(Computation* c, const Values& v, const HloInstr& h, double flops);
  // Gives `opaque` the computation h calls (to_apply=, or `ref`, lowered over scalars) as its
  // region and h's dims, so the interpreter can apply it; returns it.
  Instruction* WithRegion(Instruction* opaque, const HloInstr& h);
  Instruction* WithRegion(Instruction* opaque, const HloInstr& h, const NameRef& ref);

  // hlo_import_indexing.cc and hlo_import_scatter.cc: XLA's gather (podsim's gather at the
  // linear index of the clamped starts), scatter ("xla:scatter" at the row index of the
  // starts, -1 for a skipped window),
  // sort (podsim's sort for one array and a GT/LT comparator, else "xla:sort") and
  // reduce-precision.
  // Component k of the index vectors of `idx` (index_vector_dim ivd) over the batch dims, in
  // the indices' type.
  Instruction* StartComponent(Computation* c, const HloInstr& h, Instruction* idx, int64_t ivd,
                              int64_t k, const std::vector<int64_t>& batch_dims,
                              const std::string& tag);
  Instruction* LowerGather(Computation* c, const Values& v, const HloInstr& h);
  Instruction* LowerScatter(Computation* c, const Values& v, const HloInstr& h);
  Instruction* LowerSort(Computation* c, const Values& v, const HloInstr& h);
  Instruction* LowerReducePrecision(Computation* c, const Values& v, const HloInstr& h);

  Instruction* LowerOne(Computation* c, Values& v, const HloInstr& h);

  // Lowers `hc` into `target`; returns the value of its root.
  Instruction* Lower(const HloComputation& hc, Computation* target, ParamMode mode,
                     const std::vector<Instruction*>& args, bool tuple_state = true);

  // A global program's tuple sharding ({{...}, {...}}) on `h`: each element of its value
  // annotated with its sharding.
  Instruction* ShardElements(Computation* c, const HloInstr& h, Instruction* value);

  void SetAliases(const HloComputation& entry, const Instruction* root);

  const HloText& text_;
  Lexer& lex_;
  const HloImportOptions& options_;
  HloImport& out_;
  int depth_ = 0;
  std::set<std::string> warned_targets_;
};

}  // namespace podsim::ir::hlo_internal
