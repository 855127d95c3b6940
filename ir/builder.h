#pragma once
// Builds instructions into a computation, reading like model code:
//   Builder b(module.AddComputation("main", /*is_entry=*/true));
//   auto* x = b.Parameter(0, Shape(DType::kF32, {G, S, M}), "x");
//   auto* logits = b.Einsum("GSM,ME->GSE", x, wg);
// Every call infers and checks the result shape (throws podsim::Error naming the instruction)
// and tags the instruction with the current name scope.

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/module.h"

namespace podsim::ir {

class Builder {
 public:
  explicit Builder(Computation* computation) : comp_(computation) {}
  Computation* computation() const { return comp_; }

  // Name scope for instructions built from now on ("" = none).
  const std::string& scope() const { return scope_; }
  void set_scope(std::string scope) { scope_ = std::move(scope); }
  // Sets the scope for its lifetime and restores the previous one after.
  class ScopeGuard {
   public:
    ScopeGuard(Builder& b, std::string scope) : b_(b), saved_(b.scope()) {
      b.set_scope(std::move(scope));
    }
    ~ScopeGuard() { b_.set_scope(saved_); }
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;

   private:
    Builder& b_;
    std::string saved_;
  };

  // Finishes `instr` (shape inference when `infer_shape`, scope, parent) and appends it.
  Instruction* Add(std::unique_ptr<Instruction> instr, bool infer_shape = true);

  Instruction* Parameter(int64_t number, const Shape& shape, const std::string& name = "");
  Instruction* Constant(Literal literal);
  Instruction* ConstantScalar(DType dtype, double value);
  Instruction* Iota(const Shape& shape, int64_t dimension);
  Instruction* PartitionId();
  // Uniform in [low, high); offsets (one scalar s32 per dim, or none) place this tensor inside
  // global_dims (empty = shape.dims).
  Instruction* RandomUniform(const Shape& shape, uint64_t seed, double low = 0.0,
                             double high = 1.0, std::vector<Instruction*> offsets = {},
                             std::vector<int64_t> global_dims = {});

  Instruction* Unary(Opcode op, Instruction* x);
  Instruction* Neg(Instruction* x) { return Unary(Opcode::kNegate, x); }
  Instruction* Exp(Instruction* x) { return Unary(Opcode::kExp, x); }
  Instruction* Log(Instruction* x) { return Unary(Opcode::kLog, x); }
  Instruction* Sqrt(Instruction* x) { return Unary(Opcode::kSqrt, x); }
  Instruction* Rsqrt(Instruction* x) { return Unary(Opcode::kRsqrt, x); }
  Instruction* Tanh(Instruction* x) { return Unary(Opcode::kTanh, x); }
  Instruction* Abs(Instruction* x) { return Unary(Opcode::kAbs, x); }
  Instruction* Convert(Instruction* x, DType to);

  Instruction* Binary(Opcode op, Instruction* a, Instruction* b);
  Instruction* Add(Instruction* a, Instruction* b) { return Binary(Opcode::kAdd, a, b); }
  Instruction* Sub(Instruction* a, Instruction* b) { return Binary(Opcode::kSubtract, a, b); }
  Instruction* Mul(Instruction* a, Instruction* b) { return Binary(Opcode::kMultiply, a, b); }
  Instruction* Div(Instruction* a, Instruction* b) { return Binary(Opcode::kDivide, a, b); }
  Instruction* Max(Instruction* a, Instruction* b) { return Binary(Opcode::kMaximum, a, b); }
  Instruction* Min(Instruction* a, Instruction* b) { return Binary(Opcode::kMinimum, a, b); }
  Instruction* Pow(Instruction* a, Instruction* b) { return Binary(Opcode::kPower, a, b); }
  Instruction* And(Instruction* a, Instruction* b) { return Binary(Opcode::kAnd, a, b); }
  Instruction* Or(Instruction* a, Instruction* b) { return Binary(Opcode::kOr, a, b); }
  Instruction* Compare(Instruction* a, Instruction* b, Comparison direction);
  Instruction* Select(Instruction* pred, Instruction* on_true, Instruction* on_false);

  // operand dim i -> output dim dims[i].
  Instruction* Broadcast(Instruction* x, std::vector<int64_t> out_dims, std::vector<int64_t> dims);
  // A scalar broadcast to shape `out_dims`.
  Instruction* BroadcastScalar(Instruction* scalar, std::vector<int64_t> out_dims);
  // `value` in every element of an array of `like`'s shape and type (a scalar constant,
  // broadcast unless `like` is a scalar).
  Instruction* Full(const Shape& like, double value);
  Instruction* Zeros(const Shape& like) { return Full(like, 0.0); }
  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims);
  Instruction* Transpose(Instruction* x, std::vector<int64_t> permutation);
  Instruction* Slice(Instruction* x, std::vector<int64_t> starts, std::vector<int64_t> limits,
                     std::vector<int64_t> strides = {});
  Instruction* DynamicSlice(Instruction* x, std::vector<Instruction*> starts,
                            std::vector<int64_t> sizes);
  Instruction* DynamicUpdateSlice(Instruction* x, Instruction* update,
                                  std::vector<Instruction*> starts);
  Instruction* Pad(Instruction* x, Instruction* value, std::vector<PadDim> padding);
  Instruction* Concatenate(std::vector<Instruction*> xs, int64_t dimension);
  Instruction* Reverse(Instruction* x, std::vector<int64_t> dims);
  Instruction* Gather(Instruction* x, Instruction* indices, int64_t axis);

  Instruction* Dot(Instruction* a, Instruction* b, DotDims dims);
  // Einsum over two operands with single-letter labels, e.g. "GSEC,GSM->EGCM". Labels in both
  // operands and the output are batch dims, in both operands only are contracted, in one
  // operand and the output are free, in one operand only are summed first. Lowers to reduce /
  // dot / transpose.
  Instruction* Einsum(std::string_view spec, Instruction* a, Instruction* b);
  Instruction* Convolution(Instruction* x, Instruction* kernel, ConvDims dims,
                           std::vector<WindowDim> window, int64_t feature_group_count = 1);
  Instruction* Reduce(Instruction* x, std::vector<int64_t> dims, ReduceKind kind);
  Instruction* Argmax(Instruction* x, int64_t dimension);
  Instruction* ReduceWindow(Instruction* x, std::vector<WindowDim> window, ReduceKind kind);
  Instruction* Cumsum(Instruction* x, int64_t dimension, bool exclusive = false);
  Instruction* Sort(Instruction* x, int64_t dimension, bool descending = false);
  Instruction* TopK(Instruction* x, int64_t k);  // tuple (values, s32 indices)

  // Collectives. Empty `groups` means one group of all partitions, whose size must then be
  // given as `num_partitions` wherever the result shape depends on it.
  using Groups = std::vector<std::vector<int64_t>>;
  Instruction* AllReduce(Instruction* x, ReduceKind kind, Groups groups = {});
  Instruction* AllGather(Instruction* x, int64_t dimension, Groups groups,
                         int64_t num_partitions = 0);
  Instruction* ReduceScatter(Instruction* x, int64_t dimension, ReduceKind kind, Groups groups,
                             int64_t num_partitions = 0);
  Instruction* AllToAll(Instruction* x, int64_t split_dimension, int64_t concat_dimension,
                        Groups groups, int64_t num_partitions = 0);
  // The same over replica groups in the compact iota form (ir/iota.h). Templates only so that
  // a braced `{}` still means the explicit Groups above.
  template <std::same_as<IotaReplicaGroupList> G>
  Instruction* AllReduce(Instruction* x, ReduceKind kind, const G& groups) {
    return IotaCollective(Opcode::kAllReduce, x, groups, kind);
  }
  template <std::same_as<IotaReplicaGroupList> G>
  Instruction* AllGather(Instruction* x, int64_t dimension, const G& groups) {
    return IotaCollective(Opcode::kAllGather, x, groups, ReduceKind::kAdd, dimension);
  }
  template <std::same_as<IotaReplicaGroupList> G>
  Instruction* ReduceScatter(Instruction* x, int64_t dimension, ReduceKind kind, const G& groups) {
    return IotaCollective(Opcode::kReduceScatter, x, groups, kind, dimension);
  }
  template <std::same_as<IotaReplicaGroupList> G>
  Instruction* AllToAll(Instruction* x, int64_t split_dimension, int64_t concat_dimension,
                        const G& groups) {
    return IotaCollective(Opcode::kAllToAll, x, groups, ReduceKind::kAdd, split_dimension,
                          concat_dimension);
  }
  Instruction* CollectivePermute(Instruction* x,
                                 std::vector<std::pair<int64_t, int64_t>> source_target_pairs);

  // A manual region's boundaries (ir/instruction.h): x's shard under `tiling`, and the tensor
  // of `full_dims` that the per-partition `y`s tile.
  Instruction* AutoToManual(Instruction* x, Sharding tiling);
  Instruction* ManualToAuto(Instruction* y, Sharding tiling, std::vector<int64_t> full_dims);

  Instruction* Loop(std::vector<Instruction*> carried, Computation* body, int64_t trip_count);
  Instruction* Tuple(std::vector<Instruction*> xs);
  Instruction* GetTupleElement(Instruction* t, int64_t index);

 private:
  std::unique_ptr<Instruction> New(Opcode op, std::vector<Instruction*> operands);
  // A collective over iota groups; `dim` is the dimension (all-gather, reduce-scatter) or the
  // split dimension (all-to-all), `dim2` the concat dimension.
  Instruction* IotaCollective(Opcode op, Instruction* x, const IotaReplicaGroupList& groups,
                              ReduceKind kind, int64_t dim = 0, int64_t dim2 = 0);

  Computation* comp_;
  std::string scope_;
};

}  // namespace podsim::ir
