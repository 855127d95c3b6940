#include "sim/program/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <vector>

namespace podsim::sim {

namespace {

using ir::Instruction;
using ir::Opcode;

enum class Category : uint8_t { kParameter, kTemporary, kOutput };

struct Buffer {
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

class Analyzer {
 public:
  Analyzer(const ProgramPlan& plan, bool async) : plan_(plan), async_(async) {}

  Peak Analyze(int32_t index) {
    auto memo = memo_.find(index);
    if (memo != memo_.end()) return memo->second;
    const ComputationPlan& cp = plan_.computations[static_cast<size_t>(index)];
    const bool entry = index == 0;
    const int64_t n = static_cast<int64_t>(cp.steps.size());
    std::vector<Buffer> buffers;
    std::unordered_map<const Instruction*, std::vector<int32_t>> alias;  // value -> buffers
    auto use = [&](const Instruction* v, int64_t step) {
      auto it = alias.find(v);
      if (it == alias.end()) return;
      for (int32_t b : it->second) {
        Buffer& buf = buffers[static_cast<size_t>(b)];
        buf.last_use = std::max(buf.last_use, step);
      }
    };
    // Parameters and constants (def -1) live to the end.
    auto allocate = [&](const Instruction* v, int64_t bytes, Category c, int64_t def) {
      buffers.push_back(Buffer{bytes, c, def, def < 0 ? n : def});
      alias[v] = {static_cast<int32_t>(buffers.size() - 1)};
    };
    for (int64_t s = 0; s < n; ++s) {
      const Step& step = cp.steps[static_cast<size_t>(s)];
      const Instruction* root = step.instr;
      const FusionGroup& group = cp.fusion.groups[static_cast<size_t>(step.group)];
      // A collective's operand lives until its done point when async.
      int64_t read_until = s;
      if (step.kind == StepKind::kCollective && async_) {
        read_until = plan_.collectives[static_cast<size_t>(step.collective)].done_step;
      }
      for (const Instruction* in : group.inputs) use(in, read_until);
      switch (root->opcode) {
        case Opcode::kParameter:
          if (entry) {
            allocate(root, root->shape.ByteSize(), Category::kParameter, -1);
          } else {
            alias[root] = {};  // aliases the loop's carried tuple, counted outside
          }
          break;
        case Opcode::kConstant:
          allocate(root, root->shape.ByteSize(), Category::kParameter, -1);
          break;
        case Opcode::kTuple: {
          std::vector<int32_t> all;
          for (const Instruction* o : root->operands) {
            auto it = alias.find(o);
            if (it != alias.end()) all.insert(all.end(), it->second.begin(), it->second.end());
          }
          alias[root] = all;
          break;
        }
        case Opcode::kGetTupleElement: {
          const Instruction* t = root->operand(0);
          if (t->opcode == Opcode::kTuple && root->tuple_index < static_cast<int64_t>(t->operands.size())) {
            auto it = alias.find(t->operand(static_cast<size_t>(root->tuple_index)));
            alias[root] = it == alias.end() ? std::vector<int32_t>{} : it->second;
          } else {
            auto it = alias.find(t);
            alias[root] = it == alias.end() ? std::vector<int32_t>{} : it->second;
          }
          break;
        }
        case Opcode::kPartitionId:
          allocate(root, 4, Category::kTemporary, s);
          break;
        default:
          if (group.bitcast) {  // no kernel: the result is its operand's buffer
            auto it = alias.find(root->operand(0));
            alias[root] = it == alias.end() ? std::vector<int32_t>{} : it->second;
            break;
          }
          // A multi-output fusion writes each of its outputs (sim/fusion.h), root last.
          for (const Instruction* o : group.outputs) {
            allocate(o, o->shape.ByteSize(), Category::kTemporary, s);
          }
          if (group.outputs.empty()) allocate(root, root->shape.ByteSize(), Category::kTemporary, s);
          break;
      }
    }
    // The root's buffers live to the end; in the entry they are the outputs.
    if (const Instruction* root = cp.computation->root()) {
      auto it = alias.find(root);
      if (it != alias.end()) {
        for (int32_t b : it->second) {
          Buffer& buf = buffers[static_cast<size_t>(b)];
          buf.last_use = std::max(buf.last_use, n);
          if (entry && buf.category == Category::kTemporary) buf.category = Category::kOutput;
        }
      }
    }
    // Sweep: live(s) = buffers with def <= s <= last_use, plus a loop body's own peak at s.
    std::vector<int64_t> delta(static_cast<size_t>(n + 2), 0);
    int64_t always = 0;  // allocated before the first step
    for (const Buffer& b : buffers) {
      if (b.def < 0) {
        always += b.bytes;
      } else {
        delta[static_cast<size_t>(b.def)] += b.bytes;
      }
      delta[static_cast<size_t>(std::min(b.last_use, n) + 1)] -= b.bytes;
    }
    Peak peak;
    peak.bytes = -1;
    int64_t live = always;
    int64_t peak_step = -1;
    Peak peak_body;
    for (int64_t s = 0; s < n; ++s) {
      live += delta[static_cast<size_t>(s)];
      const Step& step = cp.steps[static_cast<size_t>(s)];
      Peak body;
      if (step.kind == StepKind::kLoop) body = Analyze(step.body);
      if (live + body.bytes > peak.bytes) {
        peak.bytes = live + body.bytes;
        peak_step = s;
        peak_body = body;
        peak.instruction = body.instruction.empty() ? "%" + step.instr->name : body.instruction;
      }
    }
    if (n == 0 || peak.bytes < 0) {
      peak.bytes = always;
      peak_step = -1;
    }
    for (const Buffer& b : buffers) {
      const bool live_at = peak_step < 0 ? b.def < 0 : (b.def <= peak_step && peak_step <= b.last_use);
      if (!live_at) continue;
      switch (b.category) {
        case Category::kParameter: peak.breakdown.parameters += b.bytes; break;
        case Category::kTemporary: peak.breakdown.temporaries += b.bytes; break;
        case Category::kOutput: peak.breakdown.outputs += b.bytes; break;
      }
    }
    peak.breakdown.parameters += peak_body.breakdown.parameters;
    peak.breakdown.temporaries += peak_body.breakdown.temporaries + peak_body.breakdown.outputs;
    if (!entry) {
      // Inside a body everything is a temporary of the loop.
      peak.breakdown.temporaries += peak.breakdown.outputs;
      peak.breakdown.outputs = 0;
    }
    memo_[index] = peak;
    return peak;
  }

 private:
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
