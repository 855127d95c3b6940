#include "sim/device/device.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/format.h"
#include "base/resources.h"
#include "sim/device/fusion.h"

namespace podsim::sim {


DeviceSpec DeviceSpec::FromJson(const nlohmann::json& json, const std::string& path) {
  JsonReader r(json, path);
  DeviceSpec s;
  s.name = r.String("name", s.name);
  s.matrix_bf16.value = r.Double("matrix_bf16_flops", s.matrix_bf16.value, Limit::Positive());
  s.f32_matmul_passes = r.Int("f32_matmul_passes", s.f32_matmul_passes, Limit::Between(1, 16));
  s.matrix_tile = r.Int("matrix_tile", s.matrix_tile, Limit::AtLeast(1));
  s.matrix_sustained_fraction = r.Double("matrix_sustained_fraction", s.matrix_sustained_fraction,
                                         Limit::Between(0, 1));
  if (s.matrix_sustained_fraction <= 0) {
    r.Fail("matrix_sustained_fraction",
           "must be > 0, got " + FormatG(s.matrix_sustained_fraction));
  }
  s.vector.value = r.Double("vector_flops", s.vector.value, Limit::Positive());
  s.transcendental_flops = r.Double("transcendental_flops", s.transcendental_flops,
                                    Limit::AtLeast(1));
  s.hbm_bandwidth.value = r.Double("hbm_bandwidth", s.hbm_bandwidth.value, Limit::Positive());
  s.hbm_capacity.value = r.Int("hbm_capacity", s.hbm_capacity.value, Limit::Positive());
  s.op_overhead_us = r.Double("op_overhead_us", s.op_overhead_us, Limit::NonNegative());
  s.comments = CommentKeys(json);
  r.Finish();
  return s;
}

nlohmann::json DeviceSpec::ToJson() const {
  nlohmann::json j = comments;
  j["name"] = name;
  j["matrix_bf16_flops"] = matrix_bf16.value;
  j["f32_matmul_passes"] = f32_matmul_passes;
  j["matrix_tile"] = matrix_tile;
  j["matrix_sustained_fraction"] = matrix_sustained_fraction;
  j["vector_flops"] = vector.value;
  j["transcendental_flops"] = transcendental_flops;
  j["hbm_bandwidth"] = hbm_bandwidth.value;
  j["hbm_capacity"] = static_cast<double>(hbm_capacity.value);  // as results have always shown it
  j["op_overhead_us"] = op_overhead_us;
  return j;
}

void DeviceSpec::Validate(const std::string& path) const {
  auto check = [&](const char* field, double v, Limit limit) {
    if (!std::isfinite(v) || !limit.Accepts(v)) {
      FailAt(JoinPath(path, field), limit.Describe() + ", got " + FormatG(v));
    }
  };
  check("matrix_bf16_flops", matrix_bf16.value, Limit::Positive());
  check("f32_matmul_passes", static_cast<double>(f32_matmul_passes), Limit::Between(1, 16));
  check("matrix_tile", static_cast<double>(matrix_tile), Limit::AtLeast(1));
  check("matrix_sustained_fraction", matrix_sustained_fraction, Limit::Between(0, 1));
  if (matrix_sustained_fraction <= 0) {
    FailAt(JoinPath(path, "matrix_sustained_fraction"),
                 "must be > 0, got " + FormatG(matrix_sustained_fraction));
  }
  check("vector_flops", vector.value, Limit::Positive());
  check("transcendental_flops", transcendental_flops, Limit::AtLeast(1));
  check("hbm_bandwidth", hbm_bandwidth.value, Limit::Positive());
  check("hbm_capacity", static_cast<double>(hbm_capacity.value), Limit::Positive());
  check("op_overhead_us", op_overhead_us, Limit::NonNegative());
}

PresetSet DevicePresets() { return PresetSet("device", DataDir() + "/sim/device/presets"); }

DeviceSpec LoadDeviceSpec(const std::string& name_or_path) {
  return DeviceSpecFromConfig(nlohmann::json(name_or_path), "device");
}

DeviceSpec DeviceSpecFromConfig(const nlohmann::json& value, const std::string& path) {
  return DeviceSpec::FromJson(DevicePresets().Resolve(value, path), path);
}

const char* BoundName(Bound b) {
  switch (b) {
    case Bound::kNone: return "none";
    case Bound::kMatrix: return "matrix";
    case Bound::kVector: return "vector";
    case Bound::kMemory: return "memory";
    case Bound::kNetwork: return "network";
    case Bound::kOverhead: return "overhead";
  }
  return "?";
}

namespace {

double PaddedFraction(int64_t extent, int64_t tile) {
  if (extent <= 0 || tile <= 1) return 1.0;
  int64_t padded = (extent + tile - 1) / tile * tile;
  return static_cast<double>(extent) / static_cast<double>(padded);
}

// Product of the dims of `dims` that are in neither `batch` nor `contracting`.
int64_t FreeExtent(const std::vector<int64_t>& dims, const std::vector<int64_t>& batch,
                   const std::vector<int64_t>& contracting) {
  int64_t p = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (std::count(batch.begin(), batch.end(), d) == 0 &&
        std::count(contracting.begin(), contracting.end(), d) == 0) {
      p *= dims[static_cast<size_t>(d)];
    }
  }
  return p;
}

}  // namespace

double MatrixEfficiency(const ir::Instruction& instr, int64_t matrix_tile) {
  if (instr.opcode == ir::Opcode::kDot) {
    // The systolic array holds a K x N tile of the stationary operand while the other streams
    // through; K and N pad to the tile. XLA may swap the operands, so the stationary free
    // extent is whichever of the two wastes less.
    const auto& a = instr.operand(0)->shape.dims;
    const auto& b = instr.operand(1)->shape.dims;
    int64_t k = 1;
    for (int64_t d : instr.dot.lhs_contracting) k *= a[static_cast<size_t>(d)];
    const int64_t m = FreeExtent(a, instr.dot.lhs_batch, instr.dot.lhs_contracting);
    const int64_t n = FreeExtent(b, instr.dot.rhs_batch, instr.dot.rhs_contracting);
    return PaddedFraction(k, matrix_tile) *
           std::max(PaddedFraction(n, matrix_tile), PaddedFraction(m, matrix_tile));
  }
  if (instr.opcode == ir::Opcode::kConvolution) {
    // Each kernel tap is a matmul of the input features (K) against the output features (the
    // stationary extent), so both pad to the tile (the TPU rule: feature dims pad to 128).
    const ir::ConvDims& cd = instr.conv;
    const auto& k = instr.operand(1)->shape.dims;
    int64_t in_f = k[static_cast<size_t>(cd.kernel_input_feature)];
    int64_t out_f = k[static_cast<size_t>(cd.kernel_output_feature)] /
                    std::max<int64_t>(1, instr.feature_group_count);
    // A window wider than the output (a weight gradient: the adjoint is the kernel, its taps
    // every output position of the forward convolution) is a matmul whose contraction is the
    // kernel's input feature times all its taps (the forward's batch and spatial positions) and
    // whose free extents are the output's features and its lhs side (input batch x output
    // positions): it runs as a dot, with the dot's rule.
    bool contracting_window = false;
    int64_t taps = 1, lhs_free = instr.shape.dims[static_cast<size_t>(cd.output_batch)];
    for (size_t s = 0; s < cd.kernel_spatial.size(); ++s) {
      const int64_t size = k[static_cast<size_t>(cd.kernel_spatial[s])];
      const int64_t out = instr.shape.dims[static_cast<size_t>(cd.output_spatial[s])];
      contracting_window = contracting_window || size > out;
      taps *= size;
      lhs_free *= out;
    }
    if (contracting_window && instr.feature_group_count == 1) {
      return PaddedFraction(in_f * taps, matrix_tile) *
             std::max(PaddedFraction(out_f, matrix_tile), PaddedFraction(lhs_free, matrix_tile));
    }
    return PaddedFraction(in_f, matrix_tile) * PaddedFraction(out_f, matrix_tile);
  }
  return 1.0;
}

void AddCompute(const ir::Instruction& instr, const ir::Cost& cost, const DeviceSpec& spec,
                ComputeWork& work) {
  if (IsOuterProduct(instr)) {
    // A multiply of broadcasts (XLA's algebraic simplifier): one multiply per output element.
    work.vector_flops += static_cast<double>(instr.shape.NumElements());
    work.launches = true;
    return;
  }
  switch (cost.unit) {
    case ir::Unit::kMatrix: {
      double rate = spec.matrix_bf16.value;
      // An f32 operand makes the matrix unit run f32_matmul_passes bf16 passes.
      bool f32 = false;
      for (const ir::Instruction* o : instr.operands) f32 = f32 || o->shape.dtype == ir::DType::kF32;
      if (f32) rate /= static_cast<double>(spec.f32_matmul_passes);
      const double peak_s = cost.flops / rate;
      work.matrix_flops += cost.flops;
      work.matrix_peak_s += peak_s;
      work.matrix_modelled_s +=
          peak_s / (MatrixEfficiency(instr, spec.matrix_tile) * spec.matrix_sustained_fraction);
      work.launches = true;
      break;
    }
    case ir::Unit::kVector:
      work.vector_flops += cost.flops;
      work.transcendentals += cost.transcendentals;
      work.launches = true;
      break;
    case ir::Unit::kMemory:
      work.launches = true;
      break;
    case ir::Unit::kNone:
    case ir::Unit::kNetwork:
      break;
  }
}

OpTime TimeWork(const ComputeWork& work, const DeviceSpec& spec) {
  OpTime t;
  const double vector_s =
      (work.vector_flops + work.transcendentals * spec.transcendental_flops) / spec.vector.value;
  const double memory_s = work.hbm_bytes / spec.hbm_bandwidth.value;
  const double peak = std::max({work.matrix_peak_s, vector_s, memory_s});
  const double busy = std::max({work.matrix_modelled_s, vector_s, memory_s});
  const double overhead = work.launches ? spec.op_overhead_us * 1e-6 : 0.0;
  t.roofline = Time::FromSeconds(peak);
  t.modelled = Time::FromSeconds(busy + overhead);
  t.matrix_efficiency = work.matrix_modelled_s > 0 ? work.matrix_peak_s / work.matrix_modelled_s
                                                   : 1.0;
  if (busy == 0 && overhead == 0) {
    t.bound = Bound::kNone;
  } else if (overhead > busy) {
    t.bound = Bound::kOverhead;
  } else if (work.matrix_modelled_s >= vector_s && work.matrix_modelled_s >= memory_s) {
    t.bound = Bound::kMatrix;
  } else {
    t.bound = vector_s >= memory_s ? Bound::kVector : Bound::kMemory;
  }
  return t;
}

OpTime TimeCompute(const ir::Instruction& instr, const ir::Cost& cost, double hbm_bytes,
                   const DeviceSpec& spec) {
  ComputeWork work;
  AddCompute(instr, cost, spec, work);
  work.hbm_bytes = hbm_bytes;
  return TimeWork(work, spec);
}

}  // namespace podsim::sim
