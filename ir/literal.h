#pragma once
// A concrete value: an array of a Shape's elements in row-major order, or a tuple of literals.
// Every element is held as a double: exact for f32, bf16, s32 and pred values.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/shape.h"

namespace podsim::ir {

struct Literal {
  Shape shape;
  std::vector<double> values;     // row-major; size == shape.NumElements() for arrays
  std::vector<Literal> elements;  // tuple elements when shape.is_tuple

  Literal() = default;
  Literal(Shape s, std::vector<double> v) : shape(std::move(s)), values(std::move(v)) {}
  static Literal Zeros(const Shape& shape);
  static Literal Scalar(DType t, double v) { return Literal(Shape(t, {}), {v}); }
  static Literal Tuple(std::vector<Literal> elements);

  int64_t NumElements() const { return static_cast<int64_t>(values.size()); }
  double At(const std::vector<int64_t>& index) const;
  bool operator==(const Literal& o) const {
    return shape == o.shape && values == o.values && elements == o.elements;
  }
};

// Rounds v to the nearest value representable in t (round-to-nearest-even for f32 and bf16,
// truncation toward zero for s32 with saturation, v != 0 for pred).
double RoundToDType(double v, DType t);

}  // namespace podsim::ir
