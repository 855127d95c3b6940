#pragma once
// Fusion planning as XLA does it on TPU (InstructionFusion, reverse post-order, producer into
// consumer), at the granularity the device model needs: which instructions run as one kernel,
// and how many bytes that kernel moves to and from HBM.
//
// Rules (per computation; loop bodies are planned on their own):
//  - Loop fusion: elementwise ops (unary, binary, select, compare, convert) fuse into their
//    elementwise consumer, and so do broadcast, reshape, iota and constant.
//  - Input fusion: the same producers fuse into a consuming reduce / argmax (the reduce is the
//    fusion's root; a reduce never fuses into its consumer).
//  - Output fusion: a dot or convolution fuses into its elementwise consumer (bias add,
//    activation, convert). One dot per fusion.
//  - Operand fusion: the same producers as a loop fusion's fuse into a dot's or convolution's
//    operands (XLA TPU's convolution fusion: the vector unit applies an elementwise chain, a
//    normalisation or a one-hot construction, to each operand tile on its way to the matrix
//    unit, so the chain's result is never written to HBM).
//  - Duplication (XLA's InstructionFusion): a producer whose users are all in the fusion is
//    computed there only. Otherwise constant, iota, broadcast and every cheap producer (loop-
//    fusible and not expensive: not log, tanh, power; divide, exp, sqrt and rsqrt are single
//    instructions of the vector unit, as XLA's GPU fusion deems them) whose copy streams no
//    more bytes than the value itself is duplicated into each consumer fusion that wants it
//    (and still runs on its own if some user did not fuse it). A copy streams its operands,
//    except broadcasts, constants and iotas (free) and operands cheap to duplicate themselves
//    (what their copies stream): a one-hot [S,E,C] tensor built from [S,E] and [S] values is
//    rebuilt in each consumer. An expensive producer, a dot or a reduce with users elsewhere is
//    not fused.
//  - Multi-output fusion (XLA's MultiOutputFusion; the GPU pass's producer-consumer and sibling
//    cases): after the above, a kernel absorbs an earlier loop / input kernel with the same
//    iteration shape (a reduce's operand shape, else the root's) that it reads a non-reduce
//    value of, or that reads an input it reads too, when no kernel in between reads the
//    earlier kernel's values. Dots join one only as below.
//  - Reduction output fusion: a dot's kernel absorbs one later reduce kernel (input fusion or
//    lone reduce) that reduces values of the dot kernel's result shape and reads a value the
//    dot's kernel writes: the vector unit folds each result tile into the reduction on its way
//    to HBM (as XLA TPU computes batch-norm statistics in the convolution's fusion), so the
//    reduce reads nothing back. One reduce per dot kernel. The kernel runs where the dot was
//    when the reduce reads nothing made after the dot, else where the reduce was.
//  - An outer-product dot (IsOuterProduct) counts as a cheap elementwise op.
//  - A lone IsBitcast reshape / transpose moves no bytes and launches nothing.
//  - Dynamic-slice fuses into its consumer like convert and reshape (into a loop fusion or a
//    dot's operand); the kernel then reads the window of the sliced operand, not all of it.
//  - Never fused: parameters, tuples, get-tuple-element, partition-id, collectives, loops, and
//    data movement other than broadcast / reshape / dynamic-slice (transpose, slices, pad,
//    concatenate, gather, dynamic-update-slice), sort, top-k, cumsum, reduce-window,
//    random-uniform.
// A fused group's intermediate values never reach HBM: it reads each distinct external input
// once and writes each output (the root, and each other value it owns that a kernel outside
// reads) once. A group of one instruction keeps the cost analysis' bytes (slices read only what
// they output, dynamic-update-slice works in place).

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/cost.h"
#include "ir/module.h"

namespace podsim::sim {

enum class FusionKind : uint8_t {
  kNone,    // one instruction, not fused
  kLoop,    // elementwise root
  kInput,   // a reduce / argmax root (or member, in a multi-output fusion)
  kOutput,  // contains a dot or convolution
};
const char* FusionKindName(FusionKind kind);  // "none", "loop", "input", "output"

struct FusionGroup {
  FusionKind kind = FusionKind::kNone;
  const ir::Instruction* root = nullptr;  // the group's last value (the step's instruction)
  // Instructions computed by the group, in program order, root last (duplicated copies
  // included).
  std::vector<const ir::Instruction*> members;
  // Distinct operands of members that are not members, in first-use order.
  std::vector<const ir::Instruction*> inputs;
  // Values the group writes to HBM, in program order, root last: the root, and owned
  // members read outside (several: a multi-output fusion).
  std::vector<const ir::Instruction*> outputs;
  double hbm_bytes = 0;  // bytes read from and written to HBM by one execution
  // A group of one IsBitcast instruction: no kernel, no bytes (XLA emits a bitcast).
  bool bitcast = false;
};

// A reshape or transpose that keeps every element where it is in a row-major buffer: the dims
// other than 1 stay in the same order (a transpose that only moves unit dims, e.g.
// [1,E,C,M] -> [E,1,C,M] with one group per core, or a reshape adding or dropping unit dims).
// XLA turns these into bitcasts; the simulator gives them no time and no bytes. A reshape that
// merges or splits non-unit dims is not counted as one: the IR has no layouts (a TPU's tiled
// minor dims can make it a copy).
bool IsBitcast(const ir::Instruction& instr);

// A dot with no contracting dims (an outer product, possibly batched): XLA's algebraic
// simplifier rewrites it into a multiply of broadcasts, so it runs on the vector unit (one
// multiply per output element) and fuses as an elementwise op.
bool IsOuterProduct(const ir::Instruction& instr);

struct FusionPlan {
  // Groups in execution order: by the root's position in the computation, except that a dot's
  // kernel that absorbed a later reduce (reduction output fusion) runs where the dot was when
  // everything it reads is ready there.
  std::vector<FusionGroup> groups;
  // The group whose root an instruction is, or that computes it as a non-duplicated member
  // (an output of a multi-output group included). Duplicated ops that run nowhere on their own
  // are absent.
  std::unordered_map<const ir::Instruction*, int32_t> group_of;
  int64_t fused_instructions = 0;  // members of groups of >= 2 instructions
  double bytes_saved = 0;          // unfused bytes minus fused bytes, summed over groups
};

// Plans `computation`. costs: per-instruction costs (ir::AnalyzeCost(...).per_instruction).
// enabled = false: every instruction is its own group with its cost-analysis bytes.
FusionPlan PlanFusion(const ir::Computation& computation,
                      const std::unordered_map<const ir::Instruction*, ir::Cost>& costs,
                      bool enabled);

}  // namespace podsim::sim
