// Device model: op times derived by hand from the roofline rule in sim/device/device.h, and the spec's
// JSON form and validation.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "base/config.h"
#include "ir/builder.h"
#include "ir/cost.h"
#include "sim/device/device.h"

namespace podsim::sim {
namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;

// Round numbers for hand derivations: 1 TFLOP/s matrix and vector units, 100 GB/s HBM,
// 1 us per op.
DeviceSpec HandSpec() {
  DeviceSpec s;
  s.name = "hand";
  s.matrix_bf16 = FlopsPerSecond{1e12};
  s.vector = FlopsPerSecond{1e12};
  s.transcendental_flops = 16;
  s.hbm_bandwidth = BytesPerSecond{1e11};
  s.hbm_capacity = Bytes{1000000000};
  s.op_overhead_us = 1.0;
  s.matrix_tile = 128;
  s.f32_matmul_passes = 1;
  return s;
}

ir::DotDims MatMul() {
  ir::DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return d;
}

struct OneOp {
  std::unique_ptr<ir::Module> module = std::make_unique<ir::Module>("one_op");
  ir::Instruction* op = nullptr;
};

OneOp Dot(DType t, int64_t m, int64_t k, int64_t n) {
  OneOp o;
  Builder b(o.module->AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(t, {m, k}), "x");
  auto* w = b.Parameter(1, Shape(t, {k, n}), "w");
  o.op = b.Dot(x, w, MatMul());
  return o;
}

OpTime TimeOf(const ir::Instruction& i, const DeviceSpec& spec) {
  const ir::Cost c = ir::InstructionCost(i);
  return TimeCompute(i, c, c.bytes_read + c.bytes_written, spec);
}

TEST_CASE("dot of full tiles: time = 2MNK / peak + overhead") {
  // bf16 [256,512] x [512,384]: 2*256*512*384 = 100,663,296 flops -> 100.663296 us at 1e12.
  // Bytes (256*512 + 512*384 + 256*384) * 2 = 851,968 -> 8.51968 us at 1e11: compute-bound.
  // Every dim is a multiple of 128: efficiency 1. Modelled = 100.663296 + 1 us.
  OneOp o = Dot(DType::kBF16, 256, 512, 384);
  const OpTime t = TimeOf(*o.op, HandSpec());
  CHECK(t.roofline == Time::FromSeconds(100.663296e-6));
  CHECK(t.modelled == Time::FromSeconds(101.663296e-6));
  CHECK(t.bound == Bound::kMatrix);
  CHECK(t.matrix_efficiency == doctest::Approx(1.0));
}

TEST_CASE("dims that do not fill the 128x128 tile waste work") {
  // bf16 [256,100] x [100,200]: flops 2*256*100*200 = 10,240,000 -> 10.24 us at peak.
  // K = 100 pads to 128 (0.78125); free extents M = 256 (fills) and N = 200 (0.78125): the
  // better one is stationary, so efficiency = 0.78125. Modelled = 10.24 / 0.78125 + 1 = 14.1072.
  OneOp o = Dot(DType::kBF16, 256, 100, 200);
  CHECK(MatrixEfficiency(*o.op, 128) == doctest::Approx(0.78125));
  const OpTime t = TimeOf(*o.op, HandSpec());
  CHECK(t.roofline == Time::FromSeconds(10.24e-6));
  CHECK(t.modelled == Time::FromSeconds(14.1072e-6));
  // Both free extents short: [100,100] x [100,100]: (100/128)^2 = 0.6103515625.
  OneOp small = Dot(DType::kBF16, 100, 100, 100);
  CHECK(MatrixEfficiency(*small.op, 128) == doctest::Approx(0.6103515625));
}

TEST_CASE("a convolution pads its features to the tile; a weight gradient runs as a dot") {
  // 1D, input [batch 8, 64 positions, 64 features], kernel [3 taps, 64 in, 96 out], SAME:
  // per tap a [8*64, 64] x [64, 96] matmul, both features pad to 128: (64/128) * (96/128).
  ir::ConvDims cd;
  cd.input_batch = 0;
  cd.input_spatial = {1};
  cd.input_feature = 2;
  cd.kernel_spatial = {0};
  cd.kernel_input_feature = 1;
  cd.kernel_output_feature = 2;
  cd.output_batch = 0;
  cd.output_spatial = {1};
  cd.output_feature = 2;
  OneOp fwd;
  Builder b(fwd.module->AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kBF16, {8, 64, 64}), "x");
  auto* w = b.Parameter(1, Shape(DType::kBF16, {3, 64, 96}), "w");
  fwd.op = b.Convolution(x, w, cd, {ir::WindowDim{3, 1, 1, 1, 1, 1}});
  CHECK(MatrixEfficiency(*fwd.op, 128) == doctest::Approx(0.5 * 0.75));
  // Its weight gradient as ir::Differentiate writes it: x with batch and features swapped
  // ([64 in-features as batch, 64 positions, 8 images as features]) convolved with the adjoint
  // [64 positions as taps, 8 images, 96 out] into [64, 3 taps, 96]: the window (64) is wider
  // than the output (3). Contraction 8 images x 64 taps = 512 (fills 4 tiles); free extents
  // 96 out-features (0.75) and 64 x 3 = 192 lhs rows (192/256 = 0.75): efficiency 0.75, where
  // the per-tap rule would give (8/128) * 0.75.
  ir::ConvDims gd;
  gd.input_batch = 2;
  gd.input_spatial = {1};
  gd.input_feature = 0;
  gd.kernel_spatial = {0};
  gd.kernel_input_feature = 1;
  gd.kernel_output_feature = 2;
  gd.output_batch = 0;
  gd.output_spatial = {1};
  gd.output_feature = 2;
  OneOp grad;
  Builder g(grad.module->AddComputation("main", true));
  auto* xs = g.Parameter(0, Shape(DType::kBF16, {8, 64, 64}), "x");
  auto* dy = g.Parameter(1, Shape(DType::kBF16, {64, 8, 96}), "dy");
  grad.op = g.Convolution(xs, dy, gd, {ir::WindowDim{64, 1, 1, 1, 1, 1}});
  REQUIRE(grad.op->shape.dims == std::vector<int64_t>{64, 3, 96});
  CHECK(MatrixEfficiency(*grad.op, 128) == doctest::Approx(0.75));
}

TEST_CASE("f32 matmuls run f32_matmul_passes bf16 passes") {
  // f32 [256,512] x [512,384] with 3 passes: 100.663296 us * 3 = 301.989888 us, + 1 us.
  DeviceSpec spec = HandSpec();
  spec.f32_matmul_passes = 3;
  OneOp o = Dot(DType::kF32, 256, 512, 384);
  const OpTime t = TimeOf(*o.op, spec);
  CHECK(t.modelled == Time::FromSeconds(302.989888e-6));
}

TEST_CASE("an elementwise op is memory-bound: bytes / HBM bandwidth + overhead") {
  // add f32[1024,1024]: reads 2 x 4 MiB, writes 4 MiB = 12,582,912 B -> 125.82912 us at 1e11;
  // 1,048,576 flops -> 1.048576 us on the vector unit. Modelled = 125.82912 + 1.
  OneOp o;
  Builder b(o.module->AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {1024, 1024}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {1024, 1024}), "y");
  o.op = b.Add(x, y);
  const OpTime t = TimeOf(*o.op, HandSpec());
  CHECK(t.roofline == Time::FromSeconds(125.82912e-6));
  CHECK(t.modelled == Time::FromSeconds(126.82912e-6));
  CHECK(t.bound == Bound::kMemory);
}

TEST_CASE("transcendentals cost transcendental_flops vector flops each") {
  // exp f32[1024]: 1024 transcendentals * 16 = 16,384 vector flops -> 0.016384 us; bytes
  // 8192 -> 0.08192 us: memory-bound roofline 0.08192 us; the 1 us overhead dominates.
  OneOp o;
  Builder b(o.module->AddComputation("main", true));
  o.op = b.Exp(b.Parameter(0, Shape(DType::kF32, {1024}), "x"));
  const OpTime t = TimeOf(*o.op, HandSpec());
  CHECK(t.roofline == Time::FromSeconds(0.08192e-6));
  CHECK(t.bound == Bound::kOverhead);
  ComputeWork w;
  AddCompute(*o.op, ir::InstructionCost(*o.op), HandSpec(), w);
  CHECK(w.transcendentals == 1024);
}

TEST_CASE("a fused group overlaps its units: max of matrix, vector and memory, one overhead") {
  // matrix 10 us, vector 3 us, memory 5 us -> roofline 10 us, modelled 10 + 1 us.
  ComputeWork w;
  w.matrix_peak_s = 10e-6;
  w.matrix_modelled_s = 10e-6;
  w.vector_flops = 3e6;
  w.hbm_bytes = 5e5;
  w.launches = true;
  const OpTime t = TimeWork(w, HandSpec());
  CHECK(t.roofline == Time::FromMicros(10));
  CHECK(t.modelled == Time::FromMicros(11));
  // Bookkeeping launches nothing and costs nothing.
  CHECK(TimeWork(ComputeWork{}, HandSpec()).modelled == Time());
}

TEST_CASE("matrix_sustained_fraction stretches the modelled matmul time, not the roofline") {
  // The full-tile dot above: 100.663296 us at peak. At a sustained fraction of 0.5 the matrix
  // unit takes 2 x 100.663296 = 201.326592 us, + 1 us overhead; the roofline stays at peak.
  OneOp o = Dot(DType::kBF16, 256, 512, 384);
  DeviceSpec spec = HandSpec();
  spec.matrix_sustained_fraction = 0.5;
  const OpTime t = TimeOf(*o.op, spec);
  CHECK(t.roofline == Time::FromSeconds(100.663296e-6));
  CHECK(t.modelled == Time::FromSeconds(202.326592e-6));
  CHECK(t.matrix_efficiency == doctest::Approx(0.5));
}

TEST_CASE("an outer-product dot (no contracting dims) is a vector multiply") {
  // f32 [256] x [512] -> [256,512]: 131,072 multiplies -> 0.131072 us on the 1e12 vector unit;
  // bytes (256 + 512 + 131072) * 4 = 527,360 -> 5.2736 us at 1e11: memory-bound.
  // Modelled 5.2736 + 1 us overhead. On the matrix unit it would be 2*256*512 flops at 1/128
  // tile fill (K = 1).
  OneOp o;
  Builder b(o.module->AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {256}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {512}), "y");
  o.op = b.Dot(x, y, ir::DotDims{});
  const OpTime t = TimeOf(*o.op, HandSpec());
  CHECK(t.roofline == Time::FromSeconds(5.2736e-6));
  CHECK(t.modelled == Time::FromSeconds(6.2736e-6));
  CHECK(t.bound == Bound::kMemory);
  ComputeWork w;
  AddCompute(*o.op, ir::InstructionCost(*o.op), HandSpec(), w);
  CHECK(w.vector_flops == 131072);
  CHECK(w.matrix_flops == 0);
}

TEST_CASE("device presets load, round-trip, and can be patched") {
  for (const std::string& name : DevicePresets().Names()) {
    INFO(name);
    const DeviceSpec s = LoadDeviceSpec(name);
    CHECK(s.name == name);
    s.Validate();
    const DeviceSpec again = DeviceSpec::FromJson(s.ToJson(), "device");
    CHECK(again.ToJson() == s.ToJson());
  }
  const DeviceSpec v3 = LoadDeviceSpec("tpu-v3-core");
  CHECK(v3.matrix_bf16.value == 61.5e12);
  CHECK(v3.hbm_capacity.value == 17179869184);
  const DeviceSpec patched = DeviceSpecFromConfig(
      nlohmann::json{{"preset", "tpu-v3-core"}, {"hbm_bandwidth", 9e11}}, "device");
  CHECK(patched.hbm_bandwidth.value == 9e11);
  CHECK(patched.matrix_bf16.value == 61.5e12);
}

TEST_CASE("bad device specs are errors naming the field") {
  DeviceSpec s = HandSpec();
  s.hbm_bandwidth = BytesPerSecond{0};
  CHECK_THROWS_WITH(s.Validate(), "device.hbm_bandwidth: must be > 0, got 0");
  nlohmann::json j = HandSpec().ToJson();
  j["hbm_bandwidth"] = 0;
  CHECK_THROWS_WITH(DeviceSpec::FromJson(j, "device"), "device.hbm_bandwidth: must be > 0, got 0");
  j = HandSpec().ToJson();
  j["matrix_sustained_fraction"] = 0;
  CHECK_THROWS_WITH(DeviceSpec::FromJson(j, "device"),
                    "device.matrix_sustained_fraction: must be > 0, got 0");
  j["matrix_sustained_fraction"] = 1.5;
  CHECK_THROWS_WITH(DeviceSpec::FromJson(j, "device"),
                    doctest::Contains("device.matrix_sustained_fraction"));
  s = HandSpec();
  s.matrix_sustained_fraction = 0;
  CHECK_THROWS_WITH(s.Validate(), "device.matrix_sustained_fraction: must be > 0, got 0");
  j = HandSpec().ToJson();
  j["hbm_bandwith"] = 1;  // misspelt
  CHECK_THROWS_AS(DeviceSpec::FromJson(j, "device"), ConfigError);
  CHECK_THROWS_WITH_AS(LoadDeviceSpec("tpu-v99-core"), doctest::Contains("tpu-v3-core"),
                       ConfigError);
}

}  // namespace
}  // namespace podsim::sim
