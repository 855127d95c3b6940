#include "sim/fusion.h"

#include <algorithm>
#include <unordered_set>

#include "ir/error.h"

namespace podsim::sim {

const char* FusionKindName(FusionKind kind) {
  switch (kind) {
    case FusionKind::kNone: return "none";
    case FusionKind::kLoop: return "loop";
    case FusionKind::kInput: return "input";
    case FusionKind::kOutput: return "output";
  }
  return "?";
}

namespace {

using ir::Instruction;
using ir::Opcode;

// Duplicated into every consumer fusion that wants it.
bool IsDuplicable(Opcode op) {
  return op == Opcode::kConstant || op == Opcode::kIota || op == Opcode::kBroadcast;
}

// May sit inside a loop fusion (as root or producer).
bool IsLoopFusible(Opcode op) {
  return ir::IsElementwise(op) || op == Opcode::kBroadcast || op == Opcode::kReshape ||
         op == Opcode::kIota || op == Opcode::kConstant;
}

bool IsReduceRoot(Opcode op) { return op == Opcode::kReduce || op == Opcode::kArgmax; }
bool IsContraction(Opcode op) { return op == Opcode::kDot || op == Opcode::kConvolution; }

// The same, per instruction: an outer-product dot (no contracting dims) is an elementwise
// multiply of broadcasts (IsOuterProduct), loop-fusible and not a contraction.
bool IsLoopFusible(const Instruction* i) { return IsLoopFusible(i->opcode) || IsOuterProduct(*i); }
bool IsContraction(const Instruction* i) { return IsContraction(i->opcode) && !IsOuterProduct(*i); }

// May take a producer into a dot / convolution operand.
bool IsCheapOperandProducer(Opcode op) {
  return op == Opcode::kConvert || op == Opcode::kReshape || IsDuplicable(op);
}

double CostBytes(const std::unordered_map<const Instruction*, ir::Cost>& costs,
                 const Instruction* i) {
  auto it = costs.find(i);
  if (it == costs.end()) throw Error("%" + i->name + ": no cost for fusion planning");
  return it->second.bytes_read + it->second.bytes_written;
}

class Planner {
 public:
  Planner(const ir::Computation& comp,
          const std::unordered_map<const Instruction*, ir::Cost>& costs)
      : comp_(comp), costs_(costs) {
    const auto& instrs = comp.instructions();
    for (size_t n = 0; n < instrs.size(); ++n) {
      position_[instrs[n].get()] = static_cast<int64_t>(n);
      for (const Instruction* o : instrs[n]->operands) {
        auto& u = users_[o];
        if (std::find(u.begin(), u.end(), instrs[n].get()) == u.end()) u.push_back(instrs[n].get());
      }
    }
  }

  FusionPlan Run(bool enabled) {
    const auto& instrs = comp_.instructions();
    std::vector<FusionGroup> groups;  // in reverse order of roots
    std::unordered_map<const Instruction*, int32_t> group_of;
    // Users that took a duplicable op into their group.
    std::unordered_map<const Instruction*, std::unordered_set<const Instruction*>> taken_by;
    for (size_t n = instrs.size(); n-- > 0;) {
      const Instruction* i = instrs[n].get();
      if (group_of.count(i)) continue;
      if (enabled && IsDuplicable(i->opcode) && i != comp_.root()) {
        const auto& users = UsersOf(i);
        auto it = taken_by.find(i);
        const size_t taken = it == taken_by.end() ? 0 : it->second.size();
        if (!users.empty() && taken == users.size()) continue;  // every user computes it
      }
      FusionGroup g;
      g.root = i;
      g.members.push_back(i);
      if (enabled) Grow(g, group_of, taken_by, static_cast<int32_t>(groups.size()));
      group_of[i] = static_cast<int32_t>(groups.size());
      groups.push_back(std::move(g));
    }
    FusionPlan plan;
    std::reverse(groups.begin(), groups.end());
    const int32_t count = static_cast<int32_t>(groups.size());
    for (auto& [instr, index] : group_of) index = count - 1 - index;
    for (FusionGroup& g : groups) Finish(g, plan);
    plan.groups = std::move(groups);
    plan.group_of = std::move(group_of);
    return plan;
  }

 private:
  const std::vector<const Instruction*>& UsersOf(const Instruction* i) const {
    static const std::vector<const Instruction*> kNone;
    auto it = users_.find(i);
    return it == users_.end() ? kNone : it->second;
  }

  bool InComputation(const Instruction* i) const { return position_.count(i) > 0; }

  // Adds producers to `g` breadth-first from its root.
  void Grow(FusionGroup& g, std::unordered_map<const Instruction*, int32_t>& group_of,
            std::unordered_map<const Instruction*, std::unordered_set<const Instruction*>>&
                taken_by,
            int32_t index) {
    const Opcode root_op = g.root->opcode;
    if (!IsLoopFusible(g.root) && !IsReduceRoot(root_op) && !IsContraction(g.root)) return;
    if (root_op == Opcode::kConstant || root_op == Opcode::kIota) return;
    bool has_contraction = IsContraction(g.root);
    std::unordered_set<const Instruction*> members = {g.root};
    for (size_t k = 0; k < g.members.size(); ++k) {
      const Instruction* consumer = g.members[k];
      for (const Instruction* p : consumer->operands) {
        if (members.count(p)) {
          // A duplicated op computed here serves every consumer in the group.
          if (IsDuplicable(p->opcode) && !group_of.count(p)) taken_by[p].insert(consumer);
          continue;
        }
        if (!InComputation(p) || p == comp_.root()) continue;
        if (group_of.count(p)) continue;  // already the root or member of a later group
        const Opcode op = p->opcode;
        bool take = false;
        if (IsContraction(consumer)) {
          take = IsCheapOperandProducer(op);
        } else if (IsLoopFusible(p)) {
          take = true;
        } else if (IsContraction(p)) {
          // Output fusion: the dot joins an elementwise consumer chain.
          take = !has_contraction && IsLoopFusible(g.root);
        }
        if (!take) continue;
        const bool duplicate = IsDuplicable(op);
        if (!duplicate) {
          bool all_users_inside = true;
          for (const Instruction* u : UsersOf(p)) all_users_inside = all_users_inside && members.count(u);
          if (!all_users_inside) continue;
        }
        if (IsContraction(p)) has_contraction = true;
        members.insert(p);
        g.members.push_back(p);
        if (duplicate) {
          taken_by[p].insert(consumer);
        } else {
          group_of[p] = index;
        }
      }
    }
    if (g.members.size() > 1) {
      g.kind = has_contraction ? FusionKind::kOutput
               : IsReduceRoot(root_op) ? FusionKind::kInput
                                       : FusionKind::kLoop;
    }
  }

  // Orders members, collects inputs and bytes.
  void Finish(FusionGroup& g, FusionPlan& plan) const {
    std::sort(g.members.begin(), g.members.end(),
              [&](const Instruction* a, const Instruction* b) { return position_.at(a) < position_.at(b); });
    if (g.members.size() == 1) {
      for (const Instruction* o : g.root->operands) {
        if (std::find(g.inputs.begin(), g.inputs.end(), o) == g.inputs.end()) g.inputs.push_back(o);
      }
      g.bitcast = IsBitcast(*g.root);
      g.hbm_bytes = g.bitcast ? 0.0 : CostBytes(costs_, g.root);
      return;
    }
    std::unordered_set<const Instruction*> inside(g.members.begin(), g.members.end());
    double unfused = 0;
    for (const Instruction* m : g.members) {
      unfused += CostBytes(costs_, m);
      for (const Instruction* o : m->operands) {
        if (inside.count(o) || std::find(g.inputs.begin(), g.inputs.end(), o) != g.inputs.end()) {
          continue;
        }
        g.inputs.push_back(o);
      }
    }
    double bytes = static_cast<double>(g.root->shape.ByteSize());
    for (const Instruction* in : g.inputs) bytes += static_cast<double>(in->shape.ByteSize());
    g.hbm_bytes = bytes;
    plan.fused_instructions += static_cast<int64_t>(g.members.size());
    plan.bytes_saved += std::max(0.0, unfused - bytes);
  }

  const ir::Computation& comp_;
  const std::unordered_map<const Instruction*, ir::Cost>& costs_;
  std::unordered_map<const Instruction*, int64_t> position_;
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> users_;
};

}  // namespace

bool IsBitcast(const ir::Instruction& instr) {
  if (instr.opcode != Opcode::kReshape && instr.opcode != Opcode::kTranspose) return false;
  if (instr.operands.size() != 1) return false;
  // The non-unit dims of the result in memory (row-major) order...
  std::vector<int64_t> out;
  for (int64_t d : instr.shape.dims) {
    if (d != 1) out.push_back(d);
  }
  // ... against the operand's: a transpose reads them in permutation order.
  std::vector<int64_t> in;
  const auto& src = instr.operand(0)->shape.dims;
  if (instr.opcode == Opcode::kTranspose) {
    for (int64_t p : instr.dimensions) {
      const int64_t d = src[static_cast<size_t>(p)];
      if (d != 1) in.push_back(p);
    }
    // Non-unit source dims must be visited in increasing order.
    return std::is_sorted(in.begin(), in.end());
  }
  for (int64_t d : src) {
    if (d != 1) in.push_back(d);
  }
  return in == out;
}

bool IsOuterProduct(const ir::Instruction& instr) {
  return instr.opcode == Opcode::kDot && instr.dot.lhs_contracting.empty() &&
         instr.dot.rhs_contracting.empty();
}

FusionPlan PlanFusion(const ir::Computation& computation,
                      const std::unordered_map<const ir::Instruction*, ir::Cost>& costs,
                      bool enabled) {
  return Planner(computation, costs).Run(enabled);
}

}  // namespace podsim::sim
