// Interpreter: dot and convolution. Expected values are derived by hand in the comments.

#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::BF16;
using testing::F32;
using testing::InterpFixture;
using testing::S32;

DotDims MatMulDims() {
  DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return d;
}

TEST_CASE("interpreter: dot as a matrix product") {
  InterpFixture f;
  f.b.Dot(f.Param(0, DType::kF32, {2, 2}), f.Param(1, DType::kF32, {2, 2}), MatMulDims());
  // [[1,2],[3,4]] . [[5,6],[7,8]] = [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]] = [[19,22],[43,50]].
  CHECK(f.Run({F32({2, 2}, {1, 2, 3, 4}), F32({2, 2}, {5, 6, 7, 8})}) ==
        F32({2, 2}, {19, 22, 43, 50}));
}

TEST_CASE("interpreter: dot of s32 is exact") {
  InterpFixture f;
  f.b.Dot(f.Param(0, DType::kS32, {2, 2}), f.Param(1, DType::kS32, {2, 2}), MatMulDims());
  CHECK(f.Run({S32({2, 2}, {1, 2, 3, 4}), S32({2, 2}, {5, 6, 7, 8})}) ==
        S32({2, 2}, {19, 22, 43, 50}));
}

TEST_CASE("interpreter: dot with batch and contracting dims in any position") {
  InterpFixture f;
  // lhs L[k,b,m], rhs R[b,k]; out[b,m] = sum_k L[k,b,m] * R[b,k].
  DotDims d;
  d.lhs_batch = {1};
  d.rhs_batch = {0};
  d.lhs_contracting = {0};
  d.rhs_contracting = {1};
  f.b.Dot(f.Param(0, DType::kF32, {2, 2, 2}), f.Param(1, DType::kF32, {2, 2}), d);
  // L[k,b,m] = 4k + 2b + m + 1; R = [[1,10],[100,1000]].
  // out[0,0] = L[0,0,0]*1 + L[1,0,0]*10 = 1 + 50 = 51; out[0,1] = 2 + 60 = 62;
  // out[1,0] = L[0,1,0]*100 + L[1,1,0]*1000 = 300 + 7000 = 7300; out[1,1] = 400 + 8000 = 8400.
  CHECK(f.Run({F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), F32({2, 2}, {1, 10, 100, 1000})}) ==
        F32({2, 2}, {51, 62, 7300, 8400}));
}

TEST_CASE("interpreter: dot output is batch, lhs free, rhs free") {
  InterpFixture f;
  // lhs [m=2,k=3], rhs [n=2,k=3] contracting the last dims: out[m,n] = a[m,:] . b[n,:].
  DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {1};
  f.b.Dot(f.Param(0, DType::kF32, {2, 3}), f.Param(1, DType::kF32, {2, 3}), d);
  // a = [[1,2,3],[4,5,6]], b = [[1,0,1],[0,1,0]]: [[1+3, 2], [4+6, 5]] = [[4,2],[10,5]].
  CHECK(f.Run({F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({2, 3}, {1, 0, 1, 0, 1, 0})}) ==
        F32({2, 2}, {4, 2, 10, 5}));
}

TEST_CASE("interpreter: dot with two contracting dims and a batch of rhs-free dims") {
  InterpFixture f;
  // lhs [k0=2,k1=2] (a vector over two dims), rhs [k0=2,k1=2,n=2]: out[n] = sum a[i,j] r[i,j,n].
  DotDims d;
  d.lhs_contracting = {0, 1};
  d.rhs_contracting = {0, 1};
  f.b.Dot(f.Param(0, DType::kF32, {2, 2}), f.Param(1, DType::kF32, {2, 2, 2}), d);
  // a = [[1,2],[3,4]], r[i,j,n] = 4i + 2j + n: out[0] = 1*0 + 2*2 + 3*4 + 4*6 = 40;
  // out[1] = 1*1 + 2*3 + 3*5 + 4*7 = 50.
  CHECK(f.Run({F32({2, 2}, {1, 2, 3, 4}), F32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}) ==
        F32({2}, {40, 50}));
}

TEST_CASE("interpreter: bf16 dot accumulates wider than bf16 and rounds once") {
  InterpFixture f;
  f.b.Dot(f.Param(0, DType::kBF16, {1, 3}), f.Param(1, DType::kBF16, {3, 1}), MatMulDims());
  // [1, 2^-8, 2^-8] . [1,1,1] = 1 + 2^-7 = 1.0078125, a bf16 value. Accumulating in bf16 would
  // give 1 (1 + 2^-8 ties to 1, twice).
  CHECK(f.Run({BF16({1, 3}, {1, 0x1p-8, 0x1p-8}), BF16({3, 1}, {1, 1, 1})}) ==
        BF16({1, 1}, {1.0078125}));
}

// Convolution dims for input [N, C, spatial...], kernel [I, O, spatial...], output [N, C, ...].
ConvDims NchwDims(int spatial) {
  ConvDims d;
  d.input_batch = 0;
  d.input_feature = 1;
  d.kernel_input_feature = 0;
  d.kernel_output_feature = 1;
  d.output_batch = 0;
  d.output_feature = 1;
  for (int s = 0; s < spatial; ++s) {
    d.input_spatial.push_back(2 + s);
    d.kernel_spatial.push_back(2 + s);
    d.output_spatial.push_back(2 + s);
  }
  return d;
}

// A 1-D convolution of x (1 batch, 1 feature) with kernel k.
Literal Conv1D(const std::vector<double>& x, const std::vector<double>& k, WindowDim w) {
  InterpFixture f;
  const int64_t n = static_cast<int64_t>(x.size()), m = static_cast<int64_t>(k.size());
  w.size = m;
  f.b.Convolution(f.Param(0, DType::kF32, {1, 1, n}), f.Param(1, DType::kF32, {1, 1, m}),
                  NchwDims(1), {w});
  return f.Run({F32({1, 1, n}, x), F32({1, 1, m}, k)});
}

TEST_CASE("interpreter: 1-D convolution, stride, padding and dilations") {
  // Cross-correlation (no kernel flip): out[o] = sum_t in[o*stride + t*rhs_dil - pad_low] k[t].
  // x = [1,2,3,4,5], k = [1,2,3]: out[o] = x[o] + 2x[o+1] + 3x[o+2] = [14, 20, 26].
  CHECK(Conv1D({1, 2, 3, 4, 5}, {1, 2, 3}, WindowDim{}) == F32({1, 1, 3}, {14, 20, 26}));
  // Stride 2, pad 1 each side: p = [0,1,2,3,4,5,0], 3 outputs at 0, 2, 4:
  // [0+2+6, 2+6+12, 4+10+0] = [8, 20, 14].
  WindowDim strided;
  strided.stride = 2;
  strided.pad_low = 1;
  strided.pad_high = 1;
  CHECK(Conv1D({1, 2, 3, 4, 5}, {1, 2, 3}, strided) == F32({1, 1, 3}, {8, 20, 14}));
  // lhs dilation 2: x = [1,2,3] becomes [1,0,2,0,3]: [1+0+6, 0+4+0, 2+0+9] = [7, 4, 11].
  WindowDim lhs_dilated;
  lhs_dilated.base_dilation = 2;
  CHECK(Conv1D({1, 2, 3}, {1, 2, 3}, lhs_dilated) == F32({1, 1, 3}, {7, 4, 11}));
  // rhs dilation 2: taps at o, o+2, o+4 of x = [1..6]: [1+6+15, 2+8+18] = [22, 28].
  WindowDim rhs_dilated;
  rhs_dilated.window_dilation = 2;
  CHECK(Conv1D({1, 2, 3, 4, 5, 6}, {1, 2, 3}, rhs_dilated) == F32({1, 1, 2}, {22, 28}));
  // Negative padding crops: pad_low -1 on [1,2,3,4] leaves [2,3,4]; k = [1,1]: [5, 7].
  WindowDim cropped;
  cropped.pad_low = -1;
  CHECK(Conv1D({1, 2, 3, 4}, {1, 1}, cropped) == F32({1, 1, 2}, {5, 7}));
}

TEST_CASE("interpreter: 2-D convolution") {
  InterpFixture f;
  auto* x = f.Param(0, DType::kF32, {1, 1, 3, 3});
  auto* k = f.Param(1, DType::kF32, {1, 1, 2, 2});
  auto* ones = f.Param(2, DType::kF32, {1, 1, 2, 2});
  auto* plain = f.b.Convolution(x, k, NchwDims(2), {WindowDim{2}, WindowDim{2}});
  WindowDim w;
  w.size = 2;
  w.stride = 2;
  w.pad_low = 1;
  w.pad_high = 1;
  auto* padded = f.b.Convolution(x, ones, NchwDims(2), {w, w});
  f.b.Tuple({plain, padded});
  Literal out = f.Run({F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                       F32({1, 1, 2, 2}, {1, 2, 3, 4}), F32({1, 1, 2, 2}, {1, 1, 1, 1})});
  // x = [[1,2,3],[4,5,6],[7,8,9]], k = [[1,2],[3,4]]:
  // out[0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37; out[0,1] = 2 + 6 + 15 + 24 = 47;
  // out[1,0] = 4 + 10 + 21 + 32 = 67;       out[1,1] = 5 + 12 + 24 + 36 = 77.
  CHECK(out.elements[0] == F32({1, 1, 2, 2}, {37, 47, 67, 77}));
  // Padded to 5x5, 2x2 ones window with stride 2: windows cover x rows {-1,0} x cols {-1,0}
  // = 1; rows {-1,0} x cols {1,2} = 2+3 = 5; rows {1,2} x cols {-1,0} = 4+7 = 11;
  // rows {1,2} x cols {1,2} = 5+6+8+9 = 28.
  CHECK(out.elements[1] == F32({1, 1, 2, 2}, {1, 5, 11, 28}));
}

TEST_CASE("interpreter: convolution over batch and features") {
  InterpFixture f;
  // x [N=2, C=2, W=2], kernel [I=2, O=1, W=1] = [1, 10]: out[n,0,w] = x[n,0,w] + 10 x[n,1,w].
  f.b.Convolution(f.Param(0, DType::kF32, {2, 2, 2}), f.Param(1, DType::kF32, {2, 1, 1}),
                  NchwDims(1), {WindowDim{1}});
  // x[0,0] = [1,2], x[0,1] = [3,4], x[1,0] = [5,6], x[1,1] = [7,8]:
  // out[0] = [1+30, 2+40] = [31,42]; out[1] = [5+70, 6+80] = [75,86].
  CHECK(f.Run({F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), F32({2, 1, 1}, {1, 10})}) ==
        F32({2, 1, 2}, {31, 42, 75, 86}));
}

TEST_CASE("interpreter: convolution with feature groups") {
  InterpFixture f;
  // 4 input features in 2 groups of 2; kernel [I=2, O=2, W=1] = [[1,10],[100,1000]] (row i,
  // column o). Output feature 0 is group 0 (inputs 0,1, kernel column 0 = [1,100]): 1*1 + 2*100
  // = 201; output feature 1 is group 1 (inputs 2,3, column 1 = [10,1000]): 3*10 + 4*1000 = 4030.
  f.b.Convolution(f.Param(0, DType::kF32, {1, 4, 1}), f.Param(1, DType::kF32, {2, 2, 1}),
                  NchwDims(1), {WindowDim{1}}, /*feature_group_count=*/2);
  CHECK(f.Run({F32({1, 4, 1}, {1, 2, 3, 4}), F32({2, 2, 1}, {1, 10, 100, 1000})}) ==
        F32({1, 2, 1}, {201, 4030}));
}

TEST_CASE("interpreter: convolution with channels-last dim labels") {
  InterpFixture f;
  // Input [N, W, C], kernel [W, I, O], output [N, W, C] (b0f_0io->b0f).
  ConvDims d;
  d.input_batch = 0;
  d.input_spatial = {1};
  d.input_feature = 2;
  d.kernel_spatial = {0};
  d.kernel_input_feature = 1;
  d.kernel_output_feature = 2;
  d.output_batch = 0;
  d.output_spatial = {1};
  d.output_feature = 2;
  f.b.Convolution(f.Param(0, DType::kF32, {1, 3, 1}), f.Param(1, DType::kF32, {2, 1, 1}), d,
                  {WindowDim{2}});
  // x = [1,2,3], k = [1,2]: [1+4, 2+6] = [5, 8].
  CHECK(f.Run({F32({1, 3, 1}, {1, 2, 3}), F32({2, 1, 1}, {1, 2})}) == F32({1, 2, 1}, {5, 8}));
}

}  // namespace
}  // namespace podsim::ir
