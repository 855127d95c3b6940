#pragma once
// Static shapes: an array of one element type with fixed dims, or a tuple of shapes.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace podsim::ir {

// The most dims a shape may have (XLA's practical limit is far lower); more is rejected by the
// text reader and the verifier, so that nothing recurses or allocates per dim without bound.
inline constexpr int64_t kMaxRank = 64;
// The most levels of tuples around an array shape.
inline constexpr int kMaxShapeDepth = 64;

struct Shape {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;          // array shape; empty = scalar
  bool is_tuple = false;
  std::vector<Shape> tuple_shapes;    // only when is_tuple

  Shape() = default;
  Shape(DType t, std::vector<int64_t> d) : dtype(t), dims(std::move(d)) {}
  static Shape Tuple(std::vector<Shape> elements);

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  // Product of dims (1 for a scalar); for a tuple, the sum over elements. Throws podsim::Error
  // naming the shape when the count does not fit int64.
  int64_t NumElements() const;
  // NumElements * ByteWidth, summed over tuple elements; throws likewise on overflow.
  int64_t ByteSize() const;
  // "f32[8,16]", "pred[]", "(f32[4], s32[])".
  std::string ToString() const;

  bool operator==(const Shape& o) const {
    return is_tuple == o.is_tuple && (is_tuple ? tuple_shapes == o.tuple_shapes
                                               : dtype == o.dtype && dims == o.dims);
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

// Row-major strides of dims (element units).
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);
std::string DimsToString(const std::vector<int64_t>& dims);  // "{1,2,3}"

}  // namespace podsim::ir
