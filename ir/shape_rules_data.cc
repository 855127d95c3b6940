// Shape rules of the data-movement ops (ir/shape_rules.h).

#include <algorithm>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/shape_rules.h"

namespace podsim::ir::internal {

Shape ShapeRules::HandleBroadcast(const Instruction& i) {
  const Checker& c = c_;
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

Shape ShapeRules::HandleReshape(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  const Shape& a = c.Op(0);
  Shape out(a.dtype, i.shape.dims);
  c.Require(out.NumElements() == a.NumElements(),
            "cannot reshape " + a.ToString() + " to " + out.ToString());
  return out;
}

Shape ShapeRules::HandleTranspose(const Instruction& i) {
  const Checker& c = c_;
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

Shape ShapeRules::HandleSlice(const Instruction& i) {
  const Checker& c = c_;
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
    out.dims.push_back((l - s) / st + ((l - s) % st != 0 ? 1 : 0));  // ceil, without overflow
  }
  return out;
}

Shape ShapeRules::HandleDynamicSlice(const Instruction& i) {
  const Checker& c = c_;
  c.Require(!i.operands.empty(), "needs an operand");
  const Shape& a = c.Op(0);
  c.Operands(1 + a.dims.size());
  for (size_t k = 1; k < i.operands.size(); ++k) c.ScalarInteger(k);
  c.Require(i.slice_sizes.size() == a.dims.size(), "needs one slice size per dim");
  for (size_t d = 0; d < a.dims.size(); ++d) {
    c.Require(0 <= i.slice_sizes[d] && i.slice_sizes[d] <= a.dims[d],
              "slice size " + std::to_string(i.slice_sizes[d]) + " exceeds dim " +
                  std::to_string(d));
  }
  return Shape(a.dtype, i.slice_sizes);
}

Shape ShapeRules::HandleDynamicUpdateSlice(const Instruction& i) {
  const Checker& c = c_;
  c.Require(i.operands.size() >= 2, "needs operand and update");
  const Shape& a = c.Op(0);
  const Shape& u = c.Op(1);
  c.Operands(2 + a.dims.size());
  for (size_t k = 2; k < i.operands.size(); ++k) c.ScalarInteger(k);
  c.Require(u.dtype == a.dtype && u.rank() == a.rank(), "update must match operand type/rank");
  for (size_t d = 0; d < a.dims.size(); ++d) {
    c.Require(u.dims[d] <= a.dims[d], "update larger than operand in dim " + std::to_string(d));
  }
  return a;
}

Shape ShapeRules::HandlePad(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(2);
  const Shape& a = c.Op(0);
  const Shape& v = c.Op(1);
  c.Require(v.rank() == 0 && v.dtype == a.dtype, "pad value must be a scalar of the same type");
  c.Require(i.padding.size() == a.dims.size(), "needs low_high_interior for each dim");
  Shape out(a.dtype, {});
  for (size_t d = 0; d < a.dims.size(); ++d) {
    const PadDim& p = i.padding[d];
    c.Require(p.interior >= 0, "interior padding must be >= 0");
    const char* what = "the padded extent";
    const int64_t interior = c.Mul(std::max<int64_t>(a.dims[d] - 1, 0), p.interior, what);
    const int64_t n = c.Add(c.Add(c.Add(a.dims[d], p.low, what), p.high, what), interior, what);
    c.Require(n >= 0, "padding makes dim " + std::to_string(d) + " negative");
    out.dims.push_back(n);
  }
  return out;
}

Shape ShapeRules::HandleConcatenate(const Instruction& i) {
  const Checker& c = c_;
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

Shape ShapeRules::HandleReverse(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  const Shape& a = c.Op(0);
  c.Distinct(i.dimensions, "dimensions");
  for (int64_t d : i.dimensions) c.Dim(d, a.rank(), "reverse dimension");
  return a;
}

Shape ShapeRules::HandleGather(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(2);
  const Shape& a = c.Op(0);
  const Shape& idx = c.Op(1);
  c.Require(IsInteger(idx.dtype), "indices must be integers");
  c.Require(i.dimensions.size() == 1, "needs dimensions={axis}");
  int64_t axis = i.dimensions[0];
  c.Dim(axis, a.rank(), "gather axis");
  Shape out(a.dtype, {});
  out.dims.insert(out.dims.end(), a.dims.begin(), a.dims.begin() + axis);
  out.dims.insert(out.dims.end(), idx.dims.begin(), idx.dims.end());
  out.dims.insert(out.dims.end(), a.dims.begin() + axis + 1, a.dims.end());
  return out;
}

}  // namespace podsim::ir::internal
