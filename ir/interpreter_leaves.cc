// Leaves: constant, iota, partition-id, the counter-based random-uniform, and RandomArguments.

#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ir/interpreter.h"
#include "ir/interpreter_internal.h"

namespace podsim::ir {

namespace interp {

namespace {

// The SplitMix64 finalizer: a bijective 64-bit mix.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The neighbour of f32 or bf16 value v (already representable in t) one ulp up or down.
double StepInDType(double v, DType t, bool up) {
  const float inf = std::numeric_limits<float>::infinity();
  const float f = static_cast<float>(v);
  if (t == DType::kF32) return std::nextafter(f, up ? inf : -inf);
  // bf16: a float whose low 16 bits are zero; step its upper half by one.
  if (f == 0) return std::bit_cast<float>(up ? 0x00010000u : 0x80010000u);
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits = ((f > 0) == up) ? bits + 0x10000u : bits - 0x10000u;
  return std::bit_cast<float>(bits);
}

// The largest value of dtype t strictly below `high`.
double LargestBelow(double high, DType t) {
  double v = RoundToDType(high, t);
  while (v >= high) v = StepInDType(v, t, /*up=*/false);
  return v;
}

// The smallest value of dtype t at or above `low`.
double SmallestFrom(double low, DType t) {
  double v = RoundToDType(low, t);
  while (v < low) v = StepInDType(v, t, /*up=*/true);
  return v;
}

}  // namespace

double UniformHash(uint64_t seed, uint64_t index) {
  // Two rounds of mixing keyed by the seed: distinct (seed, index) pairs give independent-looking
  // 64-bit words; the top 53 bits make a double in [0, 1).
  uint64_t h = Mix64(index * 0x9e3779b97f4a7c15ull + Mix64(seed + 0x632be59bd9b4e019ull));
  h = Mix64(h ^ seed);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

Literal LocalEvaluator::HandleConstant(const Instruction& i) {
  Literal out = i.literal;
  for (double& v : out.values) v = RoundToDType(v, i.shape.dtype);
  return out;
}

Literal LocalEvaluator::HandleIota(const Instruction& i) {
  Literal out = Literal::Zeros(i.shape);
  const int64_t d = i.dimensions.at(0);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    out.values[linear] = RoundToDType(static_cast<double>(idx[d]), i.shape.dtype);
  });
  return out;
}

Literal LocalEvaluator::HandlePartitionId(const Instruction& i) {
  return Literal::Scalar(DType::kS32, static_cast<double>(partition_id_));
}

Literal LocalEvaluator::HandleRandomUniform(const Instruction& i) {
  const Operands& ops = ops_;
  // Global index of local element idx: offset + idx in rng_global_dims, linearized
  // row-major. Offsets are not clamped: a padded shard draws deterministic values past the
  // global extent.
  const size_t rank = i.shape.dims.size();
  if (i.rng_global_dims.size() != rank) Fail(i, "rng_global_dims rank differs from shape");
  std::vector<int64_t> offsets(rank, 0);
  for (size_t d = 0; d < ops.size() && d < rank; ++d) {
    offsets[d] = static_cast<int64_t>(ops[d]->values.at(0));
  }
  const std::vector<int64_t> gstrides = Strides(i.rng_global_dims);
  const DType t = i.shape.dtype;
  const double low = i.rng_low, high = i.rng_high;
  const double top = LargestBelow(high, t);
  const double bottom = SmallestFrom(low, t);
  Literal out = Literal::Zeros(i.shape);
  ForEachIndex(i.shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t global = 0;
    for (size_t d = 0; d < rank; ++d) global += (offsets[d] + idx[d]) * gstrides[d];
    const double u = UniformHash(i.seed, static_cast<uint64_t>(global));
    double v = RoundToDType(low + u * (high - low), t);
    // Rounding to t must not leave [low, high).
    if (v >= high) v = top;
    if (v < low) v = bottom;
    out.values[linear] = v;
  });
  return out;
}

}  // namespace interp

namespace {

// Fills `shape` (recursively for tuples) from stream `stream` of `seed`.
Literal RandomLiteral(const Shape& shape, uint64_t seed, uint64_t stream,
                      std::optional<std::pair<double, double>> range) {
  if (shape.is_tuple) {
    std::vector<Literal> elements;
    for (size_t k = 0; k < shape.tuple_shapes.size(); ++k) {
      elements.push_back(
          RandomLiteral(shape.tuple_shapes[k], seed, stream * 1000003u + k + 1, std::nullopt));
    }
    return Literal::Tuple(std::move(elements));
  }
  // A per-parameter seed: the stream hashed into the user's seed.
  const uint64_t s = seed ^ (stream * 0xd1b54a32d192ed03ull + 0x8cb92ba72f3d8dd7ull);
  Literal out = Literal::Zeros(shape);
  for (int64_t n = 0; n < out.NumElements(); ++n) {
    const double u = interp::UniformHash(s, static_cast<uint64_t>(n));
    double v = 0;
    switch (shape.dtype) {
      case DType::kF32:
      case DType::kBF16:
      case DType::kF16:
      case DType::kF64:
        if (range) {
          v = RoundToDType(range->first + (range->second - range->first) * u, shape.dtype);
          if (v >= range->second || v < range->first) v = range->first;  // rounded out
        } else {
          v = RoundToDType(-1.0 + 2.0 * u, shape.dtype);
          if (v >= 1.0) v = RoundToDType(1.0 - 1.0 / 256, shape.dtype);  // below 1 in f32, bf16
        }
        break;
      case DType::kS32:
        if (range) {
          const double lo = std::ceil(range->first), span = std::ceil(range->second) - lo;
          v = span >= 1 ? lo + std::floor(u * span) : lo;
        } else {
          v = std::floor(u * 8);
        }
        break;
      case DType::kPred:
        v = u < 0.5 ? 0 : 1;
        break;
      default:  // not interpretable: EntryOf has refused the module before any value is drawn
        v = 0;
        break;
    }
    out.values[n] = v;
  }
  return out;
}

}  // namespace

std::vector<Literal> RandomArguments(const Module& module, uint64_t seed) {
  std::vector<Literal> args;
  if (module.entry() == nullptr) return args;
  for (const Instruction* p : module.entry()->parameters()) {
    args.push_back(RandomLiteral(p->shape, seed, static_cast<uint64_t>(p->parameter_number),
                                 p->argument_range));
  }
  return args;
}

}  // namespace podsim::ir
