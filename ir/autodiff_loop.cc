// Counted loops, differentiated once and not unrolled (docs/ir.md, "Counted loops"): the
// forward loop rewritten to save what each iteration starts from, and the backward loop that
// runs the iterations in reverse, recomputing each from its saved values.

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/autodiff_internal.h"

namespace podsim::ir::autodiff {

namespace {

// The scope of the work of saving `value` per iteration (its stack's zeros and the write of each
// row): "save/<the value's scope>".
std::string SaveScope(const Instruction& value) {
  return value.scope.empty() ? "save" : "save/" + value.scope;
}

// A zero stack of `trips` values shaped and sharded like `value`.
Instruction* ZeroStack(Builder& b, const Instruction& value, int64_t trips) {
  Shape stacked = value.shape;
  stacked.dims.insert(stacked.dims.begin(), trips);
  Instruction* z = b.Zeros(stacked);
  // Stacks are sharded like their values (the iteration dim whole): otherwise the partitioner
  // would be free to split a stack differently from what is written into it and read from it,
  // and reshard every save and read.
  z->sharding = StackedSharding(value.sharding);
  z->scope = SaveScope(value);
  return z;
}

// Row starts[0] of `stack` (a parameter of the backward body), as a value like `value`; the
// stack, the slice and the value keep the shardings the forward gave them.
Instruction* ReadStack(Builder& b, Instruction* stack, const std::vector<Instruction*>& starts,
                       const std::vector<int64_t>& one, const Instruction& value) {
  stack->sharding = StackedSharding(value.sharding);
  Instruction* row = b.DynamicSlice(stack, starts, one);
  row->sharding = stack->sharding;
  Instruction* v = b.Reshape(row, value.shape.dims);
  v->sharding = value.sharding;
  return v;
}

// The values the gradient rule of `i` (ir/autodiff_rules.cc) reads: which operands and whether
// its own value, given which operands carry a gradient (`active`). Ops whose rule is not listed
// read every operand and their value (an upper bound). Only cost depends on this list: a value a
// rule reads that is not saved is recomputed by the backward loop, never wrong.
void RuleReads(const Instruction& i, const std::unordered_set<const Instruction*>& active,
               std::unordered_set<const Instruction*>& read) {
  const auto on = [&](size_t k) { return k < i.operands.size() && active.count(i.operand(k)) > 0; };
  const auto x = [&](size_t k) { read.insert(i.operand(k)); };
  const auto y = [&] { read.insert(&i); };
  switch (i.opcode) {
    // Linear in their operands, or shape-only: the adjoint alone.
    case Opcode::kNegate: case Opcode::kConvert: case Opcode::kAdd: case Opcode::kSubtract:
    case Opcode::kBroadcast: case Opcode::kReshape: case Opcode::kTranspose: case Opcode::kSlice:
    case Opcode::kPad: case Opcode::kConcatenate: case Opcode::kReverse: case Opcode::kCumsum:
    case Opcode::kTuple: case Opcode::kGetTupleElement:
      return;
    case Opcode::kExp: case Opcode::kSqrt: case Opcode::kRsqrt: case Opcode::kTanh:
      y();
      return;
    case Opcode::kLog: case Opcode::kAbs:
      x(0);
      return;
    case Opcode::kMultiply:
      if (on(0)) x(1);
      if (on(1)) x(0);
      return;
    case Opcode::kDivide:
      x(1);
      if (on(1)) y();
      return;
    case Opcode::kMaximum: case Opcode::kMinimum:
      x(0);
      x(1);
      return;
    case Opcode::kSelect:
      x(0);
      return;
    case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice: case Opcode::kGather:
      for (size_t k = i.opcode == Opcode::kDynamicUpdateSlice ? 2 : 1; k < i.operands.size(); ++k) x(k);
      return;
    case Opcode::kDot: case Opcode::kConvolution:
      if (on(0)) x(1);
      if (on(1)) x(0);
      return;
    case Opcode::kReduce: case Opcode::kReduceWindow:
      if (i.reduce_kind == ReduceKind::kAdd) return;
      x(0);
      y();
      return;
    default:
      y();
      for (size_t k = 0; k < i.operands.size(); ++k) x(k);
      return;
  }
}

// Whether the backward pass recomputes `v` from its operand for free rather than reading it from
// a stack: a broadcast or a reshape (no arithmetic, never a kernel of its own in XLA: fused into
// its readers), or a convert that widens (the narrow operand is the smaller thing to keep).
bool ViewOfOperand(const Instruction& v) {
  if (v.operands.size() != 1 || v.shape.is_tuple || v.operand(0)->shape.is_tuple) return false;
  if (v.opcode == Opcode::kBroadcast || v.opcode == Opcode::kReshape) return true;
  return v.opcode == Opcode::kConvert &&
         ByteWidth(v.operand(0)->shape.dtype) <= ByteWidth(v.shape.dtype);
}

}  // namespace

void Differentiator::EmitSavingLoop(const Instruction& loop, Builder& b, Frame& f) {
  const Computation& body = *loop.body;
  const std::vector<Instruction*> params = body.parameters();
  const Instruction* root = body.root();
  const int64_t n = static_cast<int64_t>(loop.operands.size());
  const int64_t trips = loop.trip_count;
  SavedLoop saved;
  saved.stack_of.assign(static_cast<size_t>(n), -1);
  std::vector<Instruction*> carried;
  for (const Instruction* o : loop.operands) carried.push_back(f.value.at(o));
  int64_t stacks = 0;
  for (int64_t k = 0; k < n; ++k) {
    const bool through = root->opcode == Opcode::kTuple &&
                         root->operand(static_cast<size_t>(k)) == params[static_cast<size_t>(k + 1)];
    if (through) continue;
    saved.stack_of[static_cast<size_t>(k)] = n + stacks++;
    carried.push_back(ZeroStack(b, *params[static_cast<size_t>(k + 1)], trips));
  }

  // Body values saved per iteration (remat_ != kIterationInputs), in body order.
  if (remat_ != LoopRemat::kIterationInputs) {
    const std::unordered_set<const Instruction*> needed = NeededFor(body, {root});
    std::unordered_set<const Instruction*> varying, active;
    for (int64_t k = 0; k < n; ++k) {
      const Instruction* p = params[static_cast<size_t>(k + 1)];
      if (saved.stack_of[static_cast<size_t>(k)] >= 0) varying.insert(p);
      if (CarriesGradient(p->shape)) active.insert(p);
    }
    std::unordered_set<const Instruction*> read;  // what the gradient rules may read
    // A softmax's rule reads its output alone; its interior, read by nothing else, is never
    // differentiated and reads nothing.
    std::unordered_map<const Instruction*, int64_t> users;
    for (const auto& owned : body.instructions()) {
      for (const Instruction* o : owned->operands) ++users[o];
    }
    std::unordered_set<const Instruction*> softmax_out, softmax_interior;
    for (const auto& owned : body.instructions()) {
      const std::optional<SoftmaxMatch> m = MatchSoftmax(*owned);
      if (!m) continue;
      // e has two readers (the sum and p), x - max one (e), every other interior value one.
      bool alone = true;
      for (const Instruction* v : m->interior) {
        alone = alone && users[v] == (v == m->interior[0] ? 2 : 1);
      }
      if (!alone) continue;
      softmax_out.insert(owned.get());
      softmax_interior.insert(m->interior.begin(), m->interior.end());
    }
    for (const auto& owned : body.instructions()) {
      const Instruction* i = owned.get();
      if (i->opcode == Opcode::kParameter) continue;
      bool v = false, a = false;
      for (const Instruction* o : i->operands) {
        v = v || varying.count(o) > 0;
        a = a || active.count(o) > 0;
      }
      if (v) varying.insert(i);
      if (a && CarriesGradient(i->shape)) {
        active.insert(i);
        if (softmax_out.count(i)) {
          read.insert(i);
        } else if (!softmax_interior.count(i)) {
          RuleReads(*i, active, read);
        }
      }
    }
    // A view of a value is kept as the value it views (recomputed in the backward pass).
    std::unordered_set<const Instruction*> kept;
    for (const Instruction* r : read) {
      while (ViewOfOperand(*r) && varying.count(r->operand(0))) r = r->operand(0);
      kept.insert(r);
    }
    read.swap(kept);
    for (const auto& owned : body.instructions()) {
      const Instruction* i = owned.get();
      if (i->opcode == Opcode::kParameter || i->shape.is_tuple || !needed.count(i) ||
          !varying.count(i)) {
        continue;
      }
      const bool dot = i->opcode == Opcode::kDot || i->opcode == Opcode::kConvolution;
      if (remat_ == LoopRemat::kDots ? !dot : !read.count(i)) continue;
      saved.values.emplace_back(i, n + stacks++);
      carried.push_back(ZeroStack(b, *i, trips));
    }
  }

  Computation* save = out_.AddComputation(FreshComputationName(body.name() + ".save"));
  Builder sb(save);
  Frame g;
  std::vector<Instruction*> sparams;
  for (int64_t k = 0; k < n + 1; ++k) {
    const Instruction* p = params[static_cast<size_t>(k)];
    sparams.push_back(sb.Parameter(k, p->shape, p->name));
    g.value[p] = sparams.back();
    if (k > 0 && CarriesGradient(p->shape)) g.active.insert(p);
  }
  std::vector<Instruction*> stack_params;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t s = saved.stack_of[static_cast<size_t>(k)];
    if (s < 0) continue;
    stack_params.push_back(sb.Parameter(s + 1, carried[static_cast<size_t>(s)]->shape, "stack"));
    stack_params.back()->sharding = carried[static_cast<size_t>(s)]->sharding;
  }
  for (const auto& [v, s] : saved.values) {
    stack_params.push_back(sb.Parameter(s + 1, carried[static_cast<size_t>(s)]->shape, "saved"));
    stack_params.back()->sharding = carried[static_cast<size_t>(s)]->sharding;
  }
  EmitForward(body, sb, g, NeededFor(body, {root}));
  std::vector<Instruction*> next;
  for (int64_t k = 0; k < n; ++k) {
    next.push_back(root->opcode == Opcode::kTuple ? g.value.at(root->operand(static_cast<size_t>(k)))
                                                  : sb.GetTupleElement(g.value.at(root), k));
  }
  // Writes x into row `iteration` of stack j.
  size_t j = 0;
  auto push = [&](Instruction* x) {
    std::vector<int64_t> one = x->shape.dims;
    one.insert(one.begin(), 1);
    std::vector<Instruction*> starts{sparams[0]};
    for (size_t d = 0; d < x->shape.dims.size(); ++d) starts.push_back(S32(sb, 0));
    Instruction* stack = stack_params[j++];
    Builder::ScopeGuard scope(sb, SaveScope(*x));
    next.push_back(sb.DynamicUpdateSlice(stack, sb.Reshape(x, one), starts));
    next.back()->sharding = stack->sharding;
  };
  for (int64_t k = 0; k < n; ++k) {
    if (saved.stack_of[static_cast<size_t>(k)] >= 0) push(sparams[static_cast<size_t>(k + 1)]);
  }
  for (const auto& [v, s] : saved.values) push(g.value.at(v));
  save->set_root(sb.Tuple(next));

  saved.loop = b.Loop(carried, save, trips);
  std::vector<Instruction*> outputs;
  for (int64_t k = 0; k < n; ++k) outputs.push_back(b.GetTupleElement(saved.loop, k));
  f.value[&loop] = b.Tuple(outputs);
  f.loops[&loop] = std::move(saved);
}

std::vector<Instruction*> LoopVjp(Differentiator& d, Builder& b, Frame& f, const Adjoint& adjoint,
                                  const Instruction& i) {
  const auto saved_it = f.loops.find(&i);
  if (saved_it == f.loops.end()) NoRule(i, "the loop was not saved (internal)");
  const SavedLoop& saved = saved_it->second;
  const Computation& body = *i.body;
  const std::vector<Instruction*> params = body.parameters();
  const Instruction* root = body.root();
  const int64_t n = static_cast<int64_t>(i.operands.size());
  const int64_t trips = i.trip_count;

  // Backward loop carried values: adjoints of the float carried values, the stacks, the
  // passed-through values (which the recomputation reads).
  std::vector<int64_t> floats, through;
  for (int64_t k = 0; k < n; ++k) {
    if (CarriesGradient(i.operand(static_cast<size_t>(k))->shape)) floats.push_back(k);
    if (saved.stack_of[static_cast<size_t>(k)] < 0) through.push_back(k);
  }
  std::vector<Instruction*> init;
  for (int64_t k : floats) {
    Instruction* a = static_cast<size_t>(k) < adjoint.elements.size() ? adjoint.elements[static_cast<size_t>(k)] : nullptr;
    init.push_back(a != nullptr ? a : b.Zeros(i.operand(static_cast<size_t>(k))->shape));
  }
  std::vector<int64_t> stack_index;  // carried value k -> position of its stack in `init`
  for (int64_t k = 0; k < n; ++k) {
    const int64_t s = saved.stack_of[static_cast<size_t>(k)];
    if (s < 0) continue;
    stack_index.push_back(static_cast<int64_t>(init.size()));
    init.push_back(b.GetTupleElement(saved.loop, s));
  }
  const int64_t through_at = static_cast<int64_t>(init.size());
  for (int64_t k : through) init.push_back(f.value.at(i.operand(static_cast<size_t>(k))));
  const int64_t saved_at = static_cast<int64_t>(init.size());
  for (const auto& [v, s] : saved.values) init.push_back(b.GetTupleElement(saved.loop, s));

  Computation* grad = d.out().AddComputation(d.FreshComputationName(body.name() + ".grad"));
  Builder gb(grad);
  std::vector<Instruction*> gp;
  gp.push_back(gb.Parameter(0, Shape(DType::kS32, {}), "reverse_iteration"));
  for (size_t k = 0; k < init.size(); ++k) {
    const char* role = k < floats.size()                      ? "adjoint"
                       : k < static_cast<size_t>(through_at) ? "stack"
                       : k < static_cast<size_t>(saved_at)   ? "carried"
                                                             : "saved";
    gp.push_back(gb.Parameter(static_cast<int64_t>(k + 1), init[k]->shape, role));
  }
  Frame h;
  h.value[params[0]] = gb.Sub(S32(gb, trips - 1), gp[0]);
  for (int64_t k = 0, j = 0, t = 0; k < n; ++k) {
    const Shape& shape = i.operand(static_cast<size_t>(k))->shape;
    Instruction* v;
    if (saved.stack_of[static_cast<size_t>(k)] >= 0) {
      Instruction* stack = gp[static_cast<size_t>(stack_index[static_cast<size_t>(j++)] + 1)];
      std::vector<Instruction*> starts{h.value.at(params[0])};
      std::vector<int64_t> one = shape.dims;
      one.insert(one.begin(), 1);
      for (size_t d = 0; d < shape.dims.size(); ++d) starts.push_back(S32(gb, 0));
      v = ReadStack(gb, stack, starts, one, *params[static_cast<size_t>(k + 1)]);
    } else {
      v = gp[static_cast<size_t>(through_at + t++ + 1)];
    }
    h.value[params[static_cast<size_t>(k + 1)]] = v;
    if (CarriesGradient(shape)) h.active.insert(params[static_cast<size_t>(k + 1)]);
  }
  // Saved values are read from their stacks; only the rest is recomputed.
  for (size_t q = 0; q < saved.values.size(); ++q) {
    const Instruction* v = saved.values[q].first;
    std::vector<Instruction*> starts{h.value.at(params[0])};
    std::vector<int64_t> one = v->shape.dims;
    one.insert(one.begin(), 1);
    for (size_t dim = 0; dim < v->shape.dims.size(); ++dim) starts.push_back(S32(gb, 0));
    Instruction* stack = gp[static_cast<size_t>(saved_at) + q + 1];
    h.value[v] = ReadStack(gb, stack, starts, one, *v);
  }
  // What varies per iteration: the stacked carried values and the saved ones; what is
  // computed from them again is recomputation.
  std::unordered_set<const Instruction*> per_iteration;
  for (int64_t k = 0; k < n; ++k) {
    if (saved.stack_of[static_cast<size_t>(k)] >= 0) per_iteration.insert(params[static_cast<size_t>(k + 1)]);
  }
  for (const auto& [v, s] : saved.values) per_iteration.insert(v);
  d.EmitForward(body, gb, h, NeededFor(body, {root}), &per_iteration);
  Adjoint& seed = h.adjoint[root];
  seed.elements.assign(static_cast<size_t>(n), nullptr);
  for (size_t q = 0; q < floats.size(); ++q) seed.elements[static_cast<size_t>(floats[q])] = gp[q + 1];
  d.Backward(body, gb, h);
  std::vector<Instruction*> next;
  for (int64_t k : floats) {
    const Instruction* p = params[static_cast<size_t>(k + 1)];
    const auto a = h.adjoint.find(p);
    next.push_back(a != h.adjoint.end() && a->second.array != nullptr ? a->second.array
                                                                      : gb.Zeros(p->shape));
  }
  for (size_t k = floats.size(); k < init.size(); ++k) next.push_back(gp[k + 1]);
  grad->set_root(gb.Tuple(next));

  Instruction* back = b.Loop(init, grad, trips);
  std::vector<Instruction*> adjoints(static_cast<size_t>(n), nullptr);
  for (size_t q = 0; q < floats.size(); ++q) {
    adjoints[static_cast<size_t>(floats[q])] = b.GetTupleElement(back, static_cast<int64_t>(q));
  }
  return adjoints;
}

}  // namespace podsim::ir::autodiff
