#include "ir/shape_inference.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "base/error.h"
#include "ir/module.h"

namespace podsim::ir {

namespace {

class Checker {
 public:
  explicit Checker(const Instruction& i) : i_(i) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error("%" + i_.name + " (" + std::string(OpcodeName(i_.opcode)) + "): " + what);
  }
  void Require(bool ok, const std::string& what) const {
    if (!ok) Fail(what);
  }
  void Operands(size_t n) const {
    if (i_.operands.size() != n) {
      Fail("expects " + std::to_string(n) + " operand(s), got " +
           std::to_string(i_.operands.size()));
    }
  }
  const Shape& Op(size_t k) const {
    const Shape& s = i_.operands[k]->shape;
    if (s.is_tuple && i_.opcode != Opcode::kGetTupleElement && i_.opcode != Opcode::kTuple &&
        i_.opcode != Opcode::kLoop) {
      Fail("operand " + std::to_string(k) + " (%" + i_.operands[k]->name + ") is a tuple");
    }
    return s;
  }
  void Dim(int64_t d, int64_t rank, const std::string& what) const {
    if (d < 0 || d >= rank) {
      Fail(what + " " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    }
  }
  void Distinct(const std::vector<int64_t>& dims, const std::string& what) const {
    std::set<int64_t> s(dims.begin(), dims.end());
    if (s.size() != dims.size()) Fail(what + " " + DimsToString(dims) + " repeats a dimension");
  }
  void ScalarS32(size_t k) const {
    const Shape& s = Op(k);
    if (s.rank() != 0 || s.dtype != DType::kS32) {
      Fail("operand " + std::to_string(k) + " must be s32[], got " + s.ToString());
    }
  }

 private:
  const Instruction& i_;
};

// Output extent of a windowed dimension (HLO semantics), or -1 if the window does not fit.
int64_t WindowedExtent(int64_t in, const WindowDim& w) {
  int64_t dilated_in = in == 0 ? 0 : (in - 1) * w.base_dilation + 1;
  int64_t padded = dilated_in + w.pad_low + w.pad_high;
  int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
  if (padded < dilated_window) return padded < 0 ? -1 : 0;
  return (padded - dilated_window) / w.stride + 1;
}

void CheckWindow(const Checker& c, const std::vector<WindowDim>& window) {
  for (size_t d = 0; d < window.size(); ++d) {
    const WindowDim& w = window[d];
    c.Require(w.size >= 1 && w.stride >= 1 && w.base_dilation >= 1 && w.window_dilation >= 1,
              "window dim " + std::to_string(d) + ": size, stride and dilations must be >= 1");
  }
}

void CheckReplicaGroups(const Checker& c, const Instruction& i) {
  if (i.iota_replica_groups) {
    const IotaReplicaGroupList& g = *i.iota_replica_groups;
    c.Require(i.replica_groups.empty(), "replica groups given both as a list and as an iota");
    c.Require(g.num_groups >= 1 && g.group_size >= 1 &&
                  g.num_groups * g.group_size == g.devices.size(),
              "replica_groups=" + g.ToString() + ": " + std::to_string(g.num_groups) + " x " +
                  std::to_string(g.group_size) + " does not match the " +
                  std::to_string(g.devices.size()) + " devices");
    return;
  }
  std::set<int64_t> seen;
  size_t size = 0;
  for (size_t g = 0; g < i.replica_groups.size(); ++g) {
    const auto& group = i.replica_groups[g];
    c.Require(!group.empty(), "replica_groups[" + std::to_string(g) + "] is empty");
    if (g == 0) size = group.size();
    c.Require(group.size() == size, "replica groups must all have the same size");
    for (int64_t p : group) {
      c.Require(p >= 0, "replica_groups[" + std::to_string(g) + "] names negative partition " +
                            std::to_string(p));
      c.Require(seen.insert(p).second, "partition " + std::to_string(p) +
                                           " appears twice in replica_groups");
    }
  }
}

// Group size the collective's dims must divide; 0 when groups are empty (all partitions: the
// count is only known at run time).
int64_t GroupSize(const Instruction& i) { return ReplicaGroupSizeOf(i); }

Shape InferUnchecked(const Instruction& i, const Checker& c) {
  const Opcode op = i.opcode;
  if (IsElementwiseUnary(op)) {
    c.Operands(1);
    const Shape& a = c.Op(0);
    if (op == Opcode::kConvert) {
      c.Require(!i.shape.is_tuple, "convert result must be an array");
      return Shape(i.shape.dtype, a.dims);
    }
    if (op != Opcode::kNegate && op != Opcode::kAbs) {
      c.Require(IsFloating(a.dtype), "needs a floating-point operand, got " + a.ToString());
    }
    c.Require(a.dtype != DType::kPred, "does not apply to pred");
    return a;
  }
  if (IsElementwiseBinary(op)) {
    c.Operands(2);
    const Shape& a = c.Op(0);
    const Shape& b = c.Op(1);
    c.Require(a == b, "operand shapes differ: " + a.ToString() + " vs " + b.ToString());
    if (op == Opcode::kCompare) return Shape(DType::kPred, a.dims);
    if (op == Opcode::kAnd || op == Opcode::kOr) {
      c.Require(a.dtype == DType::kPred || a.dtype == DType::kS32, "needs pred or s32 operands");
    } else {
      c.Require(a.dtype != DType::kPred, "does not apply to pred");
    }
    if (op == Opcode::kPower) c.Require(IsFloating(a.dtype), "needs floating-point operands");
    return a;
  }
  switch (op) {
    case Opcode::kParameter:
      c.Operands(0);
      c.Require(i.parameter_number >= 0, "parameter number must be >= 0");
      return i.shape;
    case Opcode::kConstant:
      c.Operands(0);
      c.Require(!i.shape.is_tuple, "constant must be an array");
      c.Require(i.literal.shape == i.shape, "literal shape " + i.literal.shape.ToString() +
                                                 " differs from " + i.shape.ToString());
      c.Require(i.literal.NumElements() == i.shape.NumElements(),
                "literal has " + std::to_string(i.literal.NumElements()) + " values, shape needs " +
                    std::to_string(i.shape.NumElements()));
      return i.shape;
    case Opcode::kIota:
      c.Operands(0);
      c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
      c.Dim(i.dimensions[0], i.shape.rank(), "iota dimension");
      c.Require(i.shape.dtype != DType::kPred, "iota of pred");
      return i.shape;
    case Opcode::kPartitionId:
      c.Operands(0);
      return Shape(DType::kS32, {});
    case Opcode::kRandomUniform: {
      c.Require(IsFloating(i.shape.dtype), "result must be f32 or bf16");
      c.Require(i.rng_low < i.rng_high, "low must be < high");
      const auto& g = i.rng_global_dims;
      c.Require(g.size() == i.shape.dims.size(), "global_dims rank differs from the shape's");
      c.Require(i.operands.empty() || i.operands.size() == g.size(),
                "needs no offsets or one scalar s32 offset per dimension");
      for (size_t k = 0; k < i.operands.size(); ++k) c.ScalarS32(k);
      for (size_t d = 0; d < g.size(); ++d) {
        c.Require(i.shape.dims[d] <= g[d], "dimension " + std::to_string(d) +
                                               " larger than its global extent");
      }
      return i.shape;
    }
    case Opcode::kSelect: {
      c.Operands(3);
      const Shape& p = c.Op(0);
      const Shape& a = c.Op(1);
      c.Require(p.dtype == DType::kPred, "predicate must be pred, got " + p.ToString());
      c.Require(p.dims == a.dims, "predicate dims differ from operand dims");
      c.Require(a == c.Op(2), "on_true and on_false shapes differ");
      return a;
    }
    case Opcode::kBroadcast: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Require(static_cast<int64_t>(i.dimensions.size()) == a.rank(),
                "dimensions must map each of the operand's " + std::to_string(a.rank()) + " dims");
      for (size_t k = 0; k < i.dimensions.size(); ++k) {
        c.Dim(i.dimensions[k], i.shape.rank(), "broadcast dimension");
        c.Require(k == 0 || i.dimensions[k] > i.dimensions[k - 1], "dimensions must increase");
        c.Require(i.shape.dims[i.dimensions[k]] == a.dims[k],
                  "operand dim " + std::to_string(k) + " (" + std::to_string(a.dims[k]) +
                      ") does not match output dim " + std::to_string(i.dimensions[k]));
      }
      return Shape(a.dtype, i.shape.dims);
    }
    case Opcode::kReshape: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      Shape out(a.dtype, i.shape.dims);
      c.Require(out.NumElements() == a.NumElements(),
                "cannot reshape " + a.ToString() + " to " + out.ToString());
      return out;
    }
    case Opcode::kTranspose: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Require(static_cast<int64_t>(i.dimensions.size()) == a.rank(), "permutation rank");
      c.Distinct(i.dimensions, "permutation");
      Shape out(a.dtype, {});
      for (int64_t d : i.dimensions) {
        c.Dim(d, a.rank(), "permutation entry");
        out.dims.push_back(a.dims[d]);
      }
      return out;
    }
    case Opcode::kSlice: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      size_t r = a.dims.size();
      c.Require(i.slice_starts.size() == r && i.slice_limits.size() == r &&
                    i.slice_strides.size() == r,
                "slice needs start:limit:stride for each of " + std::to_string(r) + " dims");
      Shape out(a.dtype, {});
      for (size_t d = 0; d < r; ++d) {
        int64_t s = i.slice_starts[d], l = i.slice_limits[d], st = i.slice_strides[d];
        c.Require(0 <= s && s <= l && l <= a.dims[d] && st >= 1,
                  "bad slice [" + std::to_string(s) + ":" + std::to_string(l) + ":" +
                      std::to_string(st) + "] of dim " + std::to_string(d) + " (size " +
                      std::to_string(a.dims[d]) + ")");
        out.dims.push_back((l - s + st - 1) / st);
      }
      return out;
    }
    case Opcode::kDynamicSlice: {
      c.Require(!i.operands.empty(), "needs an operand");
      const Shape& a = c.Op(0);
      c.Operands(1 + a.dims.size());
      for (size_t k = 1; k < i.operands.size(); ++k) c.ScalarS32(k);
      c.Require(i.slice_sizes.size() == a.dims.size(), "needs one slice size per dim");
      for (size_t d = 0; d < a.dims.size(); ++d) {
        c.Require(0 <= i.slice_sizes[d] && i.slice_sizes[d] <= a.dims[d],
                  "slice size " + std::to_string(i.slice_sizes[d]) + " exceeds dim " +
                      std::to_string(d));
      }
      return Shape(a.dtype, i.slice_sizes);
    }
    case Opcode::kDynamicUpdateSlice: {
      c.Require(i.operands.size() >= 2, "needs operand and update");
      const Shape& a = c.Op(0);
      const Shape& u = c.Op(1);
      c.Operands(2 + a.dims.size());
      for (size_t k = 2; k < i.operands.size(); ++k) c.ScalarS32(k);
      c.Require(u.dtype == a.dtype && u.rank() == a.rank(), "update must match operand type/rank");
      for (size_t d = 0; d < a.dims.size(); ++d) {
        c.Require(u.dims[d] <= a.dims[d], "update larger than operand in dim " + std::to_string(d));
      }
      return a;
    }
    case Opcode::kPad: {
      c.Operands(2);
      const Shape& a = c.Op(0);
      const Shape& v = c.Op(1);
      c.Require(v.rank() == 0 && v.dtype == a.dtype, "pad value must be a scalar of the same type");
      c.Require(i.padding.size() == a.dims.size(), "needs low_high_interior for each dim");
      Shape out(a.dtype, {});
      for (size_t d = 0; d < a.dims.size(); ++d) {
        const PadDim& p = i.padding[d];
        c.Require(p.interior >= 0, "interior padding must be >= 0");
        int64_t n = a.dims[d] + p.low + p.high + std::max<int64_t>(a.dims[d] - 1, 0) * p.interior;
        c.Require(n >= 0, "padding makes dim " + std::to_string(d) + " negative");
        out.dims.push_back(n);
      }
      return out;
    }
    case Opcode::kConcatenate: {
      c.Require(!i.operands.empty(), "needs at least one operand");
      c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
      Shape out = c.Op(0);
      int64_t d = i.dimensions[0];
      c.Dim(d, out.rank(), "concatenate dimension");
      for (size_t k = 1; k < i.operands.size(); ++k) {
        const Shape& b = c.Op(k);
        c.Require(b.dtype == out.dtype && b.rank() == out.rank(), "operand types/ranks differ");
        for (int64_t e = 0; e < out.rank(); ++e) {
          if (e != d) c.Require(b.dims[e] == out.dims[e], "operands differ in dim " +
                                                              std::to_string(e));
        }
        out.dims[d] += b.dims[d];
      }
      return out;
    }
    case Opcode::kReverse: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Distinct(i.dimensions, "dimensions");
      for (int64_t d : i.dimensions) c.Dim(d, a.rank(), "reverse dimension");
      return a;
    }
    case Opcode::kGather: {
      c.Operands(2);
      const Shape& a = c.Op(0);
      const Shape& idx = c.Op(1);
      c.Require(idx.dtype == DType::kS32, "indices must be s32");
      c.Require(i.dimensions.size() == 1, "needs dimensions={axis}");
      int64_t axis = i.dimensions[0];
      c.Dim(axis, a.rank(), "gather axis");
      Shape out(a.dtype, {});
      out.dims.insert(out.dims.end(), a.dims.begin(), a.dims.begin() + axis);
      out.dims.insert(out.dims.end(), idx.dims.begin(), idx.dims.end());
      out.dims.insert(out.dims.end(), a.dims.begin() + axis + 1, a.dims.end());
      return out;
    }
    case Opcode::kDot: {
      c.Operands(2);
      const Shape& a = c.Op(0);
      const Shape& b = c.Op(1);
      const DotDims& dd = i.dot;
      c.Require(a.dtype == b.dtype, "operand types differ");
      c.Require(a.dtype != DType::kPred, "dot of pred");
      c.Require(dd.lhs_batch.size() == dd.rhs_batch.size(), "batch dim counts differ");
      c.Require(dd.lhs_contracting.size() == dd.rhs_contracting.size(),
                "contracting dim counts differ");
      std::vector<int64_t> lhs_used = dd.lhs_batch, rhs_used = dd.rhs_batch;
      lhs_used.insert(lhs_used.end(), dd.lhs_contracting.begin(), dd.lhs_contracting.end());
      rhs_used.insert(rhs_used.end(), dd.rhs_contracting.begin(), dd.rhs_contracting.end());
      c.Distinct(lhs_used, "lhs batch+contracting dims");
      c.Distinct(rhs_used, "rhs batch+contracting dims");
      for (int64_t d : lhs_used) c.Dim(d, a.rank(), "lhs dim");
      for (int64_t d : rhs_used) c.Dim(d, b.rank(), "rhs dim");
      for (size_t k = 0; k < dd.lhs_batch.size(); ++k) {
        c.Require(a.dims[dd.lhs_batch[k]] == b.dims[dd.rhs_batch[k]], "batch dim sizes differ");
      }
      for (size_t k = 0; k < dd.lhs_contracting.size(); ++k) {
        c.Require(a.dims[dd.lhs_contracting[k]] == b.dims[dd.rhs_contracting[k]],
                  "contracting dim sizes differ: " + std::to_string(a.dims[dd.lhs_contracting[k]]) +
                      " vs " + std::to_string(b.dims[dd.rhs_contracting[k]]));
      }
      Shape out(a.dtype, {});
      for (int64_t d : dd.lhs_batch) out.dims.push_back(a.dims[d]);
      for (int64_t d = 0; d < a.rank(); ++d) {
        if (std::find(lhs_used.begin(), lhs_used.end(), d) == lhs_used.end()) {
          out.dims.push_back(a.dims[d]);
        }
      }
      for (int64_t d = 0; d < b.rank(); ++d) {
        if (std::find(rhs_used.begin(), rhs_used.end(), d) == rhs_used.end()) {
          out.dims.push_back(b.dims[d]);
        }
      }
      return out;
    }
    case Opcode::kConvolution: {
      c.Operands(2);
      const Shape& x = c.Op(0);
      const Shape& w = c.Op(1);
      const ConvDims& cd = i.conv;
      size_t ns = cd.input_spatial.size();
      c.Require(x.dtype == w.dtype && x.dtype != DType::kPred, "operand types differ or pred");
      c.Require(cd.kernel_spatial.size() == ns && cd.output_spatial.size() == ns &&
                    i.window.size() == ns,
                "spatial dim counts of input, kernel, output and window differ");
      c.Require(x.rank() == static_cast<int64_t>(ns) + 2 && w.rank() == x.rank(),
                "input and kernel must have rank spatial+2");
      std::vector<int64_t> in_dims = cd.input_spatial, k_dims = cd.kernel_spatial,
                           o_dims = cd.output_spatial;
      in_dims.push_back(cd.input_batch);
      in_dims.push_back(cd.input_feature);
      k_dims.push_back(cd.kernel_input_feature);
      k_dims.push_back(cd.kernel_output_feature);
      o_dims.push_back(cd.output_batch);
      o_dims.push_back(cd.output_feature);
      c.Distinct(in_dims, "input dim labels");
      c.Distinct(k_dims, "kernel dim labels");
      c.Distinct(o_dims, "output dim labels");
      for (int64_t d : in_dims) c.Dim(d, x.rank(), "input dim label");
      for (int64_t d : k_dims) c.Dim(d, w.rank(), "kernel dim label");
      for (int64_t d : o_dims) c.Dim(d, x.rank(), "output dim label");
      CheckWindow(c, i.window);
      int64_t g = i.feature_group_count;
      c.Require(g >= 1, "feature_group_count must be >= 1");
      int64_t in_f = x.dims[cd.input_feature];
      int64_t out_f = w.dims[cd.kernel_output_feature];
      c.Require(in_f % g == 0 && out_f % g == 0,
                "feature counts must divide by feature_group_count");
      c.Require(w.dims[cd.kernel_input_feature] * g == in_f,
                "kernel input features (" + std::to_string(w.dims[cd.kernel_input_feature]) +
                    ") times groups must equal input features (" + std::to_string(in_f) + ")");
      Shape out(x.dtype, std::vector<int64_t>(x.rank(), 0));
      out.dims[cd.output_batch] = x.dims[cd.input_batch];
      out.dims[cd.output_feature] = out_f;
      for (size_t s = 0; s < ns; ++s) {
        c.Require(i.window[s].size == w.dims[cd.kernel_spatial[s]],
                  "window size differs from kernel spatial dim " + std::to_string(s));
        int64_t n = WindowedExtent(x.dims[cd.input_spatial[s]], i.window[s]);
        c.Require(n >= 0, "padding makes spatial dim " + std::to_string(s) + " negative");
        out.dims[cd.output_spatial[s]] = n;
      }
      return out;
    }
    case Opcode::kReduce: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Distinct(i.dimensions, "dimensions");
      for (int64_t d : i.dimensions) c.Dim(d, a.rank(), "reduce dimension");
      if (i.reduce_kind == ReduceKind::kAnd || i.reduce_kind == ReduceKind::kOr) {
        c.Require(a.dtype == DType::kPred, "and/or reductions need pred");
      } else {
        c.Require(a.dtype != DType::kPred, "add/max/min reductions do not apply to pred");
      }
      Shape out(a.dtype, {});
      for (int64_t d = 0; d < a.rank(); ++d) {
        if (std::find(i.dimensions.begin(), i.dimensions.end(), d) == i.dimensions.end()) {
          out.dims.push_back(a.dims[d]);
        }
      }
      return out;
    }
    case Opcode::kArgmax: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
      c.Dim(i.dimensions[0], a.rank(), "argmax dimension");
      c.Require(a.dtype != DType::kPred, "argmax of pred");
      Shape out(DType::kS32, a.dims);
      out.dims.erase(out.dims.begin() + i.dimensions[0]);
      return out;
    }
    case Opcode::kReduceWindow: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Require(i.window.size() == a.dims.size(), "needs one window dim per operand dim");
      c.Require(a.dtype != DType::kPred, "reduce-window of pred");
      CheckWindow(c, i.window);
      Shape out(a.dtype, {});
      for (size_t d = 0; d < a.dims.size(); ++d) {
        int64_t n = WindowedExtent(a.dims[d], i.window[d]);
        c.Require(n >= 0, "padding makes dim " + std::to_string(d) + " negative");
        out.dims.push_back(n);
      }
      return out;
    }
    case Opcode::kCumsum:
    case Opcode::kSort: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
      c.Dim(i.dimensions[0], a.rank(), "dimension");
      c.Require(a.dtype != DType::kPred, "does not apply to pred");
      return a;
    }
    case Opcode::kTopK: {
      c.Operands(1);
      const Shape& a = c.Op(0);
      c.Require(a.rank() >= 1, "needs rank >= 1");
      c.Require(a.dtype != DType::kPred, "top-k of pred");
      c.Require(i.k >= 1 && i.k <= a.dims.back(),
                "k=" + std::to_string(i.k) + " must be in [1, " + std::to_string(a.dims.back()) +
                    "]");
      Shape v(a.dtype, a.dims);
      v.dims.back() = i.k;
      Shape idx(DType::kS32, v.dims);
      return Shape::Tuple({v, idx});
    }
    case Opcode::kAllReduce: {
      c.Operands(1);
      CheckReplicaGroups(c, i);
      return c.Op(0);
    }
    case Opcode::kAllGather: {
      c.Operands(1);
      CheckReplicaGroups(c, i);
      Shape a = c.Op(0);
      c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
      c.Dim(i.dimensions[0], a.rank(), "all-gather dimension");
      int64_t g = GroupSize(i);
      if (g == 0) {
        // All partitions: the result extent fixes the group size.
        c.Require(a.dims[i.dimensions[0]] > 0 && i.shape.rank() == a.rank() &&
                      i.shape.dims[i.dimensions[0]] % a.dims[i.dimensions[0]] == 0,
                  "result dim must be a multiple of the operand dim");
        g = i.shape.dims[i.dimensions[0]] / a.dims[i.dimensions[0]];
      }
      a.dims[i.dimensions[0]] *= g;
      return a;
    }
    case Opcode::kReduceScatter: {
      c.Operands(1);
      CheckReplicaGroups(c, i);
      Shape a = c.Op(0);
      c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
      int64_t d = i.dimensions[0];
      c.Dim(d, a.rank(), "reduce-scatter dimension");
      int64_t g = GroupSize(i);
      if (g == 0) {
        c.Require(i.shape.rank() == a.rank() && i.shape.dims[d] > 0 &&
                      a.dims[d] % i.shape.dims[d] == 0,
                  "operand dim must be a multiple of the result dim");
        g = a.dims[d] / i.shape.dims[d];
      }
      c.Require(a.dims[d] % g == 0, "dim " + std::to_string(d) + " (" + std::to_string(a.dims[d]) +
                                        ") does not divide into " + std::to_string(g) + " blocks");
      a.dims[d] /= g;
      return a;
    }
    case Opcode::kAllToAll: {
      c.Operands(1);
      CheckReplicaGroups(c, i);
      Shape a = c.Op(0);
      c.Dim(i.split_dimension, a.rank(), "split_dimension");
      c.Dim(i.concat_dimension, a.rank(), "concat_dimension");
      int64_t g = GroupSize(i);
      if (g == 0) {
        if (i.split_dimension == i.concat_dimension) return a;
        c.Require(i.shape.rank() == a.rank() && a.dims[i.concat_dimension] > 0 &&
                      i.shape.dims[i.concat_dimension] % a.dims[i.concat_dimension] == 0,
                  "result concat dim must be a multiple of the operand's");
        g = i.shape.dims[i.concat_dimension] / a.dims[i.concat_dimension];
      }
      c.Require(a.dims[i.split_dimension] % g == 0,
                "split dim " + std::to_string(i.split_dimension) + " (" +
                    std::to_string(a.dims[i.split_dimension]) + ") does not divide into " +
                    std::to_string(g) + " pieces");
      a.dims[i.split_dimension] /= g;
      a.dims[i.concat_dimension] *= g;
      return a;
    }
    case Opcode::kCollectivePermute: {
      c.Operands(1);
      std::set<int64_t> srcs, dsts;
      for (const auto& [s, d] : i.source_target_pairs) {
        c.Require(s >= 0 && d >= 0, "negative partition in source_target_pairs");
        c.Require(srcs.insert(s).second, "source " + std::to_string(s) + " appears twice");
        c.Require(dsts.insert(d).second, "target " + std::to_string(d) + " appears twice");
      }
      return c.Op(0);
    }
    case Opcode::kLoop: {
      c.Require(i.body != nullptr, "needs body=");
      c.Require(i.trip_count >= 0, "trip_count must be >= 0");
      std::vector<Instruction*> params = i.body->parameters();
      c.Require(params.size() == i.operands.size() + 1,
                "body %" + i.body->name() + " has " + std::to_string(params.size()) +
                    " parameters, needs iteration + " + std::to_string(i.operands.size()));
      c.Require(params[0]->shape == Shape(DType::kS32, {}),
                "body parameter 0 (iteration) must be s32[]");
      std::vector<Shape> carried;
      for (size_t k = 0; k < i.operands.size(); ++k) {
        c.Require(params[k + 1]->parameter_number == static_cast<int64_t>(k + 1) &&
                      params[k + 1]->shape == i.operands[k]->shape,
                  "body parameter " + std::to_string(k + 1) + " does not match operand " +
                      std::to_string(k));
        carried.push_back(i.operands[k]->shape);
      }
      Shape out = Shape::Tuple(carried);
      const Instruction* root = i.body->root();
      c.Require(root && root->shape == out, "body root must be " + out.ToString());
      return out;
    }
    case Opcode::kTuple: {
      std::vector<Shape> shapes;
      for (const Instruction* o : i.operands) shapes.push_back(o->shape);
      return Shape::Tuple(shapes);
    }
    case Opcode::kAutoToManual:
    case Opcode::kManualToAuto: {
      c.Operands(1);
      const Shape& x = c.Op(0);
      const bool enter = op == Opcode::kAutoToManual;
      c.Require(!i.shape.is_tuple || enter, "result must be an array");
      const Shape full = enter ? x : i.shape;
      c.Require(i.tiling.has_value(), "needs tiling={...}");
      const Sharding& t = *i.tiling;
      c.Require(t.kind == Sharding::Kind::kTiled || t.kind == Sharding::Kind::kReplicated,
                "tiling " + t.ToString() + " must be tiled or replicated");
      const int64_t tile_rank = full.rank() + (t.last_tile_dim_replicate ? 1 : 0);
      c.Require(t.kind != Sharding::Kind::kTiled ||
                    static_cast<int64_t>(t.tile_dims.size()) == tile_rank,
                "tiling " + t.ToString() + " has " + std::to_string(t.tile_dims.size()) +
                    " tile dims, the full shape " + full.ToString() + " needs " +
                    std::to_string(tile_rank));
      for (int64_t d : t.tile_dims) c.Require(d >= 1, "tiling tile dims must be >= 1");
      const Shape shard(full.dtype, t.ShardDims(full.dims));
      if (enter) return shard;
      c.Require(x == shard, "manual region shapes do not match: the operand is " + x.ToString() +
                                ", but the shard of " + full.ToString() + " under " +
                                t.ToString() + " is " + shard.ToString());
      return i.shape;
    }
    case Opcode::kGetTupleElement: {
      c.Operands(1);
      const Shape& t = i.operands[0]->shape;
      c.Require(t.is_tuple, "operand is not a tuple");
      c.Require(i.tuple_index >= 0 && i.tuple_index < static_cast<int64_t>(t.tuple_shapes.size()),
                "index " + std::to_string(i.tuple_index) + " out of range");
      return t.tuple_shapes[i.tuple_index];
    }
    default:
      break;
  }
  c.Fail("no shape rule");
}

}  // namespace

Shape InferShape(const Instruction& instr) {
  Checker c(instr);
  for (size_t k = 0; k < instr.operands.size(); ++k) {
    if (instr.operands[k] == nullptr) c.Fail("operand " + std::to_string(k) + " is missing");
  }
  return InferUnchecked(instr, c);
}

}  // namespace podsim::ir
