#include "ir/text_attributes.h"

#include <array>

namespace podsim::ir::text_internal {

namespace {

struct AttrInfo {
  std::string_view name;
  Presence presence;
};

constexpr std::array<AttrInfo, kNumAttrs> kAttrs = {{
    {"dimensions", Presence::kRequired},
    {"slice", Presence::kRequired},
    {"dynamic_slice_sizes", Presence::kRequired},
    {"padding", Presence::kRequired},
    {"lhs_batch_dims", Presence::kWhenSet},
    {"rhs_batch_dims", Presence::kWhenSet},
    {"lhs_contracting_dims", Presence::kWhenSet},
    {"rhs_contracting_dims", Presence::kWhenSet},
    {"window", Presence::kRequired},
    {"dim_labels", Presence::kRequired},
    {"feature_group_count", Presence::kWhenSet},
    {"kind", Presence::kRequired},
    {"direction", Presence::kRequired},
    {"exclusive", Presence::kWhenSet},
    {"descending", Presence::kWhenSet},
    {"k", Presence::kRequired},
    {"seed", Presence::kRequired},
    {"low", Presence::kOptional},
    {"high", Presence::kOptional},
    {"global_dims", Presence::kOptional},
    {"replica_groups", Presence::kOptional},
    {"source_target_pairs", Presence::kRequired},
    {"split_dimension", Presence::kRequired},
    {"concat_dimension", Presence::kRequired},
    {"trip_count", Presence::kRequired},
    {"body", Presence::kRequired},
    {"index", Presence::kRequired},
    {"tiling", Presence::kRequired},
    {"range", Presence::kWhenSet},
    {"custom_call_target", Presence::kRequired},
    {"flops", Presence::kWhenSet},
    {"region", Presence::kWhenSet},
    {"region_dims", Presence::kWhenSet},
    {"region_window", Presence::kWhenSet},
    {"sharding", Presence::kWhenSet},
    {"scope", Presence::kWhenSet},
}};

using A = Attr;
constexpr A kDims[] = {A::kDimensions};
constexpr A kRng[] = {A::kSeed, A::kLow, A::kHigh, A::kGlobalDims};
constexpr A kCompare[] = {A::kDirection};
constexpr A kSlice[] = {A::kSlice};
constexpr A kDynamicSlice[] = {A::kDynamicSliceSizes};
constexpr A kPad[] = {A::kPadding};
constexpr A kDot[] = {A::kLhsBatchDims, A::kRhsBatchDims, A::kLhsContractingDims,
                      A::kRhsContractingDims};
constexpr A kConv[] = {A::kWindow, A::kDimLabels, A::kFeatureGroupCount};
constexpr A kReduce[] = {A::kDimensions, A::kKind};
constexpr A kReduceWindow[] = {A::kWindow, A::kKind};
constexpr A kCumsum[] = {A::kDimensions, A::kExclusive};
constexpr A kSort[] = {A::kDimensions, A::kDescending};
constexpr A kTopK[] = {A::kK};
constexpr A kTiling[] = {A::kTiling};
constexpr A kAllReduce[] = {A::kReplicaGroups, A::kKind};
constexpr A kAllGather[] = {A::kDimensions, A::kReplicaGroups};
constexpr A kReduceScatter[] = {A::kDimensions, A::kReplicaGroups, A::kKind};
constexpr A kAllToAll[] = {A::kSplitDimension, A::kConcatDimension, A::kReplicaGroups};
constexpr A kPermute[] = {A::kSourceTargetPairs};
constexpr A kLoop[] = {A::kTripCount, A::kBody};
constexpr A kGte[] = {A::kIndex};
constexpr A kParameter[] = {A::kRange};
constexpr A kCustomCall[] = {A::kCustomCallTarget, A::kFlops, A::kRegion, A::kRegionDims,
                             A::kRegionWindow};

}  // namespace

std::string_view AttrName(Attr a) { return kAttrs[static_cast<int>(a)].name; }

Presence AttrPresence(Attr a) { return kAttrs[static_cast<int>(a)].presence; }

bool LookupAttr(std::string_view name, Attr* a) {
  for (int i = 0; i < kNumAttrs; ++i) {
    if (kAttrs[i].name == name) {
      *a = static_cast<Attr>(i);
      return true;
    }
  }
  return false;
}

std::span<const Attr> OpcodeAttrs(Opcode op) {
  switch (op) {
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kGather:
    case Opcode::kArgmax:
      return kDims;
    case Opcode::kRandomUniform: return kRng;
    case Opcode::kCompare: return kCompare;
    case Opcode::kSlice: return kSlice;
    case Opcode::kDynamicSlice: return kDynamicSlice;
    case Opcode::kPad: return kPad;
    case Opcode::kDot: return kDot;
    case Opcode::kConvolution: return kConv;
    case Opcode::kReduce: return kReduce;
    case Opcode::kReduceWindow: return kReduceWindow;
    case Opcode::kCumsum: return kCumsum;
    case Opcode::kSort: return kSort;
    case Opcode::kTopK: return kTopK;
    case Opcode::kAllReduce: return kAllReduce;
    case Opcode::kAllGather: return kAllGather;
    case Opcode::kReduceScatter: return kReduceScatter;
    case Opcode::kAllToAll: return kAllToAll;
    case Opcode::kCollectivePermute: return kPermute;
    case Opcode::kLoop: return kLoop;
    case Opcode::kGetTupleElement: return kGte;
    case Opcode::kParameter: return kParameter;
    case Opcode::kCustomCall: return kCustomCall;
    case Opcode::kAutoToManual:
    case Opcode::kManualToAuto: return kTiling;
    default:
      return {};
  }
}

}  // namespace podsim::ir::text_internal
