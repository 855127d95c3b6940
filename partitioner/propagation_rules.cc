#include "partitioner/propagation_rules.h"

#include <algorithm>

#include "ir/visitor.h"
#include "partitioner/sharding_transforms.h"
#include "partitioner/sharding_util.h"

namespace podsim::partitioner::internal {

namespace {

using ir::Opcode;

OperandLinks Identity(int64_t rank) {
  OperandLinks l;
  for (int64_t d = 0; d < rank; ++d) l.links.push_back({d, d, false});
  return l;
}

// Identity on every dim except `skip` (dims that lose or change their index space).
OperandLinks IdentityExcept(int64_t rank, const std::vector<int64_t>& skip) {
  OperandLinks l;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(skip.begin(), skip.end(), d) == skip.end()) l.links.push_back({d, d, false});
  }
  return l;
}

OperandLinks Uninformative() {
  OperandLinks l;
  l.informative = false;
  return l;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool TrivialWindow(const ir::WindowDim& w) {
  return w.size == 1 && w.stride == 1 && w.pad_low == 0 && w.pad_high == 0 &&
         w.base_dilation == 1 && w.window_dilation == 1;
}

// How each operand's dims link to the result's: one handler per op (ir::ConstVisitor).
class LinkVisitor : public ir::ConstVisitor<OperandLinks> {
 public:
  LinkVisitor(const Instruction& i, int64_t k) : i_(i), k_(k) {}

  OperandLinks Visit() { return ir::Accept<OperandLinks>(i_, *this); }

  // Leaves (rng offsets are scalars) and tuple plumbing (propagation.cc). auto-to-manual /
  // manual-to-auto are boundaries: the manual side neither gives nor takes shardings; their
  // tilings are candidates in propagation.cc.
  OperandLinks DefaultAction(const Instruction&) override { return Uninformative(); }
  OperandLinks HandleElementwise(const Instruction&) override { return Elementwise(); }
  OperandLinks HandleBroadcast(const Instruction&) override { return Broadcast(); }
  OperandLinks HandleReshape(const Instruction&) override { return Reshape(); }
  OperandLinks HandleTranspose(const Instruction&) override { return Transpose(); }
  OperandLinks HandleSlice(const Instruction&) override { return Slice(); }
  OperandLinks HandleDynamicSlice(const Instruction&) override { return DynamicSlice(); }
  OperandLinks HandleDynamicUpdateSlice(const Instruction&) override {
    return DynamicUpdateSlice();
  }
  OperandLinks HandlePad(const Instruction&) override { return Pad(); }
  OperandLinks HandleConcatenate(const Instruction&) override { return Concatenate(); }
  OperandLinks HandleReverse(const Instruction&) override { return Identity(OperandRank()); }
  OperandLinks HandleCumsum(const Instruction&) override { return Identity(OperandRank()); }
  OperandLinks HandleAllReduce(const Instruction&) override { return Identity(OperandRank()); }
  OperandLinks HandleCollectivePermute(const Instruction&) override {
    return Identity(OperandRank());
  }
  OperandLinks HandleGather(const Instruction&) override { return Gather(); }
  OperandLinks HandleDot(const Instruction&) override { return Dot(); }
  OperandLinks HandleConvolution(const Instruction&) override { return Convolution(); }
  OperandLinks HandleReduce(const Instruction&) override { return Reduce(i_.dimensions); }
  OperandLinks HandleArgmax(const Instruction&) override { return Reduce(i_.dimensions); }
  OperandLinks HandleReduceWindow(const Instruction&) override { return ReduceWindow(); }
  OperandLinks HandleSort(const Instruction&) override {
    return IdentityExcept(OperandRank(), i_.dimensions);
  }
  OperandLinks HandleTopK(const Instruction&) override {
    return IdentityExcept(OperandRank(), {OperandRank() - 1});
  }
  OperandLinks HandleAllGather(const Instruction&) override {
    return IdentityExcept(OperandRank(), i_.dimensions);
  }
  OperandLinks HandleReduceScatter(const Instruction&) override {
    return IdentityExcept(OperandRank(), i_.dimensions);
  }
  OperandLinks HandleAllToAll(const Instruction&) override {
    return IdentityExcept(OperandRank(), {i_.split_dimension, i_.concat_dimension});
  }

 private:
  int64_t OperandRank() const { return i_.operands[k_]->shape.rank(); }

  OperandLinks Elementwise() {
    if (OperandRank() != i_.shape.rank()) return Uninformative();
    return Identity(OperandRank());
  }
  OperandLinks Broadcast() {
    OperandLinks l;
    for (size_t d = 0; d < i_.dimensions.size(); ++d) {
      l.links.push_back({static_cast<int64_t>(d), i_.dimensions[d], false});
    }
    return l;
  }
  OperandLinks Reshape() {
    OperandLinks l;
    l.reshape = true;
    return l;
  }
  OperandLinks Transpose() {
    OperandLinks l;
    for (size_t r = 0; r < i_.dimensions.size(); ++r) {
      l.links.push_back({i_.dimensions[r], static_cast<int64_t>(r), false});
    }
    return l;
  }
  OperandLinks Slice() {
    OperandLinks l;
    const auto& dims = i_.operands[0]->shape.dims;
    for (int64_t d = 0; d < OperandRank(); ++d) {
      const bool full = i_.slice_starts[d] == 0 && i_.slice_limits[d] == dims[d] &&
                        i_.slice_strides[d] == 1;
      l.links.push_back({d, d, !full});
    }
    return l;
  }
  OperandLinks DynamicSlice() {
    if (k_ != 0) return Uninformative();
    OperandLinks l;
    for (int64_t d = 0; d < OperandRank(); ++d) {
      if (i_.slice_sizes[d] == i_.operands[0]->shape.dims[d]) l.links.push_back({d, d, false});
    }
    return l;
  }
  OperandLinks DynamicUpdateSlice() {
    if (k_ == 0) return Identity(OperandRank());
    if (k_ != 1) return Uninformative();
    OperandLinks l;
    for (int64_t d = 0; d < OperandRank(); ++d) {
      if (i_.operands[1]->shape.dims[d] == i_.shape.dims[d]) l.links.push_back({d, d, false});
    }
    return l;
  }
  OperandLinks Pad() {
    if (k_ != 0) return Uninformative();
    OperandLinks l;
    for (int64_t d = 0; d < OperandRank(); ++d) {
      const ir::PadDim& p = i_.padding[d];
      l.links.push_back({d, d, p.low != 0 || p.high != 0 || p.interior != 0});
    }
    return l;
  }
  OperandLinks Concatenate() {
    OperandLinks l;
    for (int64_t d = 0; d < OperandRank(); ++d) l.links.push_back({d, d, d == i_.dimensions[0]});
    return l;
  }
  OperandLinks Gather() {
    const int64_t axis = i_.dimensions[0];
    OperandLinks l;
    if (k_ == 0) {
      const int64_t idx_rank = i_.operands[1]->shape.rank();
      for (int64_t d = 0; d < OperandRank(); ++d) {
        if (d < axis) l.links.push_back({d, d, false});
        if (d > axis) l.links.push_back({d, d - 1 + idx_rank, false});
      }
    } else {
      for (int64_t e = 0; e < OperandRank(); ++e) l.links.push_back({e, axis + e, false});
    }
    return l;
  }
  // Output dims: batch (in lhs_batch order), lhs free, rhs free (each in increasing order).
  OperandLinks Dot() {
    const ir::DotDims& dd = i_.dot;
    const auto& batch = k_ == 0 ? dd.lhs_batch : dd.rhs_batch;
    const auto& contracting = k_ == 0 ? dd.lhs_contracting : dd.rhs_contracting;
    OperandLinks l;
    int64_t out = 0;
    for (int64_t d : batch) l.links.push_back({d, out++, false});
    if (k_ == 1) {  // skip the lhs free dims
      const int64_t lhs_rank = i_.operands[0]->shape.rank();
      out += lhs_rank - static_cast<int64_t>(dd.lhs_batch.size() + dd.lhs_contracting.size());
    }
    for (int64_t d = 0; d < OperandRank(); ++d) {
      if (!Contains(batch, d) && !Contains(contracting, d)) l.links.push_back({d, out++, false});
    }
    return l;
  }
  OperandLinks Convolution() {
    const ir::ConvDims& cd = i_.conv;
    OperandLinks l;
    if (k_ == 0) {
      l.links.push_back({cd.input_batch, cd.output_batch, false});
      for (size_t s = 0; s < cd.input_spatial.size(); ++s) {
        // A window wider than the output (a weight gradient: the adjoint as the kernel, the
        // kernel's taps as the output) sums over the input rather than sliding along it: an
        // input split becomes a partial sum (handlers_window.cc), not a split output.
        if (i_.window[s].size > i_.shape.dims[cd.output_spatial[s]]) continue;
        const bool windowed = !TrivialWindow(i_.window[s]);
        l.links.push_back({cd.input_spatial[s], cd.output_spatial[s], windowed});
      }
    } else {
      l.links.push_back({cd.kernel_output_feature, cd.output_feature, false});
    }
    return l;
  }
  OperandLinks Reduce(const std::vector<int64_t>& reduced) {
    OperandLinks l;
    int64_t out = 0;
    for (int64_t d = 0; d < OperandRank(); ++d) {
      if (!Contains(reduced, d)) l.links.push_back({d, out++, false});
    }
    return l;
  }
  OperandLinks ReduceWindow() {
    OperandLinks l;
    for (int64_t d = 0; d < OperandRank(); ++d) {
      l.links.push_back({d, d, !TrivialWindow(i_.window[d])});
    }
    return l;
  }

  const Instruction& i_;
  const int64_t k_;
};

// Whether tiles `t` may cross a link between extents a and b.
bool Carries(const DimLink& link, int64_t t, int64_t a, int64_t b, const RuleOptions& options) {
  if (!link.windowed || t == 1) return true;
  return options.spatial_partitioning && t <= a && t <= b;
}

std::vector<int64_t> ArrayDims(const Instruction& instr) {
  if (instr.opcode == Opcode::kTopK) {
    std::vector<int64_t> dims = instr.operands[0]->shape.dims;
    dims.back() = instr.k;
    return dims;
  }
  return instr.shape.dims;
}

}  // namespace

OperandLinks LinksOf(const Instruction& instr, int64_t k) { return LinkVisitor(instr, k).Visit(); }

std::vector<std::pair<int64_t, int64_t>> SiblingLinks(const Instruction& instr, int64_t k,
                                                      int64_t j) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (k == j || k > 1 || j > 1) return pairs;
  if (instr.opcode == Opcode::kDot) {
    const ir::DotDims& dd = instr.dot;
    for (size_t b = 0; b < dd.lhs_batch.size(); ++b) {
      pairs.push_back({dd.lhs_batch[b], dd.rhs_batch[b]});
    }
    for (size_t c = 0; c < dd.lhs_contracting.size(); ++c) {
      pairs.push_back({dd.lhs_contracting[c], dd.rhs_contracting[c]});
    }
  } else if (instr.opcode == Opcode::kConvolution && instr.feature_group_count == 1) {
    pairs.push_back({instr.conv.input_feature, instr.conv.kernel_input_feature});
  } else {
    return pairs;
  }
  if (k == 1) {
    for (auto& p : pairs) std::swap(p.first, p.second);
  }
  return pairs;
}

int64_t ResultRank(const Instruction& instr) {
  return static_cast<int64_t>(ArrayDims(instr).size());
}

std::optional<Sharding> Forward(const Instruction& instr, int64_t k, const Sharding& operand,
                                const RuleOptions& options) {
  const Instruction& op = *instr.operands[k];
  if (op.shape.is_tuple || (instr.shape.is_tuple && instr.opcode != Opcode::kTopK)) {
    return std::nullopt;
  }
  const OperandLinks l = LinksOf(instr, k);
  if (!l.informative) return std::nullopt;
  const std::vector<int64_t> out_dims = ArrayDims(instr);
  if (l.reshape) return ReshapeSharding(operand, op.shape.dims, out_dims);
  const std::vector<int64_t> tiles = TensorTileDims(operand, op.shape.rank());
  std::vector<int64_t> source(out_dims.size(), -1);
  for (const DimLink& link : l.links) {
    if (Carries(link, tiles[link.operand_dim], op.shape.dims[link.operand_dim],
                out_dims[link.result_dim], options)) {
      source[link.result_dim] = link.operand_dim;
    }
  }
  return MapTileDims(operand, op.shape.rank(), source);
}

std::optional<Sharding> Backward(const Instruction& instr, int64_t k, const Sharding& result,
                                 const RuleOptions& options) {
  const Instruction& op = *instr.operands[k];
  if (op.shape.is_tuple || (instr.shape.is_tuple && instr.opcode != Opcode::kTopK)) {
    return std::nullopt;
  }
  const OperandLinks l = LinksOf(instr, k);
  if (!l.informative) return Sharding::Replicated();
  const std::vector<int64_t> out_dims = ArrayDims(instr);
  if (l.reshape) return ReshapeSharding(result, out_dims, op.shape.dims);
  const std::vector<int64_t> tiles = TensorTileDims(result, static_cast<int64_t>(out_dims.size()));
  std::vector<int64_t> source(op.shape.rank(), -1);
  for (const DimLink& link : l.links) {
    if (Carries(link, tiles[link.result_dim], op.shape.dims[link.operand_dim],
                out_dims[link.result_dim], options)) {
      source[link.operand_dim] = link.result_dim;
    }
  }
  return MapTileDims(result, static_cast<int64_t>(out_dims.size()), source);
}

std::optional<Sharding> Sideways(const Instruction& instr, int64_t k, int64_t j,
                                 const Sharding& sibling) {
  const auto pairs = SiblingLinks(instr, k, j);
  if (pairs.empty()) return std::nullopt;
  std::vector<int64_t> source(instr.operands[k]->shape.rank(), -1);
  for (const auto& [dk, dj] : pairs) source[dk] = dj;
  return MapTileDims(sibling, instr.operands[j]->shape.rank(), source);
}

}  // namespace podsim::partitioner::internal
