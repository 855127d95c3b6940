#include "ir/builder.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "ir/shape_inference.h"

namespace podsim::ir {

std::unique_ptr<Instruction> Builder::New(Opcode op, std::vector<Instruction*> operands) {
  auto i = std::make_unique<Instruction>();
  i->opcode = op;
  i->operands = std::move(operands);
  return i;
}

Instruction* Builder::Add(std::unique_ptr<Instruction> instr, bool infer_shape) {
  for (size_t k = 0; k < instr->operands.size(); ++k) {
    const Instruction* o = instr->operands[k];
    if (o == nullptr || o->parent != comp_) {
      throw Error(std::string(OpcodeName(instr->opcode)) + ": operand " + std::to_string(k) +
                  " is not an instruction of computation %" + comp_->name());
    }
  }
  if (instr->scope.empty()) instr->scope = scope_;
  // Name it first so that shape errors can name it.
  Module* m = comp_->parent();
  instr->name = m->UniqueName(instr->name.empty() ? std::string(OpcodeName(instr->opcode))
                                                  : instr->name);
  if (infer_shape) instr->shape = InferShape(*instr);
  return comp_->AppendNamed(std::move(instr));
}

Instruction* Builder::Parameter(int64_t number, const Shape& shape, const std::string& name) {
  auto i = New(Opcode::kParameter, {});
  i->parameter_number = number;
  i->shape = shape;
  i->name = name;
  return Add(std::move(i), /*infer_shape=*/false);
}

Instruction* Builder::Constant(Literal literal) {
  auto i = New(Opcode::kConstant, {});
  i->shape = literal.shape;
  i->literal = std::move(literal);
  return Add(std::move(i));
}

Instruction* Builder::ConstantScalar(DType dtype, double value) {
  return Constant(Literal::Scalar(dtype, RoundToDType(value, dtype)));
}

Instruction* Builder::Iota(const Shape& shape, int64_t dimension) {
  auto i = New(Opcode::kIota, {});
  i->shape = shape;
  i->dimensions = {dimension};
  return Add(std::move(i));
}

Instruction* Builder::PartitionId() { return Add(New(Opcode::kPartitionId, {})); }

Instruction* Builder::RandomUniform(const Shape& shape, uint64_t seed, double low, double high,
                                    std::vector<Instruction*> offsets,
                                    std::vector<int64_t> global_dims) {
  auto i = New(Opcode::kRandomUniform, std::move(offsets));
  i->shape = shape;
  i->seed = seed;
  i->rng_low = low;
  i->rng_high = high;
  i->rng_global_dims = global_dims.empty() ? shape.dims : std::move(global_dims);
  return Add(std::move(i));
}

Instruction* Builder::Unary(Opcode op, Instruction* x) { return Add(New(op, {x})); }

Instruction* Builder::Convert(Instruction* x, DType to) {
  auto i = New(Opcode::kConvert, {x});
  i->shape = Shape(to, {});
  return Add(std::move(i));
}

Instruction* Builder::Binary(Opcode op, Instruction* a, Instruction* b) {
  return Add(New(op, {a, b}));
}

Instruction* Builder::Compare(Instruction* a, Instruction* b, Comparison direction) {
  auto i = New(Opcode::kCompare, {a, b});
  i->comparison = direction;
  return Add(std::move(i));
}

Instruction* Builder::Select(Instruction* pred, Instruction* on_true, Instruction* on_false) {
  return Add(New(Opcode::kSelect, {pred, on_true, on_false}));
}

Instruction* Builder::Broadcast(Instruction* x, std::vector<int64_t> out_dims,
                                std::vector<int64_t> dims) {
  auto i = New(Opcode::kBroadcast, {x});
  i->shape = Shape(x->shape.dtype, std::move(out_dims));
  i->dimensions = std::move(dims);
  return Add(std::move(i));
}

Instruction* Builder::Full(const Shape& like, double value) {
  Instruction* c = ConstantScalar(like.dtype, value);
  return like.dims.empty() ? c : BroadcastScalar(c, like.dims);
}

Instruction* Builder::BroadcastScalar(Instruction* scalar, std::vector<int64_t> out_dims) {
  return Broadcast(scalar, std::move(out_dims), {});
}

Instruction* Builder::Reshape(Instruction* x, std::vector<int64_t> dims) {
  auto i = New(Opcode::kReshape, {x});
  i->shape = Shape(x->shape.dtype, std::move(dims));
  return Add(std::move(i));
}

Instruction* Builder::Transpose(Instruction* x, std::vector<int64_t> permutation) {
  auto i = New(Opcode::kTranspose, {x});
  i->dimensions = std::move(permutation);
  return Add(std::move(i));
}

Instruction* Builder::Slice(Instruction* x, std::vector<int64_t> starts,
                            std::vector<int64_t> limits, std::vector<int64_t> strides) {
  auto i = New(Opcode::kSlice, {x});
  if (strides.empty()) strides.assign(starts.size(), 1);
  i->slice_starts = std::move(starts);
  i->slice_limits = std::move(limits);
  i->slice_strides = std::move(strides);
  return Add(std::move(i));
}

Instruction* Builder::DynamicSlice(Instruction* x, std::vector<Instruction*> starts,
                                   std::vector<int64_t> sizes) {
  std::vector<Instruction*> ops = {x};
  ops.insert(ops.end(), starts.begin(), starts.end());
  auto i = New(Opcode::kDynamicSlice, std::move(ops));
  i->slice_sizes = std::move(sizes);
  return Add(std::move(i));
}

Instruction* Builder::DynamicUpdateSlice(Instruction* x, Instruction* update,
                                         std::vector<Instruction*> starts) {
  std::vector<Instruction*> ops = {x, update};
  ops.insert(ops.end(), starts.begin(), starts.end());
  return Add(New(Opcode::kDynamicUpdateSlice, std::move(ops)));
}

Instruction* Builder::Pad(Instruction* x, Instruction* value, std::vector<PadDim> padding) {
  auto i = New(Opcode::kPad, {x, value});
  i->padding = std::move(padding);
  return Add(std::move(i));
}

Instruction* Builder::Concatenate(std::vector<Instruction*> xs, int64_t dimension) {
  auto i = New(Opcode::kConcatenate, std::move(xs));
  i->dimensions = {dimension};
  return Add(std::move(i));
}

Instruction* Builder::Reverse(Instruction* x, std::vector<int64_t> dims) {
  auto i = New(Opcode::kReverse, {x});
  i->dimensions = std::move(dims);
  return Add(std::move(i));
}

Instruction* Builder::Gather(Instruction* x, Instruction* indices, int64_t axis) {
  auto i = New(Opcode::kGather, {x, indices});
  i->dimensions = {axis};
  return Add(std::move(i));
}

Instruction* Builder::Dot(Instruction* a, Instruction* b, DotDims dims) {
  auto i = New(Opcode::kDot, {a, b});
  i->dot = std::move(dims);
  return Add(std::move(i));
}

Instruction* Builder::Einsum(std::string_view spec, Instruction* a, Instruction* b) {
  const std::string text(spec);
  auto fail = [&](const std::string& what) -> void {
    throw Error("einsum \"" + text + "\": " + what);
  };
  size_t comma = text.find(',');
  size_t arrow = text.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) {
    fail("expected the form \"AB,BC->AC\"");
  }
  std::string la = text.substr(0, comma);
  std::string lb = text.substr(comma + 1, arrow - comma - 1);
  std::string lo = text.substr(arrow + 2);
  auto check_labels = [&](const std::string& l, const Instruction* x, const char* what) {
    if (x && static_cast<int64_t>(l.size()) != x->shape.rank()) {
      fail(std::string(what) + " has " + std::to_string(l.size()) + " labels but %" + x->name +
           " has rank " + std::to_string(x->shape.rank()));
    }
    for (size_t p = 0; p < l.size(); ++p) {
      if (!std::isalpha(static_cast<unsigned char>(l[p]))) fail("labels must be letters");
      if (l.find(l[p], p + 1) != std::string::npos) {
        fail(std::string("label ") + l[p] + " repeats in " + what);
      }
    }
  };
  check_labels(la, a, "lhs");
  check_labels(lb, b, "rhs");
  check_labels(lo, nullptr, "output");
  for (char ch : lo) {
    if (la.find(ch) == std::string::npos && lb.find(ch) == std::string::npos) {
      fail(std::string("output label ") + ch + " is in neither operand");
    }
  }
  // Sum away labels that appear in one operand only and not in the output.
  auto sum_unique = [&](Instruction* x, std::string& labels, const std::string& other) {
    std::vector<int64_t> dims;
    std::string kept;
    for (size_t p = 0; p < labels.size(); ++p) {
      char ch = labels[p];
      if (other.find(ch) == std::string::npos && lo.find(ch) == std::string::npos) {
        dims.push_back(static_cast<int64_t>(p));
      } else {
        kept += ch;
      }
    }
    if (dims.empty()) return x;
    labels = kept;
    return Reduce(x, dims, ReduceKind::kAdd);
  };
  a = sum_unique(a, la, lb);
  b = sum_unique(b, lb, la);
  DotDims dd;
  std::string dot_labels;
  for (size_t p = 0; p < la.size(); ++p) {
    size_t q = lb.find(la[p]);
    if (q == std::string::npos) continue;
    if (lo.find(la[p]) != std::string::npos) {
      dd.lhs_batch.push_back(static_cast<int64_t>(p));
      dd.rhs_batch.push_back(static_cast<int64_t>(q));
      dot_labels += la[p];
    } else {
      dd.lhs_contracting.push_back(static_cast<int64_t>(p));
      dd.rhs_contracting.push_back(static_cast<int64_t>(q));
    }
  }
  for (char ch : la) {
    if (lb.find(ch) == std::string::npos) dot_labels += ch;
  }
  for (char ch : lb) {
    if (la.find(ch) == std::string::npos) dot_labels += ch;
  }
  Instruction* d = Dot(a, b, dd);
  if (dot_labels == lo) return d;
  std::vector<int64_t> perm;
  for (char ch : lo) perm.push_back(static_cast<int64_t>(dot_labels.find(ch)));
  return Transpose(d, perm);
}

Instruction* Builder::Convolution(Instruction* x, Instruction* kernel, ConvDims dims,
                                  std::vector<WindowDim> window, int64_t feature_group_count) {
  auto i = New(Opcode::kConvolution, {x, kernel});
  i->conv = std::move(dims);
  i->window = std::move(window);
  i->feature_group_count = feature_group_count;
  return Add(std::move(i));
}

Instruction* Builder::Reduce(Instruction* x, std::vector<int64_t> dims, ReduceKind kind) {
  auto i = New(Opcode::kReduce, {x});
  i->dimensions = std::move(dims);
  i->reduce_kind = kind;
  return Add(std::move(i));
}

Instruction* Builder::Argmax(Instruction* x, int64_t dimension) {
  auto i = New(Opcode::kArgmax, {x});
  i->dimensions = {dimension};
  return Add(std::move(i));
}

Instruction* Builder::ReduceWindow(Instruction* x, std::vector<WindowDim> window,
                                   ReduceKind kind) {
  auto i = New(Opcode::kReduceWindow, {x});
  i->window = std::move(window);
  i->reduce_kind = kind;
  return Add(std::move(i));
}

Instruction* Builder::Cumsum(Instruction* x, int64_t dimension, bool exclusive) {
  auto i = New(Opcode::kCumsum, {x});
  i->dimensions = {dimension};
  i->exclusive = exclusive;
  return Add(std::move(i));
}

Instruction* Builder::Sort(Instruction* x, int64_t dimension, bool descending) {
  auto i = New(Opcode::kSort, {x});
  i->dimensions = {dimension};
  i->descending = descending;
  return Add(std::move(i));
}

Instruction* Builder::TopK(Instruction* x, int64_t k) {
  auto i = New(Opcode::kTopK, {x});
  i->k = k;
  return Add(std::move(i));
}

namespace {

// For an all-partitions collective, the result shape carries the group size: set it so that
// shape inference can read it.
void PresetResultDim(Instruction& i, int64_t dim, int64_t extent) {
  i.shape = i.operands[0]->shape;
  if (dim >= 0 && dim < i.shape.rank()) i.shape.dims[dim] = extent;
}

}  // namespace

Instruction* Builder::AllReduce(Instruction* x, ReduceKind kind, Groups groups) {
  auto i = New(Opcode::kAllReduce, {x});
  i->reduce_kind = kind;
  i->replica_groups = std::move(groups);
  return Add(std::move(i));
}

Instruction* Builder::AutoToManual(Instruction* x, Sharding tiling) {
  auto i = New(Opcode::kAutoToManual, {x});
  i->tiling = std::move(tiling);
  i->sharding = Sharding::Manual();
  return Add(std::move(i));
}

Instruction* Builder::ManualToAuto(Instruction* y, Sharding tiling,
                                   std::vector<int64_t> full_dims) {
  auto i = New(Opcode::kManualToAuto, {y});
  i->tiling = std::move(tiling);
  i->shape = Shape(y ? y->shape.dtype : DType::kF32, std::move(full_dims));
  return Add(std::move(i));
}

Instruction* Builder::IotaCollective(Opcode op, Instruction* x,
                                     const IotaReplicaGroupList& groups, ReduceKind kind,
                                     int64_t dim, int64_t dim2) {
  auto i = New(op, {x});
  i->reduce_kind = kind;
  i->iota_replica_groups = groups;
  if (op == Opcode::kAllGather || op == Opcode::kReduceScatter) i->dimensions = {dim};
  if (op == Opcode::kAllToAll) {
    i->split_dimension = dim;
    i->concat_dimension = dim2;
  }
  return Add(std::move(i));
}

Instruction* Builder::AllGather(Instruction* x, int64_t dimension, Groups groups,
                                int64_t num_partitions) {
  auto i = New(Opcode::kAllGather, {x});
  i->dimensions = {dimension};
  i->replica_groups = std::move(groups);
  if (i->replica_groups.empty()) {
    if (num_partitions < 1) throw Error("all-gather over all partitions needs num_partitions");
    if (dimension >= 0 && dimension < x->shape.rank()) {
      PresetResultDim(*i, dimension, x->shape.dims[dimension] * num_partitions);
    }
  }
  return Add(std::move(i));
}

Instruction* Builder::ReduceScatter(Instruction* x, int64_t dimension, ReduceKind kind,
                                    Groups groups, int64_t num_partitions) {
  auto i = New(Opcode::kReduceScatter, {x});
  i->dimensions = {dimension};
  i->reduce_kind = kind;
  i->replica_groups = std::move(groups);
  if (i->replica_groups.empty()) {
    if (num_partitions < 1) throw Error("reduce-scatter over all partitions needs num_partitions");
    if (dimension >= 0 && dimension < x->shape.rank()) {
      if (x->shape.dims[dimension] % num_partitions != 0) {
        throw Error("reduce-scatter: dim " + std::to_string(dimension) + " (" +
                    std::to_string(x->shape.dims[dimension]) + ") does not divide into " +
                    std::to_string(num_partitions) + " blocks");
      }
      PresetResultDim(*i, dimension, x->shape.dims[dimension] / num_partitions);
    }
  }
  return Add(std::move(i));
}

Instruction* Builder::AllToAll(Instruction* x, int64_t split_dimension, int64_t concat_dimension,
                               Groups groups, int64_t num_partitions) {
  auto i = New(Opcode::kAllToAll, {x});
  i->split_dimension = split_dimension;
  i->concat_dimension = concat_dimension;
  i->replica_groups = std::move(groups);
  if (i->replica_groups.empty()) {
    if (num_partitions < 1) throw Error("all-to-all over all partitions needs num_partitions");
    if (concat_dimension >= 0 && concat_dimension < x->shape.rank()) {
      PresetResultDim(*i, concat_dimension, x->shape.dims[concat_dimension] * num_partitions);
    }
  }
  return Add(std::move(i));
}

Instruction* Builder::CollectivePermute(
    Instruction* x, std::vector<std::pair<int64_t, int64_t>> source_target_pairs) {
  auto i = New(Opcode::kCollectivePermute, {x});
  i->source_target_pairs = std::move(source_target_pairs);
  return Add(std::move(i));
}

Instruction* Builder::Loop(std::vector<Instruction*> carried, Computation* body,
                           int64_t trip_count) {
  auto i = New(Opcode::kLoop, std::move(carried));
  i->body = body;
  i->trip_count = trip_count;
  return Add(std::move(i));
}

Instruction* Builder::Tuple(std::vector<Instruction*> xs) {
  return Add(New(Opcode::kTuple, std::move(xs)));
}

Instruction* Builder::GetTupleElement(Instruction* t, int64_t index) {
  auto i = New(Opcode::kGetTupleElement, {t});
  i->tuple_index = index;
  return Add(std::move(i));
}

}  // namespace podsim::ir
