// Shape rules of contractions, reductions and scans (ir/shape_rules.h).

#include <algorithm>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/shape_rules.h"

namespace podsim::ir::internal {

Shape ShapeRules::HandleDot(const Instruction& i) {
  const Checker& c = c_;
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

Shape ShapeRules::HandleConvolution(const Instruction& i) {
  const Checker& c = c_;
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
  c.Require(c.Mul(w.dims[cd.kernel_input_feature], g, "kernel input features x feature groups") == in_f,
            "kernel input features (" + std::to_string(w.dims[cd.kernel_input_feature]) +
                ") times groups must equal input features (" + std::to_string(in_f) + ")");
  Shape out(x.dtype, std::vector<int64_t>(x.rank(), 0));
  out.dims[cd.output_batch] = x.dims[cd.input_batch];
  out.dims[cd.output_feature] = out_f;
  for (size_t s = 0; s < ns; ++s) {
    c.Require(i.window[s].size == w.dims[cd.kernel_spatial[s]],
              "window size differs from kernel spatial dim " + std::to_string(s));
    int64_t n = WindowedExtent(c, x.dims[cd.input_spatial[s]], i.window[s]);
    c.Require(n >= 0, "padding makes spatial dim " + std::to_string(s) + " negative");
    out.dims[cd.output_spatial[s]] = n;
  }
  return out;
}

Shape ShapeRules::HandleReduce(const Instruction& i) {
  const Checker& c = c_;
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

Shape ShapeRules::HandleArgmax(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  const Shape& a = c.Op(0);
  c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
  c.Dim(i.dimensions[0], a.rank(), "argmax dimension");
  c.Require(a.dtype != DType::kPred, "argmax of pred");
  Shape out(DType::kS32, a.dims);
  out.dims.erase(out.dims.begin() + i.dimensions[0]);
  return out;
}

Shape ShapeRules::HandleReduceWindow(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  const Shape& a = c.Op(0);
  c.Require(i.window.size() == a.dims.size(), "needs one window dim per operand dim");
  c.Require(a.dtype != DType::kPred, "reduce-window of pred");
  CheckWindow(c, i.window);
  Shape out(a.dtype, {});
  for (size_t d = 0; d < a.dims.size(); ++d) {
    int64_t n = WindowedExtent(c, a.dims[d], i.window[d]);
    c.Require(n >= 0, "padding makes dim " + std::to_string(d) + " negative");
    out.dims.push_back(n);
  }
  return out;
}

Shape ShapeRules::CumsumOrSort(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  const Shape& a = c.Op(0);
  c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
  c.Dim(i.dimensions[0], a.rank(), "dimension");
  c.Require(a.dtype != DType::kPred, "does not apply to pred");
  return a;
}

Shape ShapeRules::HandleTopK(const Instruction& i) {
  const Checker& c = c_;
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

}  // namespace podsim::ir::internal
