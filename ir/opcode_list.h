#pragma once
// The opcode table: one row per IR operation, the only list of them. Each row is
//   V(enumerator, text name (as in HLO), visitor handler suffix, family)
// and every per-opcode list in the tree (the Opcode enum, the names, the families, the visitor's
// HandleX methods and its dispatch) is generated from it. docs/ir.md describes each op.
//
// Families group ops whose behaviour most concerns share; ir::ConstVisitor's HandleX defaults to
// its family's handler.

#define PODSIM_OPCODES(V)                                               \
  /* Leaves. */                                                         \
  V(kParameter, "parameter", Parameter, Leaf)                           \
  V(kConstant, "constant", Constant, Leaf)                              \
  V(kIota, "iota", Iota, Leaf)                                          \
  V(kPartitionId, "partition-id", PartitionId, Leaf)                    \
  V(kRandomUniform, "random-uniform", RandomUniform, Leaf)              \
  /* Elementwise unary. */                                              \
  V(kNegate, "negate", Negate, ElementwiseUnary)                        \
  V(kExp, "exponential", Exp, ElementwiseUnary)                         \
  V(kLog, "log", Log, ElementwiseUnary)                                 \
  V(kSqrt, "sqrt", Sqrt, ElementwiseUnary)                              \
  V(kRsqrt, "rsqrt", Rsqrt, ElementwiseUnary)                           \
  V(kTanh, "tanh", Tanh, ElementwiseUnary)                              \
  V(kAbs, "abs", Abs, ElementwiseUnary)                                 \
  V(kConvert, "convert", Convert, ElementwiseUnary)                     \
  /* Elementwise binary. */                                             \
  V(kAdd, "add", Add, ElementwiseBinary)                                \
  V(kSubtract, "subtract", Subtract, ElementwiseBinary)                 \
  V(kMultiply, "multiply", Multiply, ElementwiseBinary)                 \
  V(kDivide, "divide", Divide, ElementwiseBinary)                       \
  V(kMaximum, "maximum", Maximum, ElementwiseBinary)                    \
  V(kMinimum, "minimum", Minimum, ElementwiseBinary)                    \
  V(kPower, "power", Power, ElementwiseBinary)                          \
  V(kCompare, "compare", Compare, ElementwiseBinary)                    \
  V(kAnd, "and", And, ElementwiseBinary)                                \
  V(kOr, "or", Or, ElementwiseBinary)                                   \
  /* Elementwise ternary. */                                            \
  V(kSelect, "select", Select, ElementwiseTernary)                      \
  /* Data movement. */                                                  \
  V(kBroadcast, "broadcast", Broadcast, DataMovement)                   \
  V(kReshape, "reshape", Reshape, DataMovement)                         \
  V(kTranspose, "transpose", Transpose, DataMovement)                   \
  V(kSlice, "slice", Slice, DataMovement)                               \
  V(kDynamicSlice, "dynamic-slice", DynamicSlice, DataMovement)         \
  V(kDynamicUpdateSlice, "dynamic-update-slice", DynamicUpdateSlice,    \
    DataMovement)                                                       \
  V(kPad, "pad", Pad, DataMovement)                                     \
  V(kConcatenate, "concatenate", Concatenate, DataMovement)             \
  V(kReverse, "reverse", Reverse, DataMovement)                         \
  V(kGather, "gather", Gather, DataMovement)                            \
  /* Contractions. */                                                   \
  V(kDot, "dot", Dot, Contraction)                                      \
  V(kConvolution, "convolution", Convolution, Contraction)              \
  /* Reductions and scans. */                                           \
  V(kReduce, "reduce", Reduce, Reduction)                               \
  V(kArgmax, "argmax", Argmax, Reduction)                               \
  V(kReduceWindow, "reduce-window", ReduceWindow, Reduction)            \
  V(kCumsum, "cumsum", Cumsum, Reduction)                               \
  V(kSort, "sort", Sort, Reduction)                                     \
  V(kTopK, "top-k", TopK, Reduction)                                    \
  /* Collectives. */                                                    \
  V(kAllReduce, "all-reduce", AllReduce, Collective)                    \
  V(kAllGather, "all-gather", AllGather, Collective)                    \
  V(kReduceScatter, "reduce-scatter", ReduceScatter, Collective)        \
  V(kAllToAll, "all-to-all", AllToAll, Collective)                      \
  V(kCollectivePermute, "collective-permute", CollectivePermute,        \
    Collective)                                                         \
  /* Control and tuples. */                                             \
  V(kLoop, "loop", Loop, Control)                                       \
  V(kTuple, "tuple", Tuple, Control)                                    \
  V(kGetTupleElement, "get-tuple-element", GetTupleElement, Control)    \
  /* Manual partitioning (GShard 3.2): a region of per-partition code. */ \
  V(kAutoToManual, "auto-to-manual", AutoToManual, ManualBoundary)      \
  V(kManualToAuto, "manual-to-auto", ManualToAuto, ManualBoundary)    \
  /* Elementwise ops of imported XLA programs (appended: the protobuf */ \
  /* form numbers opcodes in this order, so existing numbers stay). */  \
  V(kSine, "sine", Sine, ElementwiseUnary)                              \
  V(kCosine, "cosine", Cosine, ElementwiseUnary)                        \
  V(kLogistic, "logistic", Logistic, ElementwiseUnary)                  \
  V(kFloor, "floor", Floor, ElementwiseUnary)                           \
  V(kCeil, "ceil", Ceil, ElementwiseUnary)                              \
  V(kNot, "not", Not, ElementwiseUnary)                                 \
  V(kIsFinite, "is-finite", IsFinite, ElementwiseUnary)                 \
  V(kXor, "xor", Xor, ElementwiseBinary)                                \
  V(kShiftLeft, "shift-left", ShiftLeft, ElementwiseBinary)             \
  V(kShiftRightLogical, "shift-right-logical", ShiftRightLogical,       \
    ElementwiseBinary)                                                  \
  V(kShiftRightArithmetic, "shift-right-arithmetic",                    \
    ShiftRightArithmetic, ElementwiseBinary)                            \
  /* An operation podsim knows only by name and the cost it is given. */ \
  V(kCustomCall, "custom-call", CustomCall, Opaque)
