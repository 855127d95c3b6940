#include "ir/shape.h"

#include "base/error.h"

namespace podsim::ir {

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.is_tuple = true;
  s.tuple_shapes = std::move(elements);
  return s;
}

int64_t Shape::NumElements() const {
  int64_t n = 0;
  if (is_tuple) {
    for (const Shape& e : tuple_shapes) {
      if (__builtin_add_overflow(n, e.NumElements(), &n)) {
        throw Error("shape " + ToString() + ": its element count overflows int64");
      }
    }
    return n;
  }
  n = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n)) {
      throw Error("shape " + ToString() + ": its element count overflows int64");
    }
  }
  return n;
}

int64_t Shape::ByteSize() const {
  if (is_tuple) {
    int64_t n = 0;
    for (const Shape& e : tuple_shapes) {
      if (__builtin_add_overflow(n, e.ByteSize(), &n)) {
        throw Error("shape " + ToString() + ": its size in bytes overflows int64");
      }
    }
    return n;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(NumElements(), ByteWidth(dtype), &bytes)) {
    throw Error("shape " + ToString() + ": its size in bytes overflows int64");
  }
  return bytes;
}

std::string Shape::ToString() const {
  std::string out;
  if (is_tuple) {
    out = "(";
    for (size_t i = 0; i < tuple_shapes.size(); ++i) {
      if (i) out += ", ";
      out += tuple_shapes[i].ToString();
    }
    return out + ")";
  }
  out = std::string(DTypeName(dtype)) + "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  std::string out = "{";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(dims[i]);
  }
  return out + "}";
}

}  // namespace podsim::ir
