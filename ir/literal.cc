#include "ir/literal.h"

#include <algorithm>
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

// Rounds to a binary float format with `mantissa` stored bits and exponent bias `bias`, to
// nearest even, with gradual underflow. Values beyond `max_finite` become infinity, or NaN for a
// format without infinities (f8e4m3fn), as a conversion does in XLA.
double RoundToFloat(double v, int mantissa, int bias, double max_finite, bool has_inf) {
  if (std::isnan(v) || std::isinf(v) || v == 0) {
    if (std::isinf(v) && !has_inf) return std::numeric_limits<double>::quiet_NaN();
    return v;
  }
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const int min_exp = 1 - bias;  // exponent of the smallest normal, as 2^min_exp
  const int exp = std::max(e - 1, min_exp);
  const double quantum = std::ldexp(1.0, exp - mantissa);
  const double r = std::nearbyint(v / quantum) * quantum;
  if (std::fabs(r) > max_finite) {
    if (!has_inf) return std::numeric_limits<double>::quiet_NaN();
    return r > 0 ? std::numeric_limits<double>::infinity()
                 : -std::numeric_limits<double>::infinity();
  }
  return r;
}

// Truncates toward zero and saturates to [lo, hi] (NaN becomes 0), as a float-to-integer
// convert does.
double ToInteger(double v, double lo, double hi) {
  if (std::isnan(v)) return 0;
  double tr = std::trunc(v) + 0.0;  // + 0.0: -0.5 truncates to -0, an integer has no -0
  return tr > hi ? hi : (tr < lo ? lo : tr);
}

template <typename T>
double IntegerRange(double v) {
  return ToInteger(v, static_cast<double>(std::numeric_limits<T>::min()),
                   static_cast<double>(std::numeric_limits<T>::max()));
}

}  // namespace

double RoundToDType(double v, DType t) {
  switch (t) {
    case DType::kF32: return static_cast<double>(static_cast<float>(v));
    case DType::kBF16: return static_cast<double>(RoundToBf16(static_cast<float>(v)));
    case DType::kF64: return v;
    // f16: 10 mantissa bits, bias 15, largest 65504. f8e4m3fn: 3 bits, bias 7, largest 448,
    // no infinity. f8e5m2: 2 bits, bias 15, largest 57344.
    case DType::kF16: return RoundToFloat(v, 10, 15, 65504.0, true);
    case DType::kF8E4M3FN: return RoundToFloat(v, 3, 7, 448.0, false);
    case DType::kF8E5M2: return RoundToFloat(v, 2, 15, 57344.0, true);
    case DType::kS8: return IntegerRange<int8_t>(v);
    case DType::kU8: return IntegerRange<uint8_t>(v);
    case DType::kS16: return IntegerRange<int16_t>(v);
    case DType::kU16: return IntegerRange<uint16_t>(v);
    case DType::kS32: return IntegerRange<int32_t>(v);
    case DType::kU32: return IntegerRange<uint32_t>(v);
    // 64-bit integers are held as doubles: exact to 2^53.
    case DType::kS64: return IntegerRange<int64_t>(v);
    case DType::kU64: return IntegerRange<uint64_t>(v);
    case DType::kPred: return v != 0 ? 1.0 : 0.0;
    case DType::kToken: return 0;
  }
  return v;
}

}  // namespace podsim::ir
