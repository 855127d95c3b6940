#include "ir/module.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"

namespace podsim::ir {

Instruction* Computation::Add(std::unique_ptr<Instruction> instr) {
  instr->parent = this;
  if (instr->name.empty() || !parent_->ReserveName(instr->name)) {
    instr->name = parent_->UniqueName(instr->name.empty() ? std::string(OpcodeName(instr->opcode))
                                                          : instr->name);
  }
  return AppendNamed(std::move(instr));
}

Instruction* Computation::AppendNamed(std::unique_ptr<Instruction> instr) {
  instr->parent = this;
  instructions_.push_back(std::move(instr));
  return instructions_.back().get();
}

Instruction* Computation::root() const {
  if (root_) return root_;
  return instructions_.empty() ? nullptr : instructions_.back().get();
}

std::vector<Instruction*> Computation::parameters() const {
  std::vector<Instruction*> params;
  for (const auto& i : instructions_) {
    if (i->opcode == Opcode::kParameter) params.push_back(i.get());
  }
  std::stable_sort(params.begin(), params.end(), [](const Instruction* a, const Instruction* b) {
    return a->parameter_number < b->parameter_number;
  });
  return params;
}

Computation* Module::AddComputation(const std::string& name, bool is_entry) {
  if (FindComputation(name)) throw Error("duplicate computation name '" + name + "'");
  computations_.push_back(std::make_unique<Computation>(name, this));
  Computation* c = computations_.back().get();
  if (is_entry) {
    if (entry_) throw Error("module '" + name_ + "' already has an entry computation");
    entry_ = c;
  }
  return c;
}

Computation* Module::FindComputation(const std::string& name) const {
  for (const auto& c : computations_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

std::string Module::UniqueName(const std::string& stem) {
  if (used_names_.insert(stem).second) return stem;
  int64_t& next = next_suffix_[stem];
  while (true) {
    std::string candidate = stem + "." + std::to_string(++next);
    if (used_names_.insert(candidate).second) return candidate;
  }
}

bool Module::ReserveName(const std::string& name) { return used_names_.insert(name).second; }

int64_t Module::InstructionCount() const {
  int64_t n = 0;
  for (const auto& c : computations_) n += static_cast<int64_t>(c->instructions().size());
  return n;
}

Instruction* Computation::InsertAfter(const Instruction* after,
                                      std::unique_ptr<Instruction> instr) {
  auto at = std::find_if(instructions_.begin(), instructions_.end(),
                         [&](const std::unique_ptr<Instruction>& i) { return i.get() == after; });
  if (at == instructions_.end()) {
    throw Error("computation " + name_ + ": InsertAfter: the instruction is not here");
  }
  Instruction* root = this->root();
  instr->parent = this;
  if (instr->name.empty() || !parent_->ReserveName(instr->name)) {
    instr->name = parent_->UniqueName(instr->name.empty() ? std::string(OpcodeName(instr->opcode))
                                                          : instr->name);
  }
  Instruction* added = instr.get();
  instructions_.insert(at + 1, std::move(instr));
  root_ = root;
  return added;
}

void Computation::RemoveDeadInstructions() {
  Instruction* r = root();
  if (r == nullptr) return;
  std::unordered_set<const Instruction*> live = {r};
  for (auto it = instructions_.rbegin(); it != instructions_.rend(); ++it) {
    if (!live.count(it->get())) continue;
    for (const Instruction* o : (*it)->operands) live.insert(o);
  }
  std::erase_if(instructions_, [&](const std::unique_ptr<Instruction>& i) {
    return i->opcode != Opcode::kParameter && !live.count(i.get());
  });
  root_ = r;
}

void Module::RemoveDeadCode() {
  if (entry_ == nullptr) return;
  std::unordered_set<const Computation*> reachable;
  std::function<void(Computation*)> visit = [&](Computation* c) {
    if (!reachable.insert(c).second) return;
    c->RemoveDeadInstructions();
    for (const auto& i : c->instructions()) {
      if (i->body != nullptr) visit(i->body);
    }
  };
  visit(entry_);
  std::erase_if(computations_, [&](const std::unique_ptr<Computation>& c) {
    return !reachable.count(c.get());
  });
}

void Module::OrderComputations() {
  std::vector<std::unique_ptr<Computation>> ordered;
  std::unordered_set<const Computation*> placed;
  std::function<void(Computation*)> place = [&](Computation* c) {
    if (!placed.insert(c).second) return;
    for (const auto& i : c->instructions()) {
      if (i->body != nullptr) place(i->body);
    }
    for (auto& owned : computations_) {
      if (owned.get() == c) ordered.push_back(std::move(owned));
    }
  };
  for (size_t k = 0; k < computations_.size(); ++k) {
    Computation* c = computations_[k].get();
    if (c != nullptr && c != entry_) place(c);
  }
  if (entry_ != nullptr) place(entry_);
  computations_ = std::move(ordered);
}

std::unique_ptr<Module> Module::Clone() const {
  auto out = std::make_unique<Module>(name_);
  std::unordered_map<const Computation*, Computation*> comp_map;
  std::unordered_map<const Instruction*, Instruction*> instr_map;
  for (const auto& c : computations_) {
    Computation* nc = out->AddComputation(c->name(), c.get() == entry_);
    comp_map[c.get()] = nc;
  }
  for (const auto& c : computations_) {
    Computation* nc = comp_map[c.get()];
    for (const auto& i : c->instructions()) {
      auto copy = std::make_unique<Instruction>(*i);
      for (Instruction*& op : copy->operands) op = instr_map.at(op);
      if (copy->body) copy->body = comp_map.at(copy->body);
      Instruction* added = nc->Add(std::move(copy));
      instr_map[i.get()] = added;
    }
    if (c->root()) nc->set_root(instr_map.at(c->root()));
  }
  out->output_aliases_ = output_aliases_;
  return out;
}

Computation* Module::CopyComputation(const Computation& c) {
  std::unordered_map<const Computation*, Computation*> copied;
  std::function<Computation*(const Computation&)> copy = [&](const Computation& src) {
    if (auto it = copied.find(&src); it != copied.end()) return it->second;
    std::unordered_map<const Instruction*, Instruction*> instr_map;
    std::vector<std::unique_ptr<Instruction>> copies;
    for (const auto& i : src.instructions()) {
      auto n = std::make_unique<Instruction>(*i);
      if (n->body) n->body = copy(*n->body);
      copies.push_back(std::move(n));
    }
    Computation* out = AddComputation(UniqueName(src.name()));
    copied[&src] = out;
    for (size_t k = 0; k < copies.size(); ++k) {
      for (Instruction*& op : copies[k]->operands) op = instr_map.at(op);
      copies[k]->parent = out;
      instr_map[src.instructions()[k].get()] = out->Add(std::move(copies[k]));
    }
    if (src.root()) out->set_root(instr_map.at(src.root()));
    return out;
  };
  return copy(c);
}

}  // namespace podsim::ir
