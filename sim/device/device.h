#pragma once
// The device (one core = one partition) model: matrix-unit and vector-unit peaks, the matrix-unit
// tile that dims must fill, HBM bandwidth and capacity, and a fixed per-op overhead. It turns the
// work of an instruction or a fused group (ir/cost.h, sim/device/fusion.h) into a roofline time and a
// modelled time.
//
// Timing rule for one launched op (a single instruction or a fused group):
//   matrix_s  = sum over its dots/convolutions of flops / rate(dtype)   (rate: matrix_bf16,
//               divided by f32_matmul_passes when an operand is f32)
//   vector_s  = (vector flops + transcendentals * transcendental_flops) / vector
//   memory_s  = HBM bytes (after fusion) / hbm_bandwidth
//   roofline  = max(matrix_s, vector_s, memory_s)
//   modelled  = max(matrix_s / (tile efficiency * matrix_sustained_fraction), vector_s,
//                   memory_s) + op_overhead
// An outer-product dot (no contracting dims, sim/device/fusion.h IsOuterProduct) is an elementwise
// multiply on the vector unit: one FLOP per output element.
// The matrix unit, the vector unit and the HBM DMA engines work concurrently (XLA pipelines a
// fusion's tiles), hence max, not sum. Bookkeeping ops (parameter, constant, tuple,
// get-tuple-element, partition-id) launch nothing and take no time.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/presets.h"
#include "base/units.h"
#include "ir/cost.h"
#include "ir/instruction.h"

namespace podsim::sim {

struct DeviceSpec {
  std::string name = "tpu-v3-core";
  FlopsPerSecond matrix_bf16{61.5e12};  // of the matrix units at bf16, per core, > 0
  // Passes the matrix unit makes for an f32 matmul (XLA's default precision: 1 bf16 pass;
  // HIGHEST: 6). The f32 rate is matrix_bf16 / f32_matmul_passes.
  int64_t f32_matmul_passes = 1;
  int64_t matrix_tile = 128;           // systolic array side: contraction and output dims pad to it
  // Fraction of the matrix-unit peak a large, tile-filling matmul sustains (systolic pipeline
  // fill and drain per tile pass, operand feeding), in (0, 1]. Modelled time only; the roofline
  // is at peak.
  double matrix_sustained_fraction = 1.0;
  FlopsPerSecond vector{3.85e12};       // of the vector unit, per core, > 0
  double transcendental_flops = 16;    // vector-unit FLOPs one exp/log/tanh/rsqrt costs, >= 1
  BytesPerSecond hbm_bandwidth{450e9};  // per core, > 0
  Bytes hbm_capacity{17179869184};     // per core (16 GiB), > 0
  double op_overhead_us = 1.0;         // fixed launch cost per (fused) op, >= 0
  nlohmann::json comments = nlohmann::json::object();  // "_notes", "_assumptions" of the preset

  // Reads a spec object; unknown keys and bad values throw naming `path`.key.
  static DeviceSpec FromJson(const nlohmann::json& json, const std::string& path);
  nlohmann::json ToJson() const;
  // Throws ConfigError naming `path`.field for a value out of range (a spec built in
  // code, e.g. "device.hbm_bandwidth: must be > 0, got 0").
  void Validate(const std::string& path = "device") const;
};

// A preset name from sim/device/presets/ ("tpu-v3-core", "tpu-v4-core", ...) or a JSON file path.
DeviceSpec LoadDeviceSpec(const std::string& name_or_path);
// A config value: a string (LoadDeviceSpec) or an object (the fields; with "preset": NAME, that
// preset's fields with the object's other keys replacing them). Errors name `path`.
DeviceSpec DeviceSpecFromConfig(const nlohmann::json& value, const std::string& path);
// The device presets: DataDir()/sim/device/presets/NAME.json (base/resources.h).
PresetSet DevicePresets();

// What limits an op.
enum class Bound : uint8_t { kNone, kMatrix, kVector, kMemory, kNetwork, kOverhead };
const char* BoundName(Bound b);

struct OpTime {
  Time roofline;   // max(compute at peak, HBM traffic at full bandwidth): an upper bound on speed
  Time modelled;   // with tile-padding efficiency, f32 passes and the per-op overhead
  Bound bound = Bound::kNone;
  // Peak over modelled matrix time: tile fill times matrix_sustained_fraction, flops-weighted.
  double matrix_efficiency = 1.0;
};

// The work of one launched op (a single instruction or a fused group) on one device.
struct ComputeWork {
  double matrix_flops = 0;        // dot / convolution flops
  double matrix_peak_s = 0;       // sum of flops / rate(dtype): the matrix unit at peak
  double matrix_modelled_s = 0;   // the same divided by each op's MatrixEfficiency
  double vector_flops = 0;        // elementwise, reduction, sort... flops
  double transcendentals = 0;     // exp, log, tanh, rsqrt, sqrt, power evaluations
  double hbm_bytes = 0;           // bytes read from and written to HBM
  bool launches = false;          // false: bookkeeping only (no kernel, no overhead)

  double flops() const { return matrix_flops + vector_flops + transcendentals; }
};

// Adds the compute part of `instr` (its cost per ir/cost.h; not its bytes) to `work`.
void AddCompute(const ir::Instruction& instr, const ir::Cost& cost, const DeviceSpec& spec,
                ComputeWork& work);

// Time of one launched op with `work` (see the file comment).
OpTime TimeWork(const ComputeWork& work, const DeviceSpec& spec);

// Time of one execution of a compute instruction (not a collective, not a loop) on `spec`.
// `hbm_bytes` is the traffic that reaches HBM (fusion may remove some of cost.bytes_*).
OpTime TimeCompute(const ir::Instruction& instr, const ir::Cost& cost, double hbm_bytes,
                   const DeviceSpec& spec);

// Fraction of the matrix unit a dot or convolution keeps busy, in (0, 1]: the contraction
// extent and the stationary output extent each pad up to a multiple of matrix_tile. For a dot
// XLA may make either operand stationary, so the better of the two free extents counts. 1 for
// other ops.
double MatrixEfficiency(const ir::Instruction& instr, int64_t matrix_tile);

}  // namespace podsim::sim
