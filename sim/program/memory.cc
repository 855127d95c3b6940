#include "sim/program/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/visitor.h"

namespace podsim::sim {

namespace {

using ir::Instruction;
using ir::Opcode;

enum class Category : uint8_t { kParameter, kTemporary, kOutput };

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool IsBackwardScope(const std::string& scope) { return StartsWith(scope, "backward"); }
bool IsOptimizerScope(const std::string& scope) { return StartsWith(scope, "optimizer"); }
bool IsRecomputeScope(const std::string& scope) { return StartsWith(scope, "recompute"); }
std::string TopScope(const std::string& scope) { return scope.substr(0, scope.find('/')); }

// One HBM allocation of a computation's execution.
struct Allocation {
  int64_t bytes = 0;
  Category category = Category::kTemporary;
  MemoryKind kind = MemoryKind::kActivations;
  std::string scope;      // top-level scope of the allocating instruction
  int64_t def = 0;        // step that allocates it (-1: before the first step)
  int64_t last_use = 0;   // step after which it is freed
  int64_t last_read = -1;  // the last step that reads it (for a donated parameter's end)
};

// The peak of one execution of a computation, without what is live outside it.
struct Peak {
  int64_t bytes = 0;
  MemoryBreakdown breakdown;
  std::string instruction;
};

using AliasMap = std::unordered_map<const Instruction*, std::vector<int32_t>>;  // value -> allocations
// A loop's value: the allocations of each carried element.
using ElementMap = std::unordered_map<const Instruction*, std::vector<std::vector<int32_t>>>;

// The allocations of one computation plan, and which of them each value lives in. Per-op
// behaviour is a visitor over each step's root: parameters and constants are allocated before
// the first step, tuples and get-tuple-element alias their elements, bitcasts alias their
// operand, and every other kernel writes each of its fusion's outputs.
class BufferAssigner : public ir::ConstVisitor<void> {
 public:
  // last_read: per value, the last step that reads it (collective operands until their done
  // point when async).
  BufferAssigner(const ComputationPlan& cp, bool entry,
                 const std::unordered_map<const Instruction*, int64_t>& last_read)
      : cp_(cp), entry_(entry), last_read_(last_read) {}

  std::vector<Allocation> allocations;
  AliasMap alias;
  ElementMap elements;
  // A loop's carried value and the operand it starts from: if the loop is the operand's last
  // reader, the loop updates the operand's buffer in place (as XLA's while loops do).
  struct InPlace {
    int64_t step;
    std::vector<int32_t> operand;
    int32_t carried;
  };
  std::vector<InPlace> in_place;

  // Merges each carried value into its operand's buffer where the loop is the operand's last
  // reader (called once every use is known).
  void ReuseDeadLoopOperands() {
    for (const InPlace& p : in_place) {
      if (p.operand.size() != 1) continue;
      Allocation& o = allocations[static_cast<size_t>(p.operand.front())];
      Allocation& c = allocations[static_cast<size_t>(p.carried)];
      if (o.def < 0 || o.last_use != p.step || o.bytes != c.bytes) continue;
      c.def = o.def;  // the operand's buffer, from its definition on
      o.bytes = 0;
    }
  }

  // Extends the life of v's allocations to `step`; `reader` is the instruction reading it (a
  // forward value read by a backward step is a saved activation).
  void Use(const Instruction* v, int64_t step, const Instruction* reader) {
    auto it = alias.find(v);
    if (it == alias.end()) return;
    const bool backward = IsBackwardScope(reader->scope) || IsRecomputeScope(reader->scope);
    for (int32_t b : it->second) {
      Allocation& a = allocations[static_cast<size_t>(b)];
      a.last_use = std::max(a.last_use, step);
      a.last_read = std::max(a.last_read, step);
      if (backward && a.kind == MemoryKind::kActivations) a.kind = MemoryKind::kSavedActivations;
    }
  }
  // Assigns the value(s) of step s, whose fusion group is `group`.
  void Assign(int64_t s, const FusionGroup& group) {
    step_ = s;
    group_ = &group;
    ir::Accept<void>(*cp_.steps[static_cast<size_t>(s)].instr, *this);
  }

  void HandleParameter(const Instruction& root) override {
    if (entry_) {
      const MemoryKind kind = IsOptimizerScope(root.scope)             ? MemoryKind::kOptimizerState
                              : ir::IsFloating(root.shape.dtype) && !root.shape.is_tuple
                                  ? MemoryKind::kWeights
                                  : MemoryKind::kInputs;
      Allocate(&root, root.shape.ByteSize(), Category::kParameter, -1, kind);
    } else {
      alias[&root] = {};  // aliases the loop's carried tuple, counted outside
    }
  }
  void HandleConstant(const Instruction& root) override {
    Allocate(&root, root.shape.ByteSize(), Category::kParameter, -1, MemoryKind::kConstants);
  }
  void HandleLoop(const Instruction& root) override {
    // Each carried value in a buffer of its own, except those the body returns unchanged: they
    // stay in the operand's buffer.
    const ir::Computation& body = *root.body;
    const std::vector<Instruction*> params = body.parameters();
    const Instruction* body_root = body.root();
    std::vector<std::vector<int32_t>> per_element;
    std::vector<int32_t> all;
    for (size_t k = 0; k < root.operands.size(); ++k) {
      const bool through = body_root != nullptr && body_root->opcode == Opcode::kTuple &&
                           k < body_root->operands.size() && k + 1 < params.size() &&
                           body_root->operand(k) == params[k + 1];
      std::vector<int32_t> ids;
      auto it = alias.find(root.operand(k));
      if (through) {
        if (it != alias.end()) ids = it->second;
      } else {
        ids = {NewAllocation(root.operand(k)->shape.ByteSize(), Category::kTemporary, step_,
                             TemporaryKind(root), TopScope(root.scope))};
        if (it != alias.end()) in_place.push_back({step_, it->second, ids.front()});
      }
      all.insert(all.end(), ids.begin(), ids.end());
      per_element.push_back(std::move(ids));
    }
    alias[&root] = all;
    elements[&root] = std::move(per_element);
  }
  void HandlePartitionId(const Instruction& root) override {
    Allocate(&root, 4, Category::kTemporary, step_, TemporaryKind(root));
  }
  void HandleTuple(const Instruction& root) override {
    std::vector<int32_t> all;
    for (const Instruction* o : root.operands) {
      auto it = alias.find(o);
      if (it != alias.end()) all.insert(all.end(), it->second.begin(), it->second.end());
    }
    alias[&root] = all;
  }
  void HandleGetTupleElement(const Instruction& root) override {
    const Instruction* t = root.operand(0);
    const size_t k = static_cast<size_t>(root.tuple_index);
    auto e = elements.find(t);
    if (t->opcode == Opcode::kTuple && k < t->operands.size()) {
      AliasOf(&root, t->operand(k));
    } else if (e != elements.end() && k < e->second.size()) {
      alias[&root] = e->second[k];
    } else {
      AliasOf(&root, t);
    }
  }
  // In place, as XLA's buffer assignment shares an in-place op's operand and output: when this
  // step is the last reader of the operand and the operand is a temporary of this computation
  // (or, in a loop body, a carried value, whose buffer is counted outside), the update is
  // written into the operand's buffer. Otherwise the result is a new buffer (a copy).
  void HandleDynamicUpdateSlice(const Instruction& root) override {
    const Instruction* o = root.operand(0);
    const auto reader = last_read_.find(o);
    const auto it = alias.find(o);
    bool in_place = !group_->bitcast && group_->members.size() == 1 && reader != last_read_.end() &&
                    reader->second == step_ && it != alias.end() &&
                    (!it->second.empty() || !entry_);
    if (in_place) {
      for (int32_t b : it->second) {
        in_place = in_place && allocations[static_cast<size_t>(b)].category == Category::kTemporary;
      }
    }
    if (!in_place) {
      DefaultAction(root);
      return;
    }
    alias[&root] = it->second;
  }
  void DefaultAction(const Instruction& root) override {
    if (group_->bitcast) {  // no kernel: the result is its operand's buffer
      AliasOf(&root, root.operand(0));
      return;
    }
    // A multi-output fusion writes each of its outputs (sim/device/fusion.h), root last.
    for (const Instruction* o : group_->outputs) {
      Allocate(o, o->shape.ByteSize(), Category::kTemporary, step_, TemporaryKind(*o));
    }
    if (group_->outputs.empty()) {
      Allocate(&root, root.shape.ByteSize(), Category::kTemporary, step_, TemporaryKind(root));
    }
  }

 private:
  static MemoryKind TemporaryKind(const Instruction& i) {
    if (IsBackwardScope(i.scope)) return MemoryKind::kBackward;
    if (IsOptimizerScope(i.scope)) return MemoryKind::kOptimizer;
    if (IsRecomputeScope(i.scope)) return MemoryKind::kRecomputed;
    return MemoryKind::kActivations;
  }
  // Parameters and constants (def -1) live to the end.
  int32_t NewAllocation(int64_t bytes, Category c, int64_t def, MemoryKind kind,
                        std::string scope) {
    const int64_t n = static_cast<int64_t>(cp_.steps.size());
    allocations.push_back(Allocation{bytes, c, kind, std::move(scope), def, def < 0 ? n : def});
    return static_cast<int32_t>(allocations.size() - 1);
  }
  void Allocate(const Instruction* v, int64_t bytes, Category c, int64_t def, MemoryKind kind) {
    alias[v] = {NewAllocation(bytes, c, def, kind, TopScope(v->scope))};
  }
  // v lives in `of`'s allocations.
  void AliasOf(const Instruction* v, const Instruction* of) {
    auto it = alias.find(of);
    alias[v] = it == alias.end() ? std::vector<int32_t>{} : it->second;
  }

  const ComputationPlan& cp_;
  bool entry_;
  const std::unordered_map<const Instruction*, int64_t>& last_read_;
  int64_t step_ = 0;
  const FusionGroup* group_ = nullptr;
};

class Analyzer {
 public:
  Analyzer(const ProgramPlan& plan, bool async) : plan_(plan), async_(async) {}

  Peak Analyze(int32_t index) {
    auto memo = memo_.find(index);
    if (memo != memo_.end()) return memo->second;
    const ComputationPlan& cp = plan_.computations[static_cast<size_t>(index)];
    const bool entry = index == 0;
    const std::vector<Allocation> allocations = AssignBuffers(cp, entry);
    Peak peak_body;
    int64_t peak_step = -1;
    Peak peak = SweepPeak(cp, allocations, &peak_body, &peak_step);
    BreakdownAt(allocations, peak_step, peak_body, entry, &peak);
    memo_[index] = peak;
    return peak;
  }

 private:
  // Every allocation of one execution of `cp`, with its first and last step.
  std::vector<Allocation> AssignBuffers(const ComputationPlan& cp, bool entry) const {
    const int64_t n = static_cast<int64_t>(cp.steps.size());
    // A collective's operand lives until its done point when async.
    auto read_until = [&](int64_t s) {
      const Step& step = cp.steps[static_cast<size_t>(s)];
      return step.kind == StepKind::kCollective && async_
                 ? static_cast<int64_t>(plan_.collectives[static_cast<size_t>(step.collective)].done_step)
                 : s;
    };
    std::unordered_map<const Instruction*, int64_t> last_read;
    for (int64_t s = 0; s < n; ++s) {
      const Step& step = cp.steps[static_cast<size_t>(s)];
      for (const Instruction* in : cp.fusion.groups[static_cast<size_t>(step.group)].inputs) {
        int64_t& r = last_read.try_emplace(in, -1).first->second;
        r = std::max(r, read_until(s));
      }
    }
    // The root (and a root tuple's elements) is read after the last step.
    if (const Instruction* root = cp.computation->root(); root != nullptr) {
      last_read[root] = n;
      if (root->opcode == Opcode::kTuple) {
        for (const Instruction* o : root->operands) last_read[o] = n;
      }
    }
    BufferAssigner assign(cp, entry, last_read);
    for (int64_t s = 0; s < n; ++s) {
      const Step& step = cp.steps[static_cast<size_t>(s)];
      const FusionGroup& group = cp.fusion.groups[static_cast<size_t>(step.group)];
      for (const Instruction* in : group.inputs) assign.Use(in, read_until(s), step.instr);
      assign.Assign(s, group);
    }
    assign.ReuseDeadLoopOperands();
    // The root's allocations live to the end; in the entry they are the outputs.
    const Instruction* root = cp.computation->root();
    if (root != nullptr) {
      auto it = assign.alias.find(root);
      if (it != assign.alias.end()) {
        for (int32_t b : it->second) {
          Allocation& a = assign.allocations[static_cast<size_t>(b)];
          a.last_use = std::max(a.last_use, n);
          if (entry && a.category == Category::kTemporary) {
            a.category = Category::kOutput;
            a.kind = MemoryKind::kOutputs;
          }
        }
      }
    }
    if (entry && root != nullptr && root->opcode == Opcode::kTuple) {
      // Donation: the parameter's buffer ends at its last read; the output written over it is
      // the parameter from then on.
      const std::vector<Instruction*> params = cp.computation->parameters();
      for (const ir::OutputAlias& d : cp.computation->parent()->output_aliases()) {
        const Instruction* param = nullptr;
        for (const Instruction* p : params) {
          if (p->parameter_number == d.parameter) param = p;
        }
        if (param == nullptr || d.output >= static_cast<int64_t>(root->operands.size())) continue;
        auto pit = assign.alias.find(param);
        auto oit = assign.alias.find(root->operand(static_cast<size_t>(d.output)));
        if (pit == assign.alias.end() || oit == assign.alias.end() || pit->second.size() != 1) {
          continue;
        }
        Allocation& p = assign.allocations[static_cast<size_t>(pit->second.front())];
        bool separate = true;  // the output is a buffer of its own, not the parameter itself
        for (int32_t b : oit->second) separate = separate && b != pit->second.front();
        if (!separate) continue;
        p.last_use = p.last_read;
        for (int32_t b : oit->second) {
          Allocation& o = assign.allocations[static_cast<size_t>(b)];
          if (o.category != Category::kOutput) continue;
          o.category = Category::kParameter;
          o.kind = p.kind;
        }
      }
    }
    return std::move(assign.allocations);
  }

  // live(s) = allocations with def <= s <= last_use, plus a loop body's own peak at s. Returns
  // the peak with its step's instruction (peak.breakdown is filled by BreakdownAt); the body
  // peak at that step goes to `peak_body`, the step to `peak_step` (-1: before any step).
  Peak SweepPeak(const ComputationPlan& cp, const std::vector<Allocation>& allocations,
                 Peak* peak_body, int64_t* peak_step) {
    const int64_t n = static_cast<int64_t>(cp.steps.size());
    std::vector<int64_t> delta(static_cast<size_t>(n + 2), 0);
    int64_t always = 0;  // allocated before the first step
    for (const Allocation& a : allocations) {
      if (a.def < 0) {
        always += a.bytes;
      } else {
        delta[static_cast<size_t>(a.def)] += a.bytes;
      }
      delta[static_cast<size_t>(std::min(a.last_use, n) + 1)] -= a.bytes;
    }
    Peak peak;
    peak.bytes = -1;
    int64_t live = always;
    *peak_step = -1;
    for (int64_t s = 0; s < n; ++s) {
      live += delta[static_cast<size_t>(s)];
      const Step& step = cp.steps[static_cast<size_t>(s)];
      Peak body;
      if (step.kind == StepKind::kLoop) body = Analyze(step.body);
      if (live + body.bytes > peak.bytes) {
        peak.bytes = live + body.bytes;
        *peak_step = s;
        *peak_body = body;
        peak.instruction = body.instruction.empty() ? "%" + step.instr->name : body.instruction;
      }
    }
    if (n == 0 || peak.bytes < 0) {
      peak.bytes = always;
      *peak_step = -1;
    }
    return peak;
  }

  // What is live at the peak step, by category (a loop body's own peak included).
  static void BreakdownAt(const std::vector<Allocation>& allocations, int64_t peak_step,
                          const Peak& peak_body, bool entry, Peak* peak) {
    for (const Allocation& a : allocations) {
      const bool live_at =
          peak_step < 0 ? a.def < 0 : (a.def <= peak_step && peak_step <= a.last_use);
      if (!live_at) continue;
      switch (a.category) {
        case Category::kParameter: peak->breakdown.parameters += a.bytes; break;
        case Category::kTemporary: peak->breakdown.temporaries += a.bytes; break;
        case Category::kOutput: peak->breakdown.outputs += a.bytes; break;
      }
      // Inside a body, the returned values are temporaries of the loop.
      const MemoryKind kind = !entry && a.kind == MemoryKind::kOutputs ? MemoryKind::kActivations : a.kind;
      peak->breakdown.by_kind[MemoryKindName(kind)] += a.bytes;
      peak->breakdown.by_scope[a.scope] += a.bytes;
    }
    peak->breakdown.parameters += peak_body.breakdown.parameters;
    peak->breakdown.temporaries += peak_body.breakdown.temporaries + peak_body.breakdown.outputs;
    for (const auto& [k, v] : peak_body.breakdown.by_kind) peak->breakdown.by_kind[k] += v;
    for (const auto& [k, v] : peak_body.breakdown.by_scope) peak->breakdown.by_scope[k] += v;
    if (!entry) {
      // Inside a body everything is a temporary of the loop.
      peak->breakdown.temporaries += peak->breakdown.outputs;
      peak->breakdown.outputs = 0;
    }
  }

  const ProgramPlan& plan_;
  bool async_;
  std::unordered_map<int32_t, Peak> memo_;
};

}  // namespace

const char* MemoryKindName(MemoryKind k) {
  switch (k) {
    case MemoryKind::kWeights: return "weights";
    case MemoryKind::kOptimizerState: return "optimizer_state";
    case MemoryKind::kInputs: return "inputs";
    case MemoryKind::kConstants: return "constants";
    case MemoryKind::kActivations: return "activations";
    case MemoryKind::kSavedActivations: return "saved_activations";
    case MemoryKind::kBackward: return "backward";
    case MemoryKind::kRecomputed: return "recomputed";
    case MemoryKind::kOptimizer: return "optimizer";
    case MemoryKind::kOutputs: return "outputs";
  }
  return "?";
}

MemoryResult AnalyzeMemory(const ProgramPlan& plan, double capacity_bytes, bool async_collectives) {
  Analyzer analyzer(plan, async_collectives);
  const Peak peak = analyzer.Analyze(0);
  MemoryResult r;
  r.peak_bytes = peak.bytes;
  r.at_peak = peak.breakdown;
  r.peak_instruction = peak.instruction;
  r.capacity_bytes = capacity_bytes;
  r.oom = static_cast<double>(peak.bytes) > capacity_bytes;
  if (r.oom) {
    r.message = "OOM at " + (peak.instruction.empty() ? std::string("program start") : peak.instruction) +
                ": needs " + FormatBytes(static_cast<double>(peak.bytes)) + " of " +
                FormatBytes(capacity_bytes);
  }
  return r;
}

}  // namespace podsim::sim
