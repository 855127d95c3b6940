#pragma once
// Internal to the IR text format (text_printer.cc, text_parser.cc): the attributes an
// instruction line may carry after its operands, which opcode takes which, and in what order
// they print. The one table both directions read, so printer and parser cannot drift apart.

#include <cstdint>
#include <span>
#include <string_view>

#include "ir/opcode.h"

namespace podsim::ir::text_internal {

// One `name=value` attribute of the text format; see docs/ir.md for each value's syntax.
enum class Attr : uint8_t {
  kDimensions,          // dimensions={1,2}
  kSlice,               // slice={[0:4], [2:8:2]}
  kDynamicSliceSizes,   // dynamic_slice_sizes={2,2}
  kPadding,             // padding=0_0_0x1_2_1
  kLhsBatchDims,        // lhs_batch_dims={0}
  kRhsBatchDims,        // rhs_batch_dims={0}
  kLhsContractingDims,  // lhs_contracting_dims={1}
  kRhsContractingDims,  // rhs_contracting_dims={0}
  kWindow,              // window={size=3x3 stride=2x1 pad=1_1x0_0 lhs_dilate=1x1 rhs_dilate=1x1}
  kDimLabels,           // dim_labels=b01f_01io->b01f
  kFeatureGroupCount,   // feature_group_count=2
  kKind,                // kind=add
  kDirection,           // direction=LT
  kExclusive,           // exclusive=true
  kDescending,          // descending=true
  kK,                   // k=2
  kSeed,                // seed=42
  kLow,                 // low=0
  kHigh,                // high=1
  kGlobalDims,          // global_dims={8,16}
  kReplicaGroups,       // replica_groups={{0,1},{2,3}}
  kSourceTargetPairs,   // source_target_pairs={{0,1},{1,0}}
  kSplitDimension,      // split_dimension=0
  kConcatDimension,     // concat_dimension=1
  kTripCount,           // trip_count=3
  kBody,                // body=%body
  kIndex,               // index=0
  kTiling,              // tiling={devices=[4,1]<=[4]}
  kRange,               // range={0,1}
  kCustomCallTarget,    // custom_call_target="te_fused_attn_forward_ffi"
  kFlops,               // flops=1.5e12
  kRegion,              // region=%add (a custom-call's called computation)
  kRegionDims,          // region_dims={1} (the dims a custom-call's region reduces or sorts)
  kRegionWindow,        // region_window={size=2 stride=2} (the window of a custom-call's region)
  kSharding,            // sharding={devices=[2,1]0,1}
  kScope,               // scope="moe/gate"
};
inline constexpr int kNumAttrs = static_cast<int>(Attr::kScope) + 1;

// When an attribute is printed, and whether the parser insists on it.
enum class Presence : uint8_t {
  kRequired,  // always printed; the parser rejects an instruction without it
  kOptional,  // always printed; the parser uses the Instruction default when absent
  kWhenSet,   // printed only when it differs from the Instruction default
};

std::string_view AttrName(Attr a);
// Inverse of AttrName; returns false for an unknown name.
bool LookupAttr(std::string_view name, Attr* a);
Presence AttrPresence(Attr a);

// The attributes `op` takes, in print order, not counting sharding and scope (which every
// opcode takes, printed last in that order when set).
std::span<const Attr> OpcodeAttrs(Opcode op);

}  // namespace podsim::ir::text_internal
