#include "ir/literal.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "base/memory.h"

namespace podsim::ir {

Literal Literal::Zeros(const Shape& shape) {
  Literal l;
  l.shape = shape;
  if (shape.is_tuple) {
    for (const Shape& e : shape.tuple_shapes) l.elements.push_back(Zeros(e));
  } else {
    const int64_t n = shape.NumElements();
    // The interpreter holds every element as a double, whatever the dtype.
    RequireMemory(static_cast<double>(n) * sizeof(double),
                  "a " + shape.ToString() + " value (" + std::to_string(n) +
                      " elements held as doubles by the interpreter)");
    l.values.assign(static_cast<size_t>(n), 0.0);
  }
  return l;
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  Literal l;
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape);
  l.shape = Shape::Tuple(std::move(shapes));
  l.elements = std::move(elements);
  return l;
}

double Literal::At(const std::vector<int64_t>& index) const {
  int64_t linear = 0;
  for (size_t i = 0; i < index.size(); ++i) linear = linear * shape.dims[i] + index[i];
  return values[linear];
}

namespace {

float RoundToBf16(float f) {
  if (std::isnan(f)) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  // Round to nearest even on the 16 dropped bits.
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  bits &= 0xffff0000u;
  return std::bit_cast<float>(bits);
}

}  // namespace

double RoundToDType(double v, DType t) {
  switch (t) {
    case DType::kF32: return static_cast<double>(static_cast<float>(v));
    case DType::kBF16: return static_cast<double>(RoundToBf16(static_cast<float>(v)));
    case DType::kS32: {
      if (std::isnan(v)) return 0;
      double tr = std::trunc(v) + 0.0;  // + 0.0: -0.5 truncates to -0, an s32 has no -0
      constexpr double kMax = std::numeric_limits<int32_t>::max();
      constexpr double kMin = std::numeric_limits<int32_t>::min();
      return tr > kMax ? kMax : (tr < kMin ? kMin : tr);
    }
    case DType::kPred: return v != 0 ? 1.0 : 0.0;
  }
  return v;
}

}  // namespace podsim::ir
