#include "ir/autodiff.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/error.h"
#include "ir/autodiff_internal.h"
#include "ir/builder.h"

namespace podsim::ir {
namespace autodiff {

void Differentiator::Backward(const Computation& src, Builder& b, Frame& f) {
  const auto& instrs = src.instructions();
  for (auto it = instrs.rbegin(); it != instrs.rend(); ++it) {
    const Instruction& i = **it;
    if (!f.active.count(&i)) continue;
    const auto a = f.adjoint.find(&i);
    if (a == f.adjoint.end()) continue;
    const Adjoint adjoint = a->second;  // a copy: the rules add entries to f.adjoint
    if (adjoint.array != nullptr && i.sharding && !adjoint.array->sharding) {
      adjoint.array->sharding = i.sharding;  // a gradient is sharded like its primal
    }
    Builder::ScopeGuard scope(b, i.scope.empty() ? "backward" : "backward/" + i.scope);
    ApplyVjp(*this, b, f, adjoint, i);
  }
}

}  // namespace autodiff

using autodiff::Differentiator;
using autodiff::Frame;
using autodiff::IsFloat;
using autodiff::NeededFor;
using autodiff::Where;

const char* LoopRematName(LoopRemat r) {
  switch (r) {
    case LoopRemat::kIterationInputs: return "per-layer";
    case LoopRemat::kDots: return "selective";
    case LoopRemat::kAll: return "none";
  }
  return "?";
}

LoopRemat ParseLoopRemat(const std::string& name) {
  for (LoopRemat r : {LoopRemat::kIterationInputs, LoopRemat::kDots, LoopRemat::kAll}) {
    if (name == LoopRematName(r)) return r;
  }
  throw Error("remat policy '" + name + "' is not one of none, selective, per-layer");
}

std::unique_ptr<Module> Differentiate(const Module& module, const std::vector<std::string>& wrt,
                                      const std::string& loss, LoopRemat remat) {
  const Computation* entry = module.entry();
  if (entry == nullptr) throw Error("differentiate: module '" + module.name() + "' has no entry computation");
  const std::vector<Instruction*> params = entry->parameters();
  std::vector<const Instruction*> targets;
  for (const std::string& name : wrt) {
    const Instruction* found = nullptr;
    for (const Instruction* p : params) {
      if (p->name == name) found = p;
    }
    if (found == nullptr) {
      std::string names;
      for (const Instruction* p : params) names += (names.empty() ? "" : ", ") + p->name;
      throw Error("differentiate: wrt '" + name + "' names no parameter of the entry computation (" +
                  (names.empty() ? "it has none" : "parameters: " + names) + ")");
    }
    if (found->shape.is_tuple || !IsFloat(found->shape.dtype)) {
      throw Error("differentiate: wrt '" + name + "' is " + found->shape.ToString() +
                  "; only f32 and bf16 arrays have gradients");
    }
    if (std::find(targets.begin(), targets.end(), found) != targets.end()) {
      throw Error("differentiate: wrt '" + name + "' is named twice");
    }
    targets.push_back(found);
  }
  const Instruction* loss_instr = entry->root();
  if (!loss.empty()) {
    loss_instr = nullptr;
    for (const auto& i : entry->instructions()) {
      if (i->name == loss) loss_instr = i.get();
    }
    if (loss_instr == nullptr) {
      throw Error("differentiate: loss '" + loss + "' names no instruction of the entry computation");
    }
  }
  if (loss_instr == nullptr || loss_instr->shape.is_tuple || loss_instr->shape.rank() != 0 ||
      !IsFloat(loss_instr->shape.dtype)) {
    throw Error("differentiate: the loss " +
                (loss_instr == nullptr ? std::string("(none)") : Where(*loss_instr) + " is " + loss_instr->shape.ToString()) +
                ", not an f32 or bf16 scalar");
  }

  auto out = std::make_unique<Module>(module.name());
  Differentiator d(*out, remat);
  for (const auto& c : module.computations()) {
    if (c.get() != entry) d.computations()[c.get()] = out->AddComputation(c->name());
  }
  for (const auto& c : module.computations()) {
    if (c.get() == entry) continue;
    Computation* copy = d.computations()[c.get()];
    std::unordered_map<const Instruction*, Instruction*> map;
    for (const auto& i : c->instructions()) {
      auto n = std::make_unique<Instruction>(*i);
      for (Instruction*& o : n->operands) o = map.at(o);
      if (n->body != nullptr) n->body = d.computations().at(n->body);
      map[i.get()] = copy->Add(std::move(n));
    }
    if (c->root() != nullptr) copy->set_root(map.at(c->root()));
  }
  Computation* main = out->AddComputation(entry->name(), /*is_entry=*/true);
  Builder b(main);
  Frame f;
  for (const Instruction* t : targets) f.active.insert(t);
  d.EmitForward(*entry, b, f, NeededFor(*entry, {loss_instr}));
  std::vector<Instruction*> results{f.value.at(loss_instr)};
  if (f.active.count(loss_instr)) {
    Builder::ScopeGuard scope(b, "backward");
    f.adjoint[loss_instr].array = b.ConstantScalar(loss_instr->shape.dtype, 1.0);
  }
  d.Backward(*entry, b, f);
  {
    Builder::ScopeGuard scope(b, "backward");
    for (const Instruction* t : targets) {
      const auto a = f.adjoint.find(t);
      Instruction* grad =
          a != f.adjoint.end() && a->second.array != nullptr ? a->second.array : b.Zeros(t->shape);
      if (t->sharding && !grad->sharding) grad->sharding = t->sharding;
      results.push_back(grad);
    }
    main->set_root(b.Tuple(results));
  }
  // The forward instructions the loss does not need, and the copies of loop bodies only the
  // rewritten loops replaced.
  out->RemoveDeadCode();
  out->OrderComputations();
  return out;
}

}  // namespace podsim::ir
