#include "sim/program/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "ir/visitor.h"

namespace podsim::sim {

namespace {

using ir::Instruction;
using ir::Opcode;

enum class Category : uint8_t { kParameter, kTemporary, kOutput };

// One HBM allocation of a computation's execution.
struct Allocation {
  int64_t bytes = 0;
  Category category = Category::kTemporary;
  int64_t def = 0;       // step that allocates it (-1: before the first step)
  int64_t last_use = 0;  // step after which it is freed
};

// The peak of one execution of a computation, without what is live outside it.
struct Peak {
  int64_t bytes = 0;
  MemoryBreakdown breakdown;
  std::string instruction;
};

using AliasMap = std::unordered_map<const Instruction*, std::vector<int32_t>>;  // value -> allocations

// The allocations of one computation plan, and which of them each value lives in. Per-op
// behaviour is a visitor over each step's root: parameters and constants are allocated before
// the first step, tuples and get-tuple-element alias their elements, bitcasts alias their
// operand, and every other kernel writes each of its fusion's outputs.
class BufferAssigner : public ir::ConstVisitor<void> {
 public:
  BufferAssigner(const ComputationPlan& cp, bool entry) : cp_(cp), entry_(entry) {}

  std::vector<Allocation> allocations;
  AliasMap alias;

  // Extends the life of v's allocations to `step`.
  void Use(const Instruction* v, int64_t step) {
    auto it = alias.find(v);
    if (it == alias.end()) return;
    for (int32_t b : it->second) {
      Allocation& a = allocations[static_cast<size_t>(b)];
      a.last_use = std::max(a.last_use, step);
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
      Allocate(&root, root.shape.ByteSize(), Category::kParameter, -1);
    } else {
      alias[&root] = {};  // aliases the loop's carried tuple, counted outside
    }
  }
  void HandleConstant(const Instruction& root) override {
    Allocate(&root, root.shape.ByteSize(), Category::kParameter, -1);
  }
  void HandlePartitionId(const Instruction& root) override {
    Allocate(&root, 4, Category::kTemporary, step_);
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
    if (t->opcode == Opcode::kTuple &&
        root.tuple_index < static_cast<int64_t>(t->operands.size())) {
      AliasOf(&root, t->operand(static_cast<size_t>(root.tuple_index)));
    } else {
      AliasOf(&root, t);
    }
  }
  void DefaultAction(const Instruction& root) override {
    if (group_->bitcast) {  // no kernel: the result is its operand's buffer
      AliasOf(&root, root.operand(0));
      return;
    }
    // A multi-output fusion writes each of its outputs (sim/device/fusion.h), root last.
    for (const Instruction* o : group_->outputs) {
      Allocate(o, o->shape.ByteSize(), Category::kTemporary, step_);
    }
    if (group_->outputs.empty()) {
      Allocate(&root, root.shape.ByteSize(), Category::kTemporary, step_);
    }
  }

 private:
  // Parameters and constants (def -1) live to the end.
  void Allocate(const Instruction* v, int64_t bytes, Category c, int64_t def) {
    const int64_t n = static_cast<int64_t>(cp_.steps.size());
    allocations.push_back(Allocation{bytes, c, def, def < 0 ? n : def});
    alias[v] = {static_cast<int32_t>(allocations.size() - 1)};
  }
  // v lives in `of`'s allocations.
  void AliasOf(const Instruction* v, const Instruction* of) {
    auto it = alias.find(of);
    alias[v] = it == alias.end() ? std::vector<int32_t>{} : it->second;
  }

  const ComputationPlan& cp_;
  bool entry_;
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
    BufferAssigner assign(cp, entry);
    for (int64_t s = 0; s < n; ++s) {
      const Step& step = cp.steps[static_cast<size_t>(s)];
      const FusionGroup& group = cp.fusion.groups[static_cast<size_t>(step.group)];
      // A collective's operand lives until its done point when async.
      int64_t read_until = s;
      if (step.kind == StepKind::kCollective && async_) {
        read_until = plan_.collectives[static_cast<size_t>(step.collective)].done_step;
      }
      for (const Instruction* in : group.inputs) assign.Use(in, read_until);
      assign.Assign(s, group);
    }
    // The root's allocations live to the end; in the entry they are the outputs.
    if (const Instruction* root = cp.computation->root()) {
      auto it = assign.alias.find(root);
      if (it != assign.alias.end()) {
        for (int32_t b : it->second) {
          Allocation& a = assign.allocations[static_cast<size_t>(b)];
          a.last_use = std::max(a.last_use, n);
          if (entry && a.category == Category::kTemporary) a.category = Category::kOutput;
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
    }
    peak->breakdown.parameters += peak_body.breakdown.parameters;
    peak->breakdown.temporaries += peak_body.breakdown.temporaries + peak_body.breakdown.outputs;
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
