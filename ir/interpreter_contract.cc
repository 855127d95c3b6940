// Contractions: dot and convolution, both lowered to Eigen matrix products. Floats (f32, bf16)
// multiply and accumulate in double and round once to the result dtype; s32 multiplies and
// accumulates modulo 2^64 in uint64 and keeps the low 32 bits (exact two's complement wrap).

#include <cstdint>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The scalar type that accumulates a dtype exactly or as wide as possible.
template <typename T>
T ToScalar(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<T>(static_cast<int64_t>(v));
  }
}

template <typename T>
double FromScalar(T v, DType t) {
  if constexpr (std::is_same_v<T, double>) {
    return RoundToDType(v, t);
  } else {
    return WrapS32(static_cast<int64_t>(v));
  }
}

template <typename T>
std::vector<T> ToScalars(const std::vector<double>& v) {
  std::vector<T> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) out[k] = ToScalar<T>(v[k]);
  return out;
}

int64_t Product(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t n = 1;
  for (int64_t d : which) n *= dims[d];
  return n;
}

// Dims of a dot operand of rank `rank` that are neither batch nor contracting, in order.
std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<bool> used(rank, false);
  for (int64_t d : batch) used[d] = true;
  for (int64_t d : contracting) used[d] = true;
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (!used[d]) free.push_back(d);
  }
  return free;
}

// Operands transposed to lhs [batch, m, k] and rhs [batch, k, n] (row-major): for each batch,
// out[b] (m x n) = lhs[b] * rhs[b].
template <typename T>
void DotKernel(const Literal& lhs, const Literal& rhs, int64_t batch, int64_t m, int64_t k,
               int64_t n, Literal& out) {
  const std::vector<T> a = ToScalars<T>(lhs.values);
  const std::vector<T> b = ToScalars<T>(rhs.values);
  RowMatrix<T> c;
  for (int64_t p = 0; p < batch; ++p) {
    Eigen::Map<const RowMatrix<T>> am(a.data() + p * m * k, m, k);
    Eigen::Map<const RowMatrix<T>> bm(b.data() + p * k * n, k, n);
    c.noalias() = am * bm;
    for (int64_t r = 0; r < m * n; ++r) {
      out.values[p * m * n + r] = FromScalar<T>(c.data()[r], out.shape.dtype);
    }
  }
}

Literal Dot(const Instruction& i, const Literal& a, const Literal& b) {
  const DotDims& dd = i.dot;
  const std::vector<int64_t> lhs_free = FreeDims(a.shape.rank(), dd.lhs_batch, dd.lhs_contracting);
  const std::vector<int64_t> rhs_free = FreeDims(b.shape.rank(), dd.rhs_batch, dd.rhs_contracting);
  const int64_t batch = Product(a.shape.dims, dd.lhs_batch);
  const int64_t m = Product(a.shape.dims, lhs_free);
  const int64_t k = Product(a.shape.dims, dd.lhs_contracting);
  const int64_t n = Product(b.shape.dims, rhs_free);
  std::vector<int64_t> lhs_perm = dd.lhs_batch, rhs_perm = dd.rhs_batch;
  lhs_perm.insert(lhs_perm.end(), lhs_free.begin(), lhs_free.end());
  lhs_perm.insert(lhs_perm.end(), dd.lhs_contracting.begin(), dd.lhs_contracting.end());
  rhs_perm.insert(rhs_perm.end(), dd.rhs_contracting.begin(), dd.rhs_contracting.end());
  rhs_perm.insert(rhs_perm.end(), rhs_free.begin(), rhs_free.end());
  const Literal lhs = Transposed(a, lhs_perm);
  const Literal rhs = Transposed(b, rhs_perm);
  // The output is [batch dims, lhs free dims, rhs free dims]: exactly [batch, m, n] row-major.
  Literal out = Literal::Zeros(i.shape);
  if (i.shape.dtype == DType::kS32) {
    DotKernel<uint64_t>(lhs, rhs, batch, m, k, n, out);
  } else {
    DotKernel<double>(lhs, rhs, batch, m, k, n, out);
  }
  return out;
}

// Convolution as im2col + one matrix product per feature group. For output spatial position o
// and kernel tap t along a spatial dim, the tap reads the padded, base-dilated input at
// p = o * stride + t * window_dilation - pad_low; that is input element p / base_dilation
// when p >= 0, p is a multiple of base_dilation and p / base_dilation < input size; otherwise
// it reads a zero. Output feature f belongs to group g = f / (out_features / G) and sees input
// features g * (in_features / G) + c for kernel input feature c.
template <typename T>
void ConvKernel(const Instruction& i, const Literal& x, const Literal& w, Literal& out) {
  const ConvDims& cd = i.conv;
  const size_t ns = cd.input_spatial.size();
  const int64_t groups = i.feature_group_count;
  const int64_t batch = x.shape.dims[cd.input_batch];
  const int64_t cin = w.shape.dims[cd.kernel_input_feature];
  const int64_t cout = w.shape.dims[cd.kernel_output_feature] / groups;
  std::vector<int64_t> out_sp(ns), k_sp(ns);
  for (size_t s = 0; s < ns; ++s) {
    out_sp[s] = out.shape.dims[cd.output_spatial[s]];
    k_sp[s] = w.shape.dims[cd.kernel_spatial[s]];
  }
  int64_t positions = 1, taps = 1;
  for (size_t s = 0; s < ns; ++s) {
    positions *= out_sp[s];
    taps *= k_sp[s];
  }
  const std::vector<int64_t> xs = Strides(x.shape.dims);
  const std::vector<int64_t> ws = Strides(w.shape.dims);
  const std::vector<int64_t> os = Strides(out.shape.dims);

  // Input spatial offset (in elements of x) read by (position, tap), or -1 for a zero.
  std::vector<int64_t> source(positions * taps, -1);
  // Output spatial offset (in elements of out) of each position.
  std::vector<int64_t> out_offset(positions, 0);
  // Kernel spatial offset (in elements of w) of each tap.
  std::vector<int64_t> tap_offset(taps, 0);
  ForEachIndex(k_sp, [&](const std::vector<int64_t>& t, int64_t tap) {
    for (size_t s = 0; s < ns; ++s) tap_offset[tap] += t[s] * ws[cd.kernel_spatial[s]];
  });
  ForEachIndex(out_sp, [&](const std::vector<int64_t>& o, int64_t pos) {
    for (size_t s = 0; s < ns; ++s) out_offset[pos] += o[s] * os[cd.output_spatial[s]];
    ForEachIndex(k_sp, [&](const std::vector<int64_t>& t, int64_t tap) {
      int64_t offset = 0;
      for (size_t s = 0; s < ns; ++s) {
        const WindowDim& wd = i.window[s];
        const int64_t p = o[s] * wd.stride + t[s] * wd.window_dilation - wd.pad_low;
        const int64_t q = p / wd.base_dilation;
        if (p < 0 || p % wd.base_dilation != 0 || q >= x.shape.dims[cd.input_spatial[s]]) return;
        offset += q * xs[cd.input_spatial[s]];
      }
      source[pos * taps + tap] = offset;
    });
  });

  const std::vector<T> xv = ToScalars<T>(x.values);
  const std::vector<T> wv = ToScalars<T>(w.values);
  const int64_t rows = batch * positions, cols = cin * taps;
  RowMatrix<T> patches(rows, cols), kernel(cols, cout), result;
  for (int64_t g = 0; g < groups; ++g) {
    patches.setZero();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t pos = 0; pos < positions; ++pos) {
        for (int64_t tap = 0; tap < taps; ++tap) {
          const int64_t src = source[pos * taps + tap];
          if (src < 0) continue;
          for (int64_t c = 0; c < cin; ++c) {
            patches(b * positions + pos, c * taps + tap) =
                xv[b * xs[cd.input_batch] + (g * cin + c) * xs[cd.input_feature] + src];
          }
        }
      }
    }
    for (int64_t c = 0; c < cin; ++c) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        for (int64_t f = 0; f < cout; ++f) {
          kernel(c * taps + tap, f) = wv[c * ws[cd.kernel_input_feature] +
                                         (g * cout + f) * ws[cd.kernel_output_feature] +
                                         tap_offset[tap]];
        }
      }
    }
    result.noalias() = patches * kernel;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t pos = 0; pos < positions; ++pos) {
        for (int64_t f = 0; f < cout; ++f) {
          const int64_t dst = b * os[cd.output_batch] + (g * cout + f) * os[cd.output_feature] +
                              out_offset[pos];
          out.values[dst] = FromScalar<T>(result(b * positions + pos, f), out.shape.dtype);
        }
      }
    }
  }
}

}  // namespace

Literal LocalEvaluator::HandleDot(const Instruction& i) { return Dot(i, Op(0), Op(1)); }

Literal LocalEvaluator::HandleConvolution(const Instruction& i) {
  Literal out = Literal::Zeros(i.shape);
  if (i.shape.dtype == DType::kS32) {
    ConvKernel<uint64_t>(i, Op(0), Op(1), out);
  } else {
    ConvKernel<double>(i, Op(0), Op(1), out);
  }
  return out;
}

}  // namespace podsim::ir::interp
