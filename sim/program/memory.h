#pragma once
// Per-device memory: buffer liveness over the executed order of the program plan. Every device
// runs the same shapes, so one analysis holds for all of them.
//
// Buffer model:
//  - Entry parameters and constants ("parameters": weights, inputs, literals) live for the
//    whole program.
//  - Every step that produces a value allocates one buffer of its shape's bytes (a fused group:
//    only its root; the intermediates of a fusion never reach HBM) when it starts, and frees it
//    after the last step that reads it. tuple and get-tuple-element alias their operands'
//    buffers; partition-id is a 4-byte temporary.
//  - An async collective's operand stays allocated until the collective is done (the first step
//    that reads its result); its result is allocated when it starts.
//  - Buffers the entry's root returns are "outputs" and live to the end (a returned parameter
//    stays a parameter). Everything else is a "temporary" (activations).
//  - Donation (ir::OutputAlias): a donated parameter is freed after its last read, and the
//    output written over it counts as a parameter from its definition on (a training step's
//    updated weights take the weights' place).
//  - A loop allocates each carried value when it starts, except those its body passes through
//    unchanged (stacked weights, the encoder output), which stay in their operand's buffer, and
//    those whose operand the loop reads last, which are updated in the operand's buffer; the
//    other operands are freed after it as usual. While the loop runs, the body's own peak (its
//    temporaries; its parameters alias the carried values) adds to what is live outside.
// The peak is the largest total over all steps (a step's inputs and its output are live
// together); the breakdown is taken at the first step that reaches it.

#include <cstdint>
#include <map>
#include <string>

#include "sim/program/program_plan.h"

namespace podsim::sim {

struct MemoryBreakdown {
  int64_t parameters = 0;   // entry parameters and constants (and donated outputs in their place)
  int64_t temporaries = 0;  // activations and intermediate values, loop bodies included
  int64_t outputs = 0;      // values the program returns (not donated)
  int64_t total() const { return parameters + temporaries + outputs; }
  // The same bytes by kind (MemoryKindName) and by the top-level name scope of the instruction
  // that allocated them ("" for none); each sums to total().
  std::map<std::string, int64_t> by_kind;
  std::map<std::string, int64_t> by_scope;
};

// What a buffer holds, for a training step's breakdown (Figure 7's weights and activations):
//   weights          float entry parameters outside optimizer scopes, and their donated updates
//   optimizer_state  entry parameters in "optimizer" scopes (their updates likewise)
//   inputs           integer entry parameters (token ids, labels, the step)
//   constants        literals
//   activations      forward temporaries the backward pass does not read
//   saved_activations  forward temporaries a "backward" or "recompute" step reads (what the
//                    backward pass needs from the forward; with layer loops, the saved
//                    per-iteration values)
//   backward         temporaries of "backward" scopes (activation and weight gradients)
//   recomputed       temporaries of "recompute" scopes (a backward layer loop's recomputation of
//                    the forward values it did not save)
//   optimizer        temporaries of "optimizer" scopes
//   outputs          returned values that are not donated
enum class MemoryKind : uint8_t {
  kWeights, kOptimizerState, kInputs, kConstants, kActivations, kSavedActivations, kBackward,
  kRecomputed, kOptimizer, kOutputs
};
const char* MemoryKindName(MemoryKind k);

struct MemoryResult {
  int64_t peak_bytes = 0;
  MemoryBreakdown at_peak;
  std::string peak_instruction;  // the instruction running at the peak, e.g. "%dot.3"
  double capacity_bytes = 0;     // the device's HBM capacity
  bool oom = false;              // peak_bytes > capacity_bytes
  std::string message;           // when oom: "OOM at %dot.3: needs 17.2 GiB of 16 GiB"
};

// Liveness of `plan` on one device with `capacity_bytes` of HBM. async_collectives: operands of
// collectives live until the result is first read (else only to the collective itself).
MemoryResult AnalyzeMemory(const ProgramPlan& plan, double capacity_bytes, bool async_collectives);

}  // namespace podsim::sim
