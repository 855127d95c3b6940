#include "sim/device/fusion.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "base/error.h"
#include "ir/visitor.h"

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

// How the fusion planner treats an op, after XLA's instruction fusion.
struct FusionTraits {
  bool loop_fusible = false;  // may sit inside a loop fusion (as root or producer)
  bool duplicable = false;    // duplicated into every consumer fusion that wants it, whatever it reads
  bool expensive = false;     // XLA's InstructionFusion::IsExpensive: worth computing once
  bool reduce_root = false;   // roots an input fusion
  bool contraction = false;   // dot / convolution: roots an output fusion
};

// The traits, per op: elementwise ops, broadcast, reshape, dynamic-slice, iota and constant are
// loop-fusible; log, tanh and power are expensive (everything else elementwise is cheap to
// repeat: divide, exp, sqrt and rsqrt are single instructions of the vector unit's
// transcendental path, as XLA's GPU fusion also deems them for f32 / f16); constant, iota and
// broadcast are duplicable.
class FusionTraitsOf : public ir::ConstVisitor<FusionTraits> {
 public:
  FusionTraits DefaultAction(const Instruction&) override { return {}; }
  FusionTraits HandleElementwise(const Instruction&) override { return Loop(); }
  FusionTraits HandleLog(const Instruction&) override { return Expensive(); }
  FusionTraits HandleTanh(const Instruction&) override { return Expensive(); }
  FusionTraits HandlePower(const Instruction&) override { return Expensive(); }
  FusionTraits HandleConvert(const Instruction&) override { return Loop(); }
  FusionTraits HandleReshape(const Instruction&) override { return Loop(); }
  FusionTraits HandleConstant(const Instruction&) override { return Duplicable(); }
  FusionTraits HandleIota(const Instruction&) override { return Duplicable(); }
  FusionTraits HandleBroadcast(const Instruction&) override { return Duplicable(); }
  // A dynamic slice is read by its consumer's kernel at the offsets it computes (XLA fuses
  // dynamic-slice into loop and dot operand fusions): a layer's weight slice or a saved
  // activation's row is never written out on its own.
  FusionTraits HandleDynamicSlice(const Instruction&) override { return Loop(); }
  FusionTraits HandleReduce(const Instruction&) override { return {.reduce_root = true}; }
  FusionTraits HandleArgmax(const Instruction&) override { return {.reduce_root = true}; }
  FusionTraits HandleContraction(const Instruction&) override { return {.contraction = true}; }

 private:
  static FusionTraits Loop() { return {.loop_fusible = true}; }
  static FusionTraits Expensive() { return {.loop_fusible = true, .expensive = true}; }
  static FusionTraits Duplicable() { return {.loop_fusible = true, .duplicable = true}; }
};

FusionTraits TraitsOf(const Instruction* i) {
  FusionTraitsOf traits;
  return ir::Accept<FusionTraits>(*i, traits);
}

bool IsDuplicable(const Instruction* i) { return TraitsOf(i).duplicable; }
bool IsReduceRoot(const Instruction* i) { return TraitsOf(i).reduce_root; }
bool IsExpensive(const Instruction* i) { return TraitsOf(i).expensive; }
// An outer-product dot (no contracting dims) is an elementwise multiply of broadcasts
// (IsOuterProduct): loop-fusible and not a contraction.
bool IsLoopFusible(const Instruction* i) { return TraitsOf(i).loop_fusible || IsOuterProduct(*i); }
bool IsContraction(const Instruction* i) { return TraitsOf(i).contraction && !IsOuterProduct(*i); }

// A loop-fusible producer that may be duplicated into each consumer fusion: XLA's
// InstructionFusion duplicates a producer that is not expensive. Guard (XLA GPU's priority
// fusion makes the same call by its cost model): a copy must not stream more bytes from HBM
// than reading the materialized value would, so a residual add of two tensors, or a convert
// that narrows, is not duplicated, while x - broadcast(max), or a one-hot [S,E,C] tensor built
// from [S,E] positions, is. What a copy streams: its operands' bytes, except that a broadcast,
// constant or iota streams nothing at the value's rate (a broadcast's source, a row statistic or
// a per-token weight, is a fraction of the value and stays in on-chip buffers), and an operand
// that is itself cheap to duplicate is copied along with it, streaming what its own copy does.
// Computed once per computation in program order (operands before users), so a long chain
// needs no recursion.
class DuplicationGuard {
 public:
  explicit DuplicationGuard(const ir::Computation& comp) {
    for (const auto& owned : comp.instructions()) {
      const Instruction* i = owned.get();
      double bytes = 0;  // what a copy of i streams
      for (const Instruction* o : i->operands) {
        if (o->opcode == Opcode::kConstant || o->opcode == Opcode::kIota ||
            o->opcode == Opcode::kBroadcast) {
          continue;
        }
        auto it = stream_.find(o);
        bytes += it != stream_.end() ? it->second : static_cast<double>(o->shape.ByteSize());
      }
      if (IsLoopFusible(i) && !IsExpensive(i) &&
          bytes <= static_cast<double>(i->shape.ByteSize())) {
        stream_.emplace(i, bytes);
      }
    }
  }

  bool CheapToDuplicate(const Instruction* i) const { return stream_.count(i) != 0; }

 private:
  // The cheap-to-duplicate instructions and the bytes a copy of each streams.
  std::unordered_map<const Instruction*, double> stream_;
};

double CostBytes(const std::unordered_map<const Instruction*, ir::Cost>& costs,
                 const Instruction* i) {
  auto it = costs.find(i);
  if (it == costs.end()) throw Error("%" + i->name + ": no cost for fusion planning");
  return it->second.bytes_read + it->second.bytes_written;
}

using GroupIndex = std::unordered_map<const Instruction*, int32_t>;
using CopyIndex = std::unordered_map<const Instruction*, std::vector<int32_t>>;  // copy -> groups
using TakenBy = std::unordered_map<const Instruction*, std::unordered_set<const Instruction*>>;

class Planner {
 public:
  Planner(const ir::Computation& comp,
          const std::unordered_map<const Instruction*, ir::Cost>& costs)
      : comp_(comp), costs_(costs), guard_(comp) {
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
    GroupIndex group_of;
    TakenBy taken_by;  // duplicated op -> the users that compute it in their own group
    for (size_t n = instrs.size(); n-- > 0;) {
      const Instruction* i = instrs[n].get();
      if (group_of.count(i)) continue;
      if (enabled && (IsDuplicable(i) || guard_.CheapToDuplicate(i)) && i != comp_.root()) {
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
    std::reverse(groups.begin(), groups.end());
    const int32_t count = static_cast<int32_t>(groups.size());
    for (auto& [instr, index] : group_of) index = count - 1 - index;
    if (enabled) MergeMultiOutput(groups, group_of);
    // How many groups compute each value (owned or as a copy): a value read by a member that
    // another group also computes is read from HBM there, so it must be written.
    std::unordered_map<const Instruction*, int32_t> computed_in;
    for (const FusionGroup& g : groups) {
      for (const Instruction* m : g.members) ++computed_in[m];
    }
    FusionPlan plan;
    for (size_t k = 0; k < groups.size(); ++k) {
      Finish(groups[k], static_cast<int32_t>(k), group_of, computed_in, plan);
    }
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

  // Adds producers to `g` breadth-first from its root (instruction fusion). A member is owned
  // (computed here only; group_of) when every user of it is owned by the group; otherwise a
  // constant, iota, broadcast or cheap op (DuplicationGuard) is a copy, recomputed by each
  // fusion that wants it, and an expensive one (or a dot) stays out.
  void Grow(FusionGroup& g, GroupIndex& group_of, TakenBy& taken_by, int32_t index) {
    if (!IsLoopFusible(g.root) && !IsReduceRoot(g.root) && !IsContraction(g.root)) return;
    if (g.root->opcode == Opcode::kConstant || g.root->opcode == Opcode::kIota) return;
    bool has_contraction = IsContraction(g.root);
    std::unordered_set<const Instruction*> members = {g.root};
    std::unordered_set<const Instruction*> owned = {g.root};
    // Breadth-first over members; then copies whose users all turned out to be owned become
    // owned, which may let more producers in: repeat until nothing changes.
    for (bool again = true; again;) {
      for (size_t k = 0; k < g.members.size(); ++k) {
        const Instruction* consumer = g.members[k];
        for (const Instruction* p : consumer->operands) {
          if (members.count(p)) {
            // A copy computed here serves every consumer in the group.
            if (!owned.count(p)) taken_by[p].insert(consumer);
            continue;
          }
          if (!InComputation(p) || p == comp_.root()) continue;
          if (group_of.count(p)) continue;  // already the root or member of a later group
          bool take = false;
          if (IsLoopFusible(p)) {
            // Into an elementwise chain, a reduce, or a dot / convolution operand (the vector
            // unit applies the chain to each operand tile as it streams to the matrix unit).
            take = true;
          } else if (IsContraction(p)) {
            // Output fusion: the dot joins an elementwise consumer chain.
            take = !has_contraction && IsLoopFusible(g.root);
          }
          if (!take) continue;
          bool all_users_owned = true;
          for (const Instruction* u : UsersOf(p)) {
            all_users_owned = all_users_owned && owned.count(u);
          }
          const bool own = all_users_owned;
          if (!own && !IsDuplicable(p) && !guard_.CheapToDuplicate(p)) continue;
          if (IsContraction(p)) has_contraction = true;
          members.insert(p);
          g.members.push_back(p);
          if (own) {
            owned.insert(p);
            group_of[p] = index;
          } else {
            taken_by[p].insert(consumer);
          }
        }
      }
      again = false;
      for (const Instruction* m : g.members) {
        if (owned.count(m)) continue;
        bool all_users_owned = true;
        for (const Instruction* u : UsersOf(m)) all_users_owned = all_users_owned && owned.count(u);
        if (!all_users_owned) continue;
        owned.insert(m);
        group_of[m] = index;
        again = true;
      }
    }
    if (g.members.size() > 1) {
      g.kind = has_contraction ? FusionKind::kOutput
               : IsReduceRoot(g.root) ? FusionKind::kInput
                                       : FusionKind::kLoop;
    }
  }

  // May take part in a multi-output fusion: a loop or input fusion, or a lone elementwise op
  // or reduce (XLA's multi-output fusion takes loop and reduce fusions, not dots).
  bool IsMultiOutputFusible(const FusionGroup& g) const {
    if (g.kind == FusionKind::kLoop || g.kind == FusionKind::kInput) return true;
    if (g.kind != FusionKind::kNone) return false;
    const Instruction* r = g.root;
    return ir::IsElementwise(r->opcode) || IsReduceRoot(r);
  }

  // Reduction output fusion: a dot's kernel (`dot`: an output fusion or a lone dot, with no
  // reduce yet) may absorb the input fusion or lone reduce `reduce` that reduces values of the
  // dot's result shape. Each result tile passes through the vector unit on its way from the
  // matrix unit to HBM, which folds it into the reduction's partial results held on chip (as
  // XLA TPU's convolution fusions compute batch-norm statistics), so the reduce reads nothing
  // back. Only a producer-consumer pair qualifies (the caller checks that the reduce reads a
  // non-reduce value of the dot's kernel).
  bool IsReduceOfContraction(const FusionGroup& dot, const FusionGroup& reduce) const {
    const bool has_dot = dot.kind == FusionKind::kOutput ||
                         (dot.kind == FusionKind::kNone && IsContraction(dot.root));
    if (!has_dot || !IsReduceRoot(reduce.root) || reduce.kind == FusionKind::kOutput) return false;
    for (const Instruction* m : dot.members) {
      if (IsReduceRoot(m)) return false;
    }
    return IterationDims(reduce) == dot.root->shape.dims;
  }

  // Whether every value in `inputs` that group a does not compute comes from a kernel that runs
  // before a (slots are the execution order).
  bool ReadyAt(int32_t a, const std::unordered_set<const Instruction*>& inputs,
               const GroupIndex& group_of, const CopyIndex& copies) const {
    for (const Instruction* v : inputs) {
      const std::vector<int32_t> holders = GroupsComputing(v, group_of, copies);
      if (std::find(holders.begin(), holders.end(), a) != holders.end()) continue;
      for (int32_t h : holders) {
        if (h >= a) return false;
      }
    }
    return true;
  }

  // The shape a group's kernel loops over: a reduce's operand, else the root.
  static const std::vector<int64_t>& IterationDims(const FusionGroup& g) {
    return IsReduceRoot(g.root) ? g.root->operand(0)->shape.dims : g.root->shape.dims;
  }

  // Groups that compute `v` (its owner, or each group holding a copy).
  std::vector<int32_t> GroupsComputing(const Instruction* v, const GroupIndex& group_of,
                                       const CopyIndex& copies) const {
    auto it = group_of.find(v);
    if (it != group_of.end()) return {it->second};
    auto c = copies.find(v);
    return c == copies.end() ? std::vector<int32_t>{} : c->second;
  }

  // Multi-output fusion (XLA's MultiOutputFusion pass; the GPU one's producer-consumer and
  // sibling cases). In execution order, group b absorbs an earlier group a when both are loop
  // or input fusions over the same iteration shape and
  //  - b reads a value a writes that is not a reduce (producer-consumer: the value is made on
  //    chip; it is still written if a later kernel reads it), or b and a read a common input
  //    (siblings: the input is read once), and
  //  - every other kernel reading a's values runs after b (the merged kernel runs where b did,
  //    so nothing between them may need a's values, and no path a -> x -> b exists).
  // A reduce's result never feeds a member of the same kernel (it is complete only at the end).
  void MergeMultiOutput(std::vector<FusionGroup>& groups, GroupIndex& group_of) const {
    CopyIndex copies;
    for (size_t k = 0; k < groups.size(); ++k) {
      for (const Instruction* m : groups[k].members) {
        auto it = group_of.find(m);
        if (it == group_of.end()) copies[m].push_back(static_cast<int32_t>(k));
      }
    }
    std::vector<bool> alive(groups.size(), true);
    auto inputs_of = [&](const FusionGroup& g) {
      std::unordered_set<const Instruction*> inside(g.members.begin(), g.members.end());
      std::unordered_set<const Instruction*> in;
      for (const Instruction* m : g.members) {
        for (const Instruction* o : m->operands) {
          if (!inside.count(o)) in.insert(o);
        }
      }
      return in;
    };
    for (size_t b = 0; b < groups.size(); ++b) {
      if (!IsMultiOutputFusible(groups[b])) continue;
      for (bool merged = true; merged;) {
        merged = false;
        const auto b_inputs = inputs_of(groups[b]);
        // Candidates: producers of b's inputs and other readers of them, earlier than b.
        std::vector<int32_t> candidates;
        for (const Instruction* v : b_inputs) {
          for (int32_t a : GroupsComputing(v, group_of, copies)) candidates.push_back(a);
          for (const Instruction* u : UsersOf(v)) {
            for (int32_t a : GroupsComputing(u, group_of, copies)) candidates.push_back(a);
          }
        }
        std::sort(candidates.begin(), candidates.end(), std::greater<>());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        for (int32_t a : candidates) {
          if (a >= static_cast<int32_t>(b) || !alive[static_cast<size_t>(a)]) continue;
          const FusionGroup& ga = groups[static_cast<size_t>(a)];
          const bool into_dot = IsReduceOfContraction(ga, groups[b]);
          if (!into_dot &&
              (!IsMultiOutputFusible(ga) || IterationDims(ga) != IterationDims(groups[b]))) {
            continue;
          }
          bool ok = true, consumes = false;
          for (const Instruction* m : ga.members) {
            auto owner = group_of.find(m);
            if (owner == group_of.end() || owner->second != a) continue;  // a copy
            for (const Instruction* u : UsersOf(m)) {
              for (int32_t h : GroupsComputing(u, group_of, copies)) {
                if (h == a) continue;
                if (h == static_cast<int32_t>(b)) {
                  consumes = true;
                  if (IsReduceRoot(m)) ok = false;
                } else if (h < static_cast<int32_t>(b)) {  // runs before b (slots are the order)
                  ok = false;
                }
              }
            }
          }
          if (!ok || (into_dot && !consumes)) continue;
          if (!consumes) {
            const auto a_inputs = inputs_of(ga);
            bool shared = false;
            for (const Instruction* v : a_inputs) shared = shared || b_inputs.count(v);
            if (!shared) continue;
          }
          const bool hoist = into_dot && ReadyAt(a, b_inputs, group_of, copies);
          // Merge a into b.
          FusionGroup& gb = groups[b];
          std::unordered_set<const Instruction*> have(gb.members.begin(), gb.members.end());
          for (const Instruction* m : ga.members) {
            auto owner = group_of.find(m);
            if (owner != group_of.end() && owner->second == a) {
              owner->second = static_cast<int32_t>(b);
            } else {
              auto& c = copies[m];
              c.erase(std::remove(c.begin(), c.end(), a), c.end());
              if (have.count(m)) continue;
              c.push_back(static_cast<int32_t>(b));
            }
            if (have.insert(m).second) gb.members.push_back(m);
          }
          if (into_dot) {
            gb.kind = FusionKind::kOutput;
          } else if (ga.kind == FusionKind::kInput || IsReduceRoot(ga.root) ||
                     gb.kind == FusionKind::kInput || IsReduceRoot(gb.root)) {
            gb.kind = FusionKind::kInput;
          } else {
            gb.kind = FusionKind::kLoop;
          }
          alive[static_cast<size_t>(a)] = false;
          if (hoist) {
            // The merged kernel runs where the dot did: everything it reads is ready there, and
            // the dot's operands need not stay live until the reduce's old place.
            groups[static_cast<size_t>(a)] = std::move(gb);
            gb = FusionGroup();
            alive[static_cast<size_t>(a)] = true;
            alive[b] = false;
            for (auto& [instr, index] : group_of) {
              if (index == static_cast<int32_t>(b)) index = a;
            }
            for (auto& [instr, holders] : copies) {
              std::replace(holders.begin(), holders.end(), static_cast<int32_t>(b), a);
            }
          }
          // A dot's kernel takes nothing more (IsMultiOutputFusible is false for it now).
          merged = !into_dot;
          break;
        }
      }
    }
    // Drop the absorbed groups and renumber.
    std::vector<int32_t> renumber(groups.size(), -1);
    std::vector<FusionGroup> kept;
    for (size_t k = 0; k < groups.size(); ++k) {
      if (!alive[k]) continue;
      renumber[k] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(groups[k]));
    }
    for (auto& [instr, index] : group_of) index = renumber[static_cast<size_t>(index)];
    groups = std::move(kept);
  }

  // Orders members, collects inputs, outputs and bytes.
  void Finish(FusionGroup& g, int32_t index, const GroupIndex& group_of,
              const std::unordered_map<const Instruction*, int32_t>& computed_in,
              FusionPlan& plan) const {
    std::sort(g.members.begin(), g.members.end(),
              [&](const Instruction* a, const Instruction* b) { return position_.at(a) < position_.at(b); });
    if (g.members.size() == 1) {
      for (const Instruction* o : g.root->operands) {
        if (std::find(g.inputs.begin(), g.inputs.end(), o) == g.inputs.end()) g.inputs.push_back(o);
      }
      g.outputs = {g.root};
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
      // An owned member is written when something outside reads it: a user not in this group,
      // or one that another group computes too (a copy there reads m from HBM). The root
      // always is.
      auto owner = group_of.find(m);
      if (owner == group_of.end() || owner->second != index) continue;  // a copy
      bool read_outside = m == g.root || m == comp_.root();
      for (const Instruction* u : UsersOf(m)) {
        read_outside = read_outside || !inside.count(u) || computed_in.at(u) > 1;
      }
      if (read_outside) g.outputs.push_back(m);
    }
    // The root last (it is the latest member already, by position).
    double bytes = 0;
    for (const Instruction* out : g.outputs) bytes += static_cast<double>(out->shape.ByteSize());
    for (const Instruction* in : g.inputs) bytes += InputBytes(g, in);
    g.hbm_bytes = bytes;
    plan.fused_instructions += static_cast<int64_t>(g.members.size());
    plan.bytes_saved += std::max(0.0, unfused - bytes);
  }

  // Bytes a group reads of its input `in`: all of it, unless the group reads it only through
  // dynamic slices (operand 0), which read their windows.
  double InputBytes(const FusionGroup& g, const Instruction* in) const {
    double windows = 0;
    for (const Instruction* m : g.members) {
      for (size_t k = 0; k < m->operands.size(); ++k) {
        if (m->operands[k] != in) continue;
        if (m->opcode != Opcode::kDynamicSlice || k != 0) return static_cast<double>(in->shape.ByteSize());
        windows += static_cast<double>(m->shape.ByteSize());
      }
    }
    return std::min(windows, static_cast<double>(in->shape.ByteSize()));
  }

  const ir::Computation& comp_;
  const std::unordered_map<const Instruction*, ir::Cost>& costs_;
  std::unordered_map<const Instruction*, int64_t> position_;
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> users_;
  DuplicationGuard guard_;
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
