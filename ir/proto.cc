#include "ir/proto.h"

#include <climits>
#include <cstdint>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/ir.pb.h"
#include "ir/verifier.h"

namespace podsim::ir {

namespace {

// The proto enums mirror the C++ enums value for value, so conversion is a cast once the value
// is known to be valid. These tables make the compiler check the mirroring.
template <typename A, typename B>
struct Same {
  A cpp;
  B proto;
};

template <typename A, typename B, size_t N>
constexpr bool Mirrors(const Same<A, B> (&table)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].cpp) != i || static_cast<size_t>(table[i].proto) != i) {
      return false;
    }
  }
  return true;
}

constexpr Same<Opcode, OpcodeProto> kOpcodes[] = {
    {Opcode::kParameter, OPCODE_PARAMETER},
    {Opcode::kConstant, OPCODE_CONSTANT},
    {Opcode::kIota, OPCODE_IOTA},
    {Opcode::kPartitionId, OPCODE_PARTITION_ID},
    {Opcode::kRandomUniform, OPCODE_RANDOM_UNIFORM},
    {Opcode::kNegate, OPCODE_NEGATE},
    {Opcode::kExp, OPCODE_EXPONENTIAL},
    {Opcode::kLog, OPCODE_LOG},
    {Opcode::kSqrt, OPCODE_SQRT},
    {Opcode::kRsqrt, OPCODE_RSQRT},
    {Opcode::kTanh, OPCODE_TANH},
    {Opcode::kAbs, OPCODE_ABS},
    {Opcode::kConvert, OPCODE_CONVERT},
    {Opcode::kAdd, OPCODE_ADD},
    {Opcode::kSubtract, OPCODE_SUBTRACT},
    {Opcode::kMultiply, OPCODE_MULTIPLY},
    {Opcode::kDivide, OPCODE_DIVIDE},
    {Opcode::kMaximum, OPCODE_MAXIMUM},
    {Opcode::kMinimum, OPCODE_MINIMUM},
    {Opcode::kPower, OPCODE_POWER},
    {Opcode::kCompare, OPCODE_COMPARE},
    {Opcode::kAnd, OPCODE_AND},
    {Opcode::kOr, OPCODE_OR},
    {Opcode::kSelect, OPCODE_SELECT},
    {Opcode::kBroadcast, OPCODE_BROADCAST},
    {Opcode::kReshape, OPCODE_RESHAPE},
    {Opcode::kTranspose, OPCODE_TRANSPOSE},
    {Opcode::kSlice, OPCODE_SLICE},
    {Opcode::kDynamicSlice, OPCODE_DYNAMIC_SLICE},
    {Opcode::kDynamicUpdateSlice, OPCODE_DYNAMIC_UPDATE_SLICE},
    {Opcode::kPad, OPCODE_PAD},
    {Opcode::kConcatenate, OPCODE_CONCATENATE},
    {Opcode::kReverse, OPCODE_REVERSE},
    {Opcode::kGather, OPCODE_GATHER},
    {Opcode::kDot, OPCODE_DOT},
    {Opcode::kConvolution, OPCODE_CONVOLUTION},
    {Opcode::kReduce, OPCODE_REDUCE},
    {Opcode::kArgmax, OPCODE_ARGMAX},
    {Opcode::kReduceWindow, OPCODE_REDUCE_WINDOW},
    {Opcode::kCumsum, OPCODE_CUMSUM},
    {Opcode::kSort, OPCODE_SORT},
    {Opcode::kTopK, OPCODE_TOP_K},
    {Opcode::kAllReduce, OPCODE_ALL_REDUCE},
    {Opcode::kAllGather, OPCODE_ALL_GATHER},
    {Opcode::kReduceScatter, OPCODE_REDUCE_SCATTER},
    {Opcode::kAllToAll, OPCODE_ALL_TO_ALL},
    {Opcode::kCollectivePermute, OPCODE_COLLECTIVE_PERMUTE},
    {Opcode::kLoop, OPCODE_LOOP},
    {Opcode::kTuple, OPCODE_TUPLE},
    {Opcode::kGetTupleElement, OPCODE_GET_TUPLE_ELEMENT},
    {Opcode::kAutoToManual, OPCODE_AUTO_TO_MANUAL},
    {Opcode::kManualToAuto, OPCODE_MANUAL_TO_AUTO},
    {Opcode::kSine, OPCODE_SINE},
    {Opcode::kCosine, OPCODE_COSINE},
    {Opcode::kLogistic, OPCODE_LOGISTIC},
    {Opcode::kFloor, OPCODE_FLOOR},
    {Opcode::kCeil, OPCODE_CEIL},
    {Opcode::kNot, OPCODE_NOT},
    {Opcode::kIsFinite, OPCODE_IS_FINITE},
    {Opcode::kXor, OPCODE_XOR},
    {Opcode::kShiftLeft, OPCODE_SHIFT_LEFT},
    {Opcode::kShiftRightLogical, OPCODE_SHIFT_RIGHT_LOGICAL},
    {Opcode::kShiftRightArithmetic, OPCODE_SHIFT_RIGHT_ARITHMETIC},
    {Opcode::kCustomCall, OPCODE_CUSTOM_CALL},
};
static_assert(std::size(kOpcodes) == kNumOpcodes && OpcodeProto_ARRAYSIZE == kNumOpcodes);
static_assert(Mirrors(kOpcodes));

constexpr Same<DType, DTypeProto> kDTypes[] = {
    {DType::kF32, DTYPE_F32},
    {DType::kBF16, DTYPE_BF16},
    {DType::kS32, DTYPE_S32},
    {DType::kPred, DTYPE_PRED},
    {DType::kF16, DTYPE_F16},
    {DType::kF64, DTYPE_F64},
    {DType::kS8, DTYPE_S8},
    {DType::kU8, DTYPE_U8},
    {DType::kS16, DTYPE_S16},
    {DType::kU16, DTYPE_U16},
    {DType::kU32, DTYPE_U32},
    {DType::kS64, DTYPE_S64},
    {DType::kU64, DTYPE_U64},
    {DType::kF8E4M3FN, DTYPE_F8E4M3FN},
    {DType::kF8E5M2, DTYPE_F8E5M2},
    {DType::kToken, DTYPE_TOKEN},
};
static_assert(std::size(kDTypes) == DTypeProto_ARRAYSIZE && Mirrors(kDTypes));

constexpr Same<ReduceKind, ReduceKindProto> kReduceKinds[] = {
    {ReduceKind::kAdd, REDUCE_KIND_ADD},
    {ReduceKind::kMax, REDUCE_KIND_MAX},
    {ReduceKind::kMin, REDUCE_KIND_MIN},
    {ReduceKind::kAnd, REDUCE_KIND_AND},
    {ReduceKind::kOr, REDUCE_KIND_OR},
};
static_assert(std::size(kReduceKinds) == ReduceKindProto_ARRAYSIZE && Mirrors(kReduceKinds));

constexpr Same<Comparison, ComparisonProto> kComparisons[] = {
    {Comparison::kEq, COMPARISON_EQ},
    {Comparison::kNe, COMPARISON_NE},
    {Comparison::kLt, COMPARISON_LT},
    {Comparison::kLe, COMPARISON_LE},
    {Comparison::kGt, COMPARISON_GT},
    {Comparison::kGe, COMPARISON_GE},
};
static_assert(std::size(kComparisons) == ComparisonProto_ARRAYSIZE && Mirrors(kComparisons));

constexpr Same<Sharding::Kind, ShardingProto::Kind> kShardingKinds[] = {
    {Sharding::Kind::kReplicated, ShardingProto::KIND_REPLICATED},
    {Sharding::Kind::kMaximal, ShardingProto::KIND_MAXIMAL},
    {Sharding::Kind::kTiled, ShardingProto::KIND_TILED},
    {Sharding::Kind::kManual, ShardingProto::KIND_MANUAL},
};
static_assert(std::size(kShardingKinds) == ShardingProto::Kind_ARRAYSIZE &&
              Mirrors(kShardingKinds));

// ---------------------------------------------------------------------------------------------
// Module -> proto.

using Ints = google::protobuf::RepeatedField<int64_t>;

void PutInts(const std::vector<int64_t>& from, Ints* to) {
  to->Reserve(static_cast<int>(from.size()));
  for (int64_t v : from) to->Add(v);
}

// True for a default-constructed Shape (all fields, unlike Shape::operator==).
bool IsDefault(const Shape& s) {
  return s.dtype == DType::kF32 && s.dims.empty() && !s.is_tuple && s.tuple_shapes.empty();
}
bool IsDefault(const Literal& l) {
  return IsDefault(l.shape) && l.values.empty() && l.elements.empty();
}

void ToProto(const Shape& s, ShapeProto* p) {
  p->set_dtype(static_cast<DTypeProto>(s.dtype));
  PutInts(s.dims, p->mutable_dims());
  p->set_is_tuple(s.is_tuple);
  for (const Shape& e : s.tuple_shapes) ToProto(e, p->add_tuple_shapes());
}

void ToProto(const Literal& l, LiteralProto* p) {
  ToProto(l.shape, p->mutable_shape());
  p->mutable_values()->Reserve(static_cast<int>(l.values.size()));
  for (double v : l.values) p->add_values(v);
  for (const Literal& e : l.elements) ToProto(e, p->add_elements());
}

void ToProto(const IotaDevices& d, IotaDevicesProto* p) {
  PutInts(d.reshape_dims(), p->mutable_reshape_dims());
  PutInts(d.transpose_perm(), p->mutable_transpose_perm());
}

void ToProto(const Sharding& s, ShardingProto* p) {
  p->set_kind(static_cast<ShardingProto::Kind>(s.kind));
  p->set_device(s.device);
  PutInts(s.tile_dims, p->mutable_tile_dims());
  if (s.devices.is_iota()) {
    ToProto(s.devices.iota(), p->mutable_iota_devices());
  } else {
    PutInts(s.devices.ToVector(), p->mutable_devices());
  }
  p->set_last_tile_dim_replicate(s.last_tile_dim_replicate);
}

void ToProto(const WindowDim& w, WindowDimProto* p) {
  if (w.size != 1) p->set_size(w.size);
  if (w.stride != 1) p->set_stride(w.stride);
  p->set_pad_low(w.pad_low);
  p->set_pad_high(w.pad_high);
  if (w.base_dilation != 1) p->set_base_dilation(w.base_dilation);
  if (w.window_dilation != 1) p->set_window_dilation(w.window_dilation);
}

void ToProto(const ConvDims& c, ConvDimsProto* p) {
  p->set_input_batch(c.input_batch);
  p->set_input_feature(c.input_feature);
  PutInts(c.input_spatial, p->mutable_input_spatial());
  p->set_kernel_input_feature(c.kernel_input_feature);
  p->set_kernel_output_feature(c.kernel_output_feature);
  PutInts(c.kernel_spatial, p->mutable_kernel_spatial());
  p->set_output_batch(c.output_batch);
  p->set_output_feature(c.output_feature);
  PutInts(c.output_spatial, p->mutable_output_spatial());
}

void ToProto(const Instruction& i, const Computation& comp,
             const std::unordered_map<const Instruction*, int64_t>& index, InstructionProto* p) {
  p->set_name(i.name);
  p->set_opcode(static_cast<OpcodeProto>(i.opcode));
  ToProto(i.shape, p->mutable_shape());
  for (const Instruction* o : i.operands) {
    auto it = index.find(o);
    if (it == index.end()) {
      throw Error("computation %" + comp.name() + ", instruction %" + i.name + ": operand " +
                  std::to_string(p->operands_size()) + " is not an earlier instruction of it");
    }
    p->add_operands()->set_index(it->second);
  }
  p->set_parameter_number(i.parameter_number);
  if (!IsDefault(i.literal)) ToProto(i.literal, p->mutable_literal());
  PutInts(i.dimensions, p->mutable_dimensions());
  PutInts(i.slice_starts, p->mutable_slice_starts());
  PutInts(i.slice_limits, p->mutable_slice_limits());
  PutInts(i.slice_strides, p->mutable_slice_strides());
  PutInts(i.slice_sizes, p->mutable_slice_sizes());
  for (const PadDim& d : i.padding) {
    PadDimProto* pd = p->add_padding();
    pd->set_low(d.low);
    pd->set_high(d.high);
    pd->set_interior(d.interior);
  }
  if (!(i.dot == DotDims{})) {
    DotDimsProto* d = p->mutable_dot();
    PutInts(i.dot.lhs_batch, d->mutable_lhs_batch());
    PutInts(i.dot.rhs_batch, d->mutable_rhs_batch());
    PutInts(i.dot.lhs_contracting, d->mutable_lhs_contracting());
    PutInts(i.dot.rhs_contracting, d->mutable_rhs_contracting());
  }
  if (!(i.conv == ConvDims{})) ToProto(i.conv, p->mutable_conv());
  for (const WindowDim& w : i.window) ToProto(w, p->add_window());
  if (i.feature_group_count != 1) p->set_feature_group_count(i.feature_group_count);
  p->set_reduce_kind(static_cast<ReduceKindProto>(i.reduce_kind));
  p->set_comparison(static_cast<ComparisonProto>(i.comparison));
  p->set_exclusive(i.exclusive);
  p->set_descending(i.descending);
  p->set_k(i.k);
  p->set_seed(i.seed);
  p->set_rng_low(i.rng_low);
  if (i.argument_range) {
    p->set_range_low(i.argument_range->first);
    p->set_range_high(i.argument_range->second);
  }
  if (!(i.rng_high == 1.0)) p->set_rng_high(i.rng_high);
  PutInts(i.rng_global_dims, p->mutable_rng_global_dims());
  for (const auto& group : i.replica_groups) {
    PutInts(group, p->add_replica_groups()->mutable_partitions());
  }
  for (const auto& [source, target] : i.source_target_pairs) {
    SourceTargetPairProto* pair = p->add_source_target_pairs();
    pair->set_source(source);
    pair->set_target(target);
  }
  p->set_split_dimension(i.split_dimension);
  p->set_concat_dimension(i.concat_dimension);
  p->set_trip_count(i.trip_count);
  if (i.body) p->set_body(i.body->name());
  p->set_tuple_index(i.tuple_index);
  p->set_scope(i.scope);
  p->set_custom_call_target(i.custom_call_target);
  p->set_custom_call_flops(i.custom_call_flops);
  if (i.sharding) ToProto(*i.sharding, p->mutable_sharding());
  if (i.tiling) ToProto(*i.tiling, p->mutable_tiling());
  if (i.iota_replica_groups) {
    IotaReplicaGroupsProto* g = p->mutable_iota_replica_groups();
    g->set_num_groups(i.iota_replica_groups->num_groups);
    g->set_group_size(i.iota_replica_groups->group_size);
    ToProto(i.iota_replica_groups->devices, g->mutable_devices());
  }
}

// ---------------------------------------------------------------------------------------------
// Proto -> module. Every check that needs the proto (enum ranges, names, references) is made
// here, naming the instruction; shape rules and the rest are left to Verify.

class Reader {
 public:
  std::unique_ptr<Module> Read(const ModuleProto& p) {
    auto module = std::make_unique<Module>(p.name());
    module_ = module.get();
    for (int c = 0; c < p.computations_size(); ++c) {
      const std::string& name = p.computations(c).name();
      if (name.empty()) Fail("computation #" + std::to_string(c) + " has no name");
      if (module_->FindComputation(name)) Fail("computation name %" + name + " is used twice");
      module_->AddComputation(name, !p.entry().empty() && name == p.entry());
    }
    if (p.entry().empty()) Fail("module '" + p.name() + "' names no entry computation");
    if (!module_->entry()) {
      Fail("entry computation %" + p.entry() + " is not a computation of the module");
    }
    for (int c = 0; c < p.computations_size(); ++c) {
      ReadComputation(p.computations(c), module_->computations()[c].get());
    }
    std::vector<OutputAlias> aliases;
    for (const OutputAliasProto& a : p.output_aliases()) aliases.push_back({a.output(), a.parameter()});
    module_->set_output_aliases(std::move(aliases));
    return module;
  }

 private:
  [[noreturn]] static void Fail(const std::string& what) { throw Error("module proto: " + what); }
  [[noreturn]] void FailHere(const std::string& what) const { Fail(where_ + ": " + what); }

  template <typename Enum>
  Enum CheckEnum(int value, bool (*is_valid)(int), const char* what) const {
    if (!is_valid(value)) FailHere("bad " + std::string(what) + " value " + std::to_string(value));
    return static_cast<Enum>(value);
  }

  static std::vector<int64_t> Ints(const google::protobuf::RepeatedField<int64_t>& from) {
    return std::vector<int64_t>(from.begin(), from.end());
  }

  Shape ReadShape(const ShapeProto& p) const {
    Shape s;
    s.dtype = CheckEnum<DType>(p.dtype(), DTypeProto_IsValid, "dtype");
    s.dims = Ints(p.dims());
    s.is_tuple = p.is_tuple();
    for (const ShapeProto& e : p.tuple_shapes()) s.tuple_shapes.push_back(ReadShape(e));
    return s;
  }

  Literal ReadLiteral(const LiteralProto& p) const {
    Literal l;
    l.shape = ReadShape(p.shape());
    l.values.assign(p.values().begin(), p.values().end());
    for (const LiteralProto& e : p.elements()) l.elements.push_back(ReadLiteral(e));
    return l;
  }

  IotaDevices ReadIota(const IotaDevicesProto& p) const {
    std::vector<int64_t> dims = Ints(p.reshape_dims());
    std::vector<int64_t> perm = Ints(p.transpose_perm());
    if (dims.empty()) return IotaDevices::Range(1);
    try {
      return IotaDevices::Create(std::move(dims), std::move(perm));
    } catch (const Error& e) {
      FailHere(e.what());
    }
  }

  Sharding ReadSharding(const ShardingProto& p) const {
    Sharding s;
    s.kind = CheckEnum<Sharding::Kind>(p.kind(), ShardingProto::Kind_IsValid, "sharding kind");
    s.device = p.device();
    s.tile_dims = Ints(p.tile_dims());
    if (p.has_iota_devices()) {
      s.devices = DeviceList(ReadIota(p.iota_devices()));
    } else {
      s.devices = Ints(p.devices());
    }
    s.last_tile_dim_replicate = p.last_tile_dim_replicate();
    return s;
  }

  static WindowDim ReadWindow(const WindowDimProto& p) {
    WindowDim w;
    if (p.has_size()) w.size = p.size();
    if (p.has_stride()) w.stride = p.stride();
    w.pad_low = p.pad_low();
    w.pad_high = p.pad_high();
    if (p.has_base_dilation()) w.base_dilation = p.base_dilation();
    if (p.has_window_dilation()) w.window_dilation = p.window_dilation();
    return w;
  }

  static ConvDims ReadConv(const ConvDimsProto& p) {
    ConvDims c;
    c.input_batch = p.input_batch();
    if (p.has_input_feature()) c.input_feature = p.input_feature();
    c.input_spatial = Ints(p.input_spatial());
    c.kernel_input_feature = p.kernel_input_feature();
    if (p.has_kernel_output_feature()) c.kernel_output_feature = p.kernel_output_feature();
    c.kernel_spatial = Ints(p.kernel_spatial());
    c.output_batch = p.output_batch();
    if (p.has_output_feature()) c.output_feature = p.output_feature();
    c.output_spatial = Ints(p.output_spatial());
    return c;
  }

  // The instruction `ref` names among the first `defined` instructions of `comp`.
  Instruction* Resolve(const InstructionRefProto& ref, const Computation& comp, size_t defined,
                       const std::string& what) const {
    switch (ref.ref_case()) {
      case InstructionRefProto::kIndex: {
        int64_t k = ref.index();
        if (k < 0 || static_cast<size_t>(k) >= defined) {
          FailHere(what + " index " + std::to_string(k) + " is not an earlier instruction (" +
                   std::to_string(defined) + " defined)");
        }
        return comp.instructions()[k].get();
      }
      case InstructionRefProto::kName: {
        auto it = by_name_.find(ref.name());
        if (it == by_name_.end()) {
          FailHere(what + " names unknown instruction %" + ref.name() + " (not defined earlier in "
                   "computation %" + comp.name() + ")");
        }
        return it->second;
      }
      case InstructionRefProto::REF_NOT_SET:
        break;
    }
    FailHere(what + " names no instruction (neither index nor name set)");
  }

  void ReadComputation(const ComputationProto& p, Computation* comp) {
    by_name_.clear();
    for (int n = 0; n < p.instructions_size(); ++n) {
      const InstructionProto& ip = p.instructions(n);
      where_ = "computation %" + comp->name() + ", instruction #" + std::to_string(n);
      if (ip.name().empty()) FailHere("has no name");
      where_ = "computation %" + comp->name() + ", instruction %" + ip.name();
      auto instr = ReadInstruction(ip, *comp, static_cast<size_t>(n));
      if (!module_->ReserveName(instr->name)) FailHere("name is used twice in the module");
      Instruction* added = comp->AppendNamed(std::move(instr));
      by_name_[added->name] = added;
    }
    if (p.has_root()) {
      where_ = "computation %" + comp->name();
      comp->set_root(Resolve(p.root(), *comp, comp->instructions().size(), "root"));
    }
  }

  std::unique_ptr<Instruction> ReadInstruction(const InstructionProto& p, const Computation& comp,
                                               size_t position) const {
    auto i = std::make_unique<Instruction>();
    i->name = p.name();
    i->opcode = CheckEnum<Opcode>(p.opcode(), OpcodeProto_IsValid, "opcode");
    i->shape = ReadShape(p.shape());
    for (int k = 0; k < p.operands_size(); ++k) {
      i->operands.push_back(
          Resolve(p.operands(k), comp, position, "operand " + std::to_string(k)));
    }
    i->parameter_number = p.parameter_number();
    if (p.has_literal()) i->literal = ReadLiteral(p.literal());
    i->dimensions = Ints(p.dimensions());
    i->slice_starts = Ints(p.slice_starts());
    i->slice_limits = Ints(p.slice_limits());
    i->slice_strides = Ints(p.slice_strides());
    i->slice_sizes = Ints(p.slice_sizes());
    for (const PadDimProto& d : p.padding()) {
      i->padding.push_back({d.low(), d.high(), d.interior()});
    }
    i->dot.lhs_batch = Ints(p.dot().lhs_batch());
    i->dot.rhs_batch = Ints(p.dot().rhs_batch());
    i->dot.lhs_contracting = Ints(p.dot().lhs_contracting());
    i->dot.rhs_contracting = Ints(p.dot().rhs_contracting());
    if (p.has_conv()) i->conv = ReadConv(p.conv());
    for (const WindowDimProto& w : p.window()) i->window.push_back(ReadWindow(w));
    if (p.has_feature_group_count()) i->feature_group_count = p.feature_group_count();
    i->reduce_kind = CheckEnum<ReduceKind>(p.reduce_kind(), ReduceKindProto_IsValid,
                                           "reduce_kind");
    i->comparison = CheckEnum<Comparison>(p.comparison(), ComparisonProto_IsValid, "comparison");
    i->exclusive = p.exclusive();
    i->descending = p.descending();
    i->k = p.k();
    i->seed = p.seed();
    i->rng_low = p.rng_low();
    if (p.has_range_low() != p.has_range_high()) {
      throw Error("instruction '" + i->name + "': range_low and range_high must come together");
    }
    if (p.has_range_low()) i->argument_range = std::make_pair(p.range_low(), p.range_high());
    if (p.has_rng_high()) i->rng_high = p.rng_high();
    i->rng_global_dims = Ints(p.rng_global_dims());
    for (const ReplicaGroupProto& g : p.replica_groups()) {
      i->replica_groups.push_back(Ints(g.partitions()));
    }
    for (const SourceTargetPairProto& pair : p.source_target_pairs()) {
      i->source_target_pairs.emplace_back(pair.source(), pair.target());
    }
    i->split_dimension = p.split_dimension();
    i->concat_dimension = p.concat_dimension();
    i->trip_count = p.trip_count();
    if (!p.body().empty()) {
      i->body = module_->FindComputation(p.body());
      if (!i->body) FailHere("loop body %" + p.body() + " is not a computation of the module");
    }
    i->tuple_index = p.tuple_index();
    i->scope = p.scope();
    i->custom_call_target = p.custom_call_target();
    i->custom_call_flops = p.custom_call_flops();
    if (p.has_sharding()) i->sharding = ReadSharding(p.sharding());
    if (p.has_tiling()) i->tiling = ReadSharding(p.tiling());
    if (p.has_iota_replica_groups()) {
      IotaReplicaGroupList g;
      g.num_groups = p.iota_replica_groups().num_groups();
      g.group_size = p.iota_replica_groups().group_size();
      g.devices = ReadIota(p.iota_replica_groups().devices());
      i->iota_replica_groups = std::move(g);
    }
    return i;
  }

  Module* module_ = nullptr;
  std::string where_;  // "computation %c, instruction %i" for error messages
  std::unordered_map<std::string, Instruction*> by_name_;  // current computation's, so far
};

}  // namespace

std::string ModuleToProtoBytes(const Module& module) {
  ModuleProto p;
  p.set_name(module.name());
  if (module.entry()) p.set_entry(module.entry()->name());
  for (const OutputAlias& a : module.output_aliases()) {
    OutputAliasProto* ap = p.add_output_aliases();
    ap->set_output(a.output);
    ap->set_parameter(a.parameter);
  }
  for (const auto& c : module.computations()) {
    ComputationProto* cp = p.add_computations();
    cp->set_name(c->name());
    std::unordered_map<const Instruction*, int64_t> index;
    for (const auto& i : c->instructions()) {
      ToProto(*i, *c, index, cp->add_instructions());
      index[i.get()] = static_cast<int64_t>(index.size());
    }
    if (const Instruction* root = c->root()) {
      auto it = index.find(root);
      if (it == index.end()) {
        throw Error("computation %" + c->name() + ": root is not an instruction of it");
      }
      cp->mutable_root()->set_index(it->second);
    }
  }
  std::string bytes;
  if (!p.SerializeToString(&bytes)) {
    throw Error("module '" + module.name() + "' cannot be serialized (larger than 2 GiB?)");
  }
  return bytes;
}

std::unique_ptr<Module> ModuleFromProtoBytes(std::string_view bytes) {
  ModuleProto p;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error("module proto: " + std::to_string(bytes.size()) +
                " bytes are not a valid podsim.ir.ModuleProto message");
  }
  std::unique_ptr<Module> module = Reader().Read(p);
  Verify(*module);
  return module;
}

}  // namespace podsim::ir
