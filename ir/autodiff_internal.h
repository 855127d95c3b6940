#pragma once
// Internals of ir::Differentiate (ir/autodiff.h), shared by its three files:
//   autodiff.cc        the driver: forward emission, the reverse sweep, Differentiate
//   autodiff_rules.cc  the vector-Jacobian product of every op (ApplyVjp)
//   autodiff_loop.cc   counted loops: the forward loop that saves each iteration's inputs and
//                      the backward loop that runs the iterations in reverse
// Not for use outside ir/.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "ir/autodiff.h"
#include "ir/builder.h"
#include "ir/module.h"

namespace podsim::ir::autodiff {

inline bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kBF16; }

inline bool CarriesGradient(const Shape& s) {
  if (!s.is_tuple) return IsFloat(s.dtype);
  for (const Shape& e : s.tuple_shapes) {
    if (CarriesGradient(e)) return true;
  }
  return false;
}

inline std::string Where(const Instruction& i) {
  return "%" + i.name + " (" + std::string(OpcodeName(i.opcode)) + ")";
}

[[noreturn]] inline void NoRule(const Instruction& i, const std::string& why = "") {
  throw Error("differentiate: no gradient rule for " + Where(i) + (why.empty() ? "" : ": " + why));
}

// The adjoint of one value: an array, or one per tuple element (nullptr: zero so far).
struct Adjoint {
  Instruction* array = nullptr;
  std::vector<Instruction*> elements;
};

// A forward loop emitted with stacks of the values each iteration starts from.
struct SavedLoop {
  Instruction* loop = nullptr;   // carried values 0..n-1, then the stacks
  std::vector<int64_t> stack_of;  // per carried value: its stack's tuple index; -1: passed through
  // Body values saved per iteration (LoopRemat kDots, kAll) and their stacks' tuple indices.
  std::vector<std::pair<const Instruction*, int64_t>> values;
};

// One emission of a source computation into a target one. Keys are source instructions.
struct Frame {
  std::unordered_map<const Instruction*, Instruction*> value;  // source -> emitted
  std::unordered_map<const Instruction*, SavedLoop> loops;
  std::unordered_map<const Instruction*, Adjoint> adjoint;
  std::unordered_set<const Instruction*> active;  // depends on a differentiated value
};

// The instructions of `c` on which one of `targets` depends (targets included).
inline std::unordered_set<const Instruction*> NeededFor(const Computation& c,
                                                 const std::vector<const Instruction*>& targets) {
  std::unordered_set<const Instruction*> needed(targets.begin(), targets.end());
  const auto& instrs = c.instructions();
  for (auto it = instrs.rbegin(); it != instrs.rend(); ++it) {
    if (!needed.count(it->get())) continue;
    for (const Instruction* o : (*it)->operands) needed.insert(o);
  }
  return needed;
}

class Differentiator {
 public:
  Differentiator(Module& out, LoopRemat remat) : out_(out), remat_(remat) {}
  std::unordered_map<const Computation*, Computation*>& computations() { return comp_map_; }

  // Emits the instructions of `src` into `b` in order, except those already mapped (parameters,
  // saved values). Marks as active those that depend on an active one; a loop that is active
  // and `needed` is emitted with the stacks its gradient needs. With `recompute_from` (a
  // backward loop's copy of its body's forward: the values it starts from each iteration), a copy
  // that depends on one of them gets the scope "recompute/<scope>" (work redone because it was
  // not saved), any other "backward/<scope>" (what the backward pass reads anyway: a layer's
  // weight slices, constants).
  void EmitForward(const Computation& src, Builder& b, Frame& f,
                   const std::unordered_set<const Instruction*>& needed,
                   const std::unordered_set<const Instruction*>* recompute_from = nullptr) {
    std::unordered_set<const Instruction*> recomputed;
    if (recompute_from != nullptr) recomputed = *recompute_from;
    for (const auto& owned : src.instructions()) {
      const Instruction& i = *owned;
      const bool mapped = f.value.count(&i) > 0;
      if (i.opcode == Opcode::kParameter ? mapped : !mapped && !needed.count(&i)) continue;
      if (CarriesGradient(i.shape)) {
        for (const Instruction* o : i.operands) {
          if (f.active.count(o)) {
            f.active.insert(&i);
            break;
          }
        }
      }
      if (mapped) continue;
      if (i.opcode == Opcode::kLoop && f.active.count(&i) && needed.count(&i)) {
        EmitSavingLoop(i, b, f);
        continue;
      }
      auto copy = std::make_unique<Instruction>(i);
      for (Instruction*& o : copy->operands) o = f.value.at(o);
      if (copy->body != nullptr) copy->body = comp_map_.at(copy->body);
      copy->parent = nullptr;
      if (recompute_from != nullptr) {
        bool recompute = false;
        for (const Instruction* o : i.operands) recompute = recompute || recomputed.count(o) > 0;
        if (recompute) recomputed.insert(&i);
        const char* prefix = recompute ? "recompute" : "backward";
        copy->scope = copy->scope.empty() ? prefix : prefix + ("/" + copy->scope);
      }
      f.value[&i] = b.Add(std::move(copy), /*infer_shape=*/false);
    }
  }

  // Applies the vector-Jacobian product of every active instruction of `src` that has an
  // adjoint, in reverse order; the adjoints of its parameters are left in f.adjoint.
  void Backward(const Computation& src, Builder& b, Frame& f);

  std::string FreshComputationName(const std::string& stem) {
    std::string name = stem;
    for (int k = 1; out_.FindComputation(name) != nullptr; ++k) name = stem + "." + std::to_string(k);
    return name;
  }

  Module& out() { return out_; }

 private:
  void EmitSavingLoop(const Instruction& loop, Builder& b, Frame& f);

  Module& out_;
  LoopRemat remat_;
  std::unordered_map<const Computation*, Computation*> comp_map_;  // source -> copy
};

inline Instruction* S32(Builder& b, int64_t v) {
  return b.ConstantScalar(DType::kS32, static_cast<double>(v));
}

inline std::vector<int64_t> Iota(int64_t begin, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// A softmax written as primitives (models' AddSoftmaxLastDim, jax.nn.softmax lowered):
//   p = e / broadcast(reduce-add(e, {d})),  e = exp(x - broadcast(reduce-max(x, {d})))
// with both reductions over the one dim d and both broadcasts back over the other dims.
struct SoftmaxMatch {
  const Instruction* x = nullptr;  // the logits
  int64_t dim = 0;
  // The instructions between x and p (exp, subtract, the reductions and their broadcasts).
  std::vector<const Instruction*> interior;
};
// The softmax whose output is `divide`, if it is one.
inline std::optional<SoftmaxMatch> MatchSoftmax(const Instruction& divide) {
  auto reduced_back = [](const Instruction* bcast, Opcode reduce, ReduceKind kind) -> const Instruction* {
    if (bcast->opcode != Opcode::kBroadcast) return nullptr;
    const Instruction* r = bcast->operand(0);
    if (r->opcode != reduce || r->reduce_kind != kind || r->dimensions.size() != 1) return nullptr;
    const int64_t d = r->dimensions[0];
    std::vector<int64_t> keep;
    for (int64_t k = 0; k < bcast->shape.rank(); ++k) {
      if (k != d) keep.push_back(k);
    }
    if (bcast->dimensions != keep || bcast->shape.dims != r->operand(0)->shape.dims) return nullptr;
    return r;
  };
  if (divide.opcode != Opcode::kDivide) return std::nullopt;
  const Instruction* e = divide.operand(0);
  const Instruction* sum = reduced_back(divide.operand(1), Opcode::kReduce, ReduceKind::kAdd);
  if (sum == nullptr || sum->operand(0) != e || e->opcode != Opcode::kExp) return std::nullopt;
  const Instruction* shifted = e->operand(0);
  if (shifted->opcode != Opcode::kSubtract) return std::nullopt;
  const Instruction* x = shifted->operand(0);
  const Instruction* max = reduced_back(shifted->operand(1), Opcode::kReduce, ReduceKind::kMax);
  if (max == nullptr || max->operand(0) != x || max->dimensions != sum->dimensions) return std::nullopt;
  return SoftmaxMatch{x, sum->dimensions[0], {e, divide.operand(1), sum, shifted, shifted->operand(1), max}};
}

// Adds the vector-Jacobian product of `i` for its `adjoint` to the adjoints of its operands in
// f.adjoint (emitting into `b`); throws naming `i` when the op has no rule.
void ApplyVjp(Differentiator& d, Builder& b, Frame& f, const Adjoint& adjoint,
              const Instruction& i);

// The backward loop of the forward loop `loop` (emitted by EmitSavingLoop) for its tuple
// `adjoint`: per carried value, the adjoint of the loop's operand (nullptr when it carries no
// gradient).
std::vector<Instruction*> LoopVjp(Differentiator& d, Builder& b, Frame& f, const Adjoint& adjoint,
                                  const Instruction& loop);

}  // namespace podsim::ir::autodiff
