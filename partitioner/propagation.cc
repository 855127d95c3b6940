#include "partitioner/propagation.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/error.h"
#include "partitioner/annotations.h"
#include "partitioner/propagation_rules.h"
#include "partitioner/sharding_transforms.h"
#include "partitioner/sharding_util.h"

namespace podsim::partitioner {

namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using Kind = Sharding::Kind;

// A sharding propagation reads: replicated or tiled, on an array. Maximal and manual are
// placements the pass leaves alone; they neither give nor take.
const Sharding* Usable(const Instruction& x) {
  if (!x.sharding || x.shape.is_tuple) return nullptr;
  const Kind k = x.sharding->kind;
  return k == Kind::kReplicated || k == Kind::kTiled ? &*x.sharding : nullptr;
}

// The instruction whose value is element `j` of tuple-valued `t`, when the IR names one.
const Instruction* ElementInstruction(const Instruction& t, int64_t j) {
  if (t.opcode == Opcode::kTuple) {
    return j >= 0 && j < static_cast<int64_t>(t.operands.size()) ? t.operands[j] : nullptr;
  }
  if (t.opcode == Opcode::kGetTupleElement) {
    const Instruction* inner = ElementInstruction(*t.operands[0], t.tuple_index);
    return inner ? ElementInstruction(*inner, j) : nullptr;
  }
  return nullptr;
}

// Element `i` of tuple-valued `t` as the IR stands (see TupleElementSharding).
std::optional<Sharding> ElementOf(const Instruction& t, int64_t i,
                                  const internal::RuleOptions& rule_options) {
  switch (t.opcode) {
    case Opcode::kLoop: {
      if (t.body == nullptr) return std::nullopt;
      const std::vector<Instruction*> params = t.body->parameters();
      if (i + 1 >= static_cast<int64_t>(params.size())) return std::nullopt;
      const Sharding* s = Usable(*params[i + 1]);
      return s ? std::optional<Sharding>(*s) : std::nullopt;
    }
    case Opcode::kTopK: {
      const Sharding* s = Usable(*t.operands[0]);
      return s ? internal::Forward(t, 0, *s, rule_options) : std::nullopt;
    }
    case Opcode::kGetTupleElement: {
      const Instruction* inner = ElementInstruction(*t.operands[0], t.tuple_index);
      if (inner == nullptr || !inner->shape.is_tuple) return std::nullopt;
      return ElementOf(*inner, i, rule_options);
    }
    default: {
      const Instruction* e = ElementInstruction(t, i);
      if (e == nullptr) return std::nullopt;
      if (e->shape.is_tuple) return std::nullopt;
      const Sharding* s = Usable(*e);
      return s ? std::optional<Sharding>(*s) : std::nullopt;
    }
  }
}

// PropagationCandidate sources, in priority order for equally specific shardings.
enum class Source : int { kForward = 0, kBackward = 1, kSideways = 2 };

struct PropagationCandidate {
  Sharding sharding;
  Source source;
  int64_t order;  // forward: operand index; otherwise 0 (ties go to votes, then CanonicalLess)
};

class Propagator {
 public:
  Propagator(ir::Module& module, const PropagationOptions& options)
      : module_(module), options_(options) {
    rule_options_.spatial_partitioning = options.spatial_partitioning;
  }

  bool Run() {
    Index();
    int64_t round = 0;
    for (; round < options_.max_rounds; ++round) {
      changed_in_round_ = false;
      TakeSnapshot();
      SweepAll(/*forward=*/true);
      if (options_.backward) {
        TakeSnapshot();
        SweepAll(/*forward=*/false);
      }
      if (!changed_in_round_) break;
    }
    if (round == options_.max_rounds) {
      throw Error("sharding propagation did not reach a fixed point in " +
                  std::to_string(options_.max_rounds) + " rounds (module '" + module_.name() +
                  "')");
    }
    for (const auto& comp : module_.computations()) {
      for (const auto& x : comp->instructions()) {
        if (!x->sharding) {
          x->sharding = Sharding::Replicated();
          changed_ = true;
        }
      }
    }
    return changed_;
  }

 private:
  struct Use {
    Instruction* user;
    int64_t operand;
  };

  void Index() {
    // Manual regions are left alone: {manual}, fixed.
    for (const Instruction* x : ManualRegion(module_)) {
      Instruction* mx = const_cast<Instruction*>(x);
      if (!mx->sharding) mx->sharding = Sharding::Manual();
      fixed_.insert(x);
    }
    for (const auto& comp : module_.computations()) {
      for (const auto& owned : comp->instructions()) {
        Instruction* x = owned.get();
        if (x->sharding) fixed_.insert(x);
        for (size_t k = 0; k < x->operands.size(); ++k) {
          users_[x->operands[k]].push_back({x, static_cast<int64_t>(k)});
        }
        if (x->opcode == Opcode::kLoop && x->body) loops_of_body_[x->body].push_back(x);
      }
    }
    for (const auto& [body, loops] : loops_of_body_) params_[body] = body->parameters();
  }

  bool Mutable(const Instruction& x) const { return !x.shape.is_tuple && !fixed_.count(&x); }

  // Body parameter k of `body` (k = 0 is the iteration number), or null.
  Instruction* BodyParam(const Computation* body, int64_t k) const {
    auto it = params_.find(body);
    if (it == params_.end() || k >= static_cast<int64_t>(it->second.size())) return nullptr;
    return it->second[k];
  }

  // Loop-carried values cross a back edge (body root element k feeds body parameter k+1 of
  // the next iteration). Those reads see the shardings as they were when the sweep began, so
  // that the result does not depend on where the root's operands sit in program order.
  void TakeSnapshot() {
    snapshot_.clear();
    for (const auto& [body, loops] : loops_of_body_) {
      for (Instruction* p : params_[body]) snapshot_[p] = p->sharding;
      const Instruction* root = body->root();
      if (root && root->opcode == Opcode::kTuple) {
        for (Instruction* e : root->operands) snapshot_[e] = e->sharding;
      }
    }
  }
  std::optional<Sharding> Snapshot(const Instruction* x) const {
    auto it = snapshot_.find(x);
    if (it == snapshot_.end() || !it->second || x->shape.is_tuple) return std::nullopt;
    const Kind k = it->second->kind;
    if (k != Kind::kReplicated && k != Kind::kTiled) return std::nullopt;
    return it->second;
  }

  void SweepAll(bool forward) {
    swept_.clear();
    if (module_.entry()) Sweep(*module_.entry(), forward);
    for (const auto& comp : module_.computations()) {
      if (!swept_.count(comp.get())) Sweep(*comp, forward);
    }
  }

  // Forward: program order, a loop's body right before the loop. Backward: reverse order, a
  // loop's body right after the loop (its users are done, its operands not yet).
  void Sweep(const Computation& comp, bool forward) {
    swept_.insert(&comp);
    const auto& instrs = comp.instructions();
    const int64_t n = static_cast<int64_t>(instrs.size());
    for (int64_t step = 0; step < n; ++step) {
      Instruction* x = instrs[forward ? step : n - 1 - step].get();
      if (x->opcode == Opcode::kLoop && x->body && forward) Sweep(*x->body, forward);
      if (Mutable(*x)) {
        if (forward && NeedsForward(*x)) Offer(*x, ForwardCandidates(*x));
        if (!forward && NeedsBackward(*x)) Offer(*x, BackwardCandidates(*x));
      }
      if (x->opcode == Opcode::kLoop && x->body && !forward) Sweep(*x->body, forward);
    }
  }

  std::vector<PropagationCandidate> ForwardCandidates(const Instruction& x) const {
    std::vector<PropagationCandidate> out;
    if (x.opcode == Opcode::kGetTupleElement) {
      if (auto s = ElementOf(*x.operands[0], x.tuple_index, rule_options_)) {
        out.push_back({std::move(*s), Source::kForward, 0});
      }
      return out;
    }
    if (x.opcode == Opcode::kManualToAuto && x.tiling) {  // a manual region's result
      out.push_back({*x.tiling, Source::kForward, 0});
      return out;
    }
    if (x.opcode == Opcode::kParameter && x.parameter_number > 0) {
      // A loop-carried value: from each loop's operand, then (back edge) the body root.
      auto it = loops_of_body_.find(x.parent);
      if (it == loops_of_body_.end()) return out;
      const int64_t k = x.parameter_number - 1;
      for (const Instruction* loop : it->second) {
        if (k >= static_cast<int64_t>(loop->operands.size())) continue;
        if (const Sharding* s = Usable(*loop->operands[k])) {
          out.push_back({*s, Source::kForward, 0});
        }
      }
      const Instruction* root = x.parent->root();
      if (root && root->opcode == Opcode::kTuple &&
          k < static_cast<int64_t>(root->operands.size())) {
        if (auto s = Snapshot(root->operands[k])) {
          out.push_back({std::move(*s), Source::kForward, 1});
        }
      }
      return out;
    }
    for (size_t k = 0; k < x.operands.size(); ++k) {
      const Sharding* s = Usable(*x.operands[k]);
      if (s == nullptr) continue;
      if (auto c = internal::Forward(x, static_cast<int64_t>(k), *s, rule_options_)) {
        out.push_back({std::move(*c), Source::kForward, static_cast<int64_t>(k)});
      }
    }
    return out;
  }

  // What the readers of element i of tuple-valued t want: its get-tuple-element users and, for
  // a loop body's root, the next iteration's parameter and the loop's own readers.
  void ElementDemands(const Instruction& t, int64_t i, std::vector<Sharding>* out) const {
    auto users = users_.find(&t);
    if (users != users_.end()) {
      for (const Use& u : users->second) {
        if (u.user->opcode != Opcode::kGetTupleElement || u.user->tuple_index != i) continue;
        if (const Sharding* s = Usable(*u.user)) out->push_back(*s);
      }
    }
    const Computation* comp = t.parent;
    auto loops = loops_of_body_.find(comp);
    if (loops == loops_of_body_.end() || comp->root() != &t) return;
    if (auto s = Snapshot(BodyParam(comp, i + 1))) out->push_back(*s);
    for (const Instruction* loop : loops->second) ElementDemands(*loop, i, out);
  }

  std::vector<PropagationCandidate> BackwardCandidates(const Instruction& x) const {
    std::vector<PropagationCandidate> out;
    std::vector<Sharding> demands;
    auto users = users_.find(&x);
    if (users != users_.end()) {
      for (const Use& u : users->second) {
        const Instruction& user = *u.user;
        if (user.opcode == Opcode::kAutoToManual && user.tiling) {  // a manual region's input
          demands.push_back(*user.tiling);
          continue;
        }
        if (user.sharding && user.sharding->kind == Kind::kManual) continue;
        switch (user.opcode) {
          case Opcode::kTuple:
            ElementDemands(user, u.operand, &demands);
            break;
          case Opcode::kLoop:
            if (const Instruction* p = BodyParam(user.body, u.operand + 1)) {
              if (const Sharding* s = Usable(*p)) demands.push_back(*s);
            }
            break;
          case Opcode::kTopK: {
            std::vector<Sharding> element;
            ElementDemands(user, 0, &element);
            ElementDemands(user, 1, &element);
            for (const Sharding& e : element) {
              if (auto c = internal::Backward(user, 0, e, rule_options_)) {
                demands.push_back(std::move(*c));
              }
            }
            break;
          }
          default: {
            if (const Sharding* s = Usable(user)) {
              if (auto c = internal::Backward(user, u.operand, *s, rule_options_)) {
                demands.push_back(std::move(*c));
              }
            }
            for (size_t j = 0; j < user.operands.size(); ++j) {
              if (static_cast<int64_t>(j) == u.operand) continue;
              const Sharding* s = Usable(*user.operands[j]);
              if (s == nullptr) continue;
              if (auto c = internal::Sideways(user, u.operand, static_cast<int64_t>(j), *s)) {
                out.push_back({std::move(*c), Source::kSideways, 0});
              }
            }
          }
        }
      }
    }
    if (x.opcode == Opcode::kParameter && x.parameter_number > 0) {
      auto loops = loops_of_body_.find(x.parent);
      if (loops != loops_of_body_.end()) {
        for (const Instruction* loop : loops->second) {
          ElementDemands(*loop, x.parameter_number - 1, &demands);
        }
      }
    }
    for (Sharding& d : demands) out.push_back({std::move(d), Source::kBackward, 0});
    return out;
  }

  // Picks the new sharding of x from its current one and the candidates (the priority rules of
  // docs/partitioner.md) and stores it if it is strictly more specific.
  void Offer(Instruction& x, std::vector<PropagationCandidate> candidates) {
    if (candidates.empty()) return;
    const int64_t rank = x.shape.rank();
    // Canonical forms, and votes: how many sources propose the same sharding.
    struct Ranked {
      PropagationCandidate c;
      int64_t tiles;
      int64_t votes;
    };
    std::vector<Ranked> ranked;
    for (PropagationCandidate& c : candidates) {
      c.sharding = Canonicalize(std::move(c.sharding), rank);
      auto same = std::find_if(ranked.begin(), ranked.end(), [&](const Ranked& r) {
        return r.c.source == c.source && r.c.sharding == c.sharding;
      });
      if (same != ranked.end()) {
        ++same->votes;
        same->c.order = std::min(same->c.order, c.order);
        continue;
      }
      const int64_t tiles = PartitionedTiles(c.sharding);
      ranked.push_back({std::move(c), tiles, 1});
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      if (a.tiles != b.tiles) return a.tiles > b.tiles;
      if (a.c.source != b.c.source) return a.c.source < b.c.source;
      if (a.c.order != b.c.order) return a.c.order < b.c.order;
      if (a.votes != b.votes) return a.votes > b.votes;
      return CanonicalLess(a.c.sharding, b.c.sharding);
    });
    const Sharding* best = x.sharding ? &*x.sharding : nullptr;
    std::optional<Sharding> merged;  // owns *best once a merge wins
    for (const Ranked& r : ranked) {
      if (best == nullptr) {
        best = &r.c.sharding;
        continue;
      }
      const int64_t best_tiles = PartitionedTiles(*best);
      if (options_.merge_compatible && MayRefine(*best, r.c.sharding, rank)) {
        std::optional<Sharding> m = MergeShardings(*best, r.c.sharding, rank);
        if (m && PartitionedTiles(*m) > best_tiles) {
          merged = std::move(m);
          best = &*merged;
          continue;
        }
      }
      if (r.tiles > best_tiles) best = &r.c.sharding;
    }
    if (best == nullptr) return;
    if (x.sharding &&
        (best == &*x.sharding || PartitionedTiles(*best) <= PartitionedTiles(*x.sharding))) {
      return;
    }
    x.sharding = *best;
    changed_ = changed_in_round_ = true;
    changed_at_[&x] = ++clock_;
  }

  // Whether merging `b` into `a` could cut a dim `a` leaves whole (cheap test before the O(D)
  // MergeShardings).
  static bool MayRefine(const Sharding& a, const Sharding& b, int64_t rank) {
    if (b.kind != Kind::kTiled || (a.kind != Kind::kTiled && a.kind != Kind::kReplicated)) {
      return false;
    }
    const std::vector<int64_t> ta = TensorTileDims(a, rank), tb = TensorTileDims(b, rank);
    bool gain = false;
    for (int64_t d = 0; d < rank; ++d) {
      if (ta[d] != tb[d] && ta[d] != 1 && tb[d] != 1) return false;
      gain = gain || (ta[d] == 1 && tb[d] > 1);
    }
    return gain;
  }

  // Skipping: an instruction is re-evaluated in a direction only if it, or something its
  // rules read, changed since its last evaluation in that direction. Offer is a function of the
  // current sharding and the candidates, so a skip never changes the result. Instructions whose
  // candidates come from tuples, loops or top-k (reads beyond operands and users) are always
  // evaluated.
  int64_t ChangedAt(const Instruction* x) const {
    auto it = changed_at_.find(x);
    return it == changed_at_.end() ? -1 : it->second;
  }
  bool NeedsForward(const Instruction& x) {
    if (x.opcode == Opcode::kGetTupleElement || x.opcode == Opcode::kParameter) return true;
    int64_t latest = ChangedAt(&x);
    for (const Instruction* o : x.operands) latest = std::max(latest, ChangedAt(o));
    return Stale(forward_at_, x, latest);
  }
  bool NeedsBackward(const Instruction& x) {
    if (x.opcode == Opcode::kParameter) return true;
    int64_t latest = ChangedAt(&x);
    auto users = users_.find(&x);
    if (users != users_.end()) {
      for (const Use& u : users->second) {
        const Opcode op = u.user->opcode;
        if (op == Opcode::kTuple || op == Opcode::kLoop || op == Opcode::kTopK) return true;
        latest = std::max(latest, ChangedAt(u.user));
        for (const Instruction* o : u.user->operands) latest = std::max(latest, ChangedAt(o));
      }
    }
    return Stale(backward_at_, x, latest);
  }
  bool Stale(std::unordered_map<const Instruction*, int64_t>& evaluated_at, const Instruction& x,
             int64_t latest_change) {
    auto [it, first] = evaluated_at.try_emplace(&x, clock_);
    if (first) return true;
    if (latest_change < it->second) return false;
    it->second = clock_;
    return true;
  }

  ir::Module& module_;
  const PropagationOptions& options_;
  internal::RuleOptions rule_options_;
  std::unordered_map<const Instruction*, std::vector<Use>> users_;
  std::unordered_set<const Instruction*> fixed_;
  std::unordered_map<const Computation*, std::vector<Instruction*>> loops_of_body_;
  std::unordered_map<const Computation*, std::vector<Instruction*>> params_;
  std::unordered_map<const Instruction*, std::optional<Sharding>> snapshot_;
  std::unordered_set<const Computation*> swept_;
  std::unordered_map<const Instruction*, int64_t> changed_at_;  // clock_ at the last change
  std::unordered_map<const Instruction*, int64_t> forward_at_, backward_at_;  // last evaluation
  int64_t clock_ = 0;
  bool changed_ = false;
  bool changed_in_round_ = false;
};

}  // namespace

bool PropagateShardings(ir::Module& module, int64_t num_devices,
                        const PropagationOptions& options) {
  IsolateRegionPartitionIds(module);
  if (options.validate) ValidateShardings(module, num_devices);
  return Propagator(module, options).Run();
}

ir::Sharding TupleElementSharding(const ir::Instruction& tuple_valued, int64_t index) {
  std::optional<Sharding> s = ElementOf(tuple_valued, index, internal::RuleOptions{});
  return s ? *s : Sharding::Replicated();
}

}  // namespace podsim::partitioner
