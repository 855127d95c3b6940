#pragma once
// Field-by-field comparison of two modules, for round-trip tests (proto, text format).
//
// Unlike the types' operator==, it compares every field of every instruction (also the ones its
// opcode does not read), shapes strictly (a tuple's dtype and dims too), literal values bit for
// bit (a NaN equals the same NaN, -0 differs from 0), operands, parents, roots and loop bodies by
// name, and it says where the first difference is:
//
//   CHECK(ModuleDifference(*original, *round_tripped) == "");
//   // fails with e.g. "computation %main, instruction %d: dot.lhs_contracting: {1} vs {0}"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/module.h"

namespace podsim::ir::testing {

class ModuleDiffer {
 public:
  // "" when equal; else the first difference found.
  std::string Compare(const Module& a, const Module& b) {
    Field("module name", a.name(), b.name());
    Field("computation count", a.computations().size(), b.computations().size());
    if (!diff_.empty()) return diff_;
    Field("entry", ComputationName(a.entry()), ComputationName(b.entry()));
    for (size_t c = 0; c < a.computations().size() && diff_.empty(); ++c) {
      CompareComputation(*a.computations()[c], *b.computations()[c]);
    }
    return diff_;
  }

 private:
  static std::string ComputationName(const Computation* c) { return c ? "%" + c->name() : "null"; }
  static std::string InstructionName(const Instruction* i) { return i ? "%" + i->name : "null"; }

  static std::string Show(const std::string& s) { return "\"" + s + "\""; }
  static std::string Show(bool v) { return v ? "true" : "false"; }
  static std::string Show(double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g (bits 0x%016llx)", v,
                  static_cast<unsigned long long>(std::bit_cast<uint64_t>(v)));
    return buf;
  }
  template <typename T>
  static std::string Show(const std::vector<T>& v) {
    std::string out = "{";
    for (size_t k = 0; k < v.size(); ++k) out += (k ? "," : "") + Show(v[k]);
    return out + "}";
  }
  template <typename A, typename B>
  static std::string Show(const std::pair<A, B>& p) {
    return "(" + Show(p.first) + "," + Show(p.second) + ")";
  }
  template <typename T>
  static std::string Show(const T& v) {
    if constexpr (std::is_enum_v<T>) {
      return std::to_string(static_cast<int64_t>(v));
    } else {
      return std::to_string(v);
    }
  }

  // Records the first difference; doubles compare by bit pattern.
  template <typename T>
  void Field(const std::string& what, const T& a, const T& b) {
    if (!diff_.empty()) return;
    bool equal;
    if constexpr (std::is_same_v<T, double>) {
      equal = std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
    } else {
      equal = a == b;
    }
    if (!equal) diff_ = where_ + what + ": " + Show(a) + " vs " + Show(b);
  }

  void CompareShape(const std::string& what, const Shape& a, const Shape& b) {
    Field(what + ".dtype", a.dtype, b.dtype);
    Field(what + ".dims", a.dims, b.dims);
    Field(what + ".is_tuple", a.is_tuple, b.is_tuple);
    Field(what + ".tuple_shapes size", a.tuple_shapes.size(), b.tuple_shapes.size());
    for (size_t k = 0; k < a.tuple_shapes.size() && diff_.empty(); ++k) {
      CompareShape(what + ".tuple_shapes[" + std::to_string(k) + "]", a.tuple_shapes[k],
                   b.tuple_shapes[k]);
    }
  }

  void CompareLiteral(const std::string& what, const Literal& a, const Literal& b) {
    CompareShape(what + ".shape", a.shape, b.shape);
    Field(what + ".values size", a.values.size(), b.values.size());
    for (size_t k = 0; k < a.values.size() && diff_.empty(); ++k) {
      Field(what + ".values[" + std::to_string(k) + "]", a.values[k], b.values[k]);
    }
    Field(what + ".elements size", a.elements.size(), b.elements.size());
    for (size_t k = 0; k < a.elements.size() && diff_.empty(); ++k) {
      CompareLiteral(what + ".elements[" + std::to_string(k) + "]", a.elements[k], b.elements[k]);
    }
  }

  void CompareSharding(const std::optional<Sharding>& a, const std::optional<Sharding>& b) {
    Field("has sharding", a.has_value(), b.has_value());
    if (!a || !b) return;
    Field("sharding.kind", a->kind, b->kind);
    Field("sharding.device", a->device, b->device);
    Field("sharding.tile_dims", a->tile_dims, b->tile_dims);
    // The form too: an iota must stay an iota.
    Field("sharding.devices", a->devices.ToString(), b->devices.ToString());
    Field("sharding.last_tile_dim_replicate", a->last_tile_dim_replicate,
          b->last_tile_dim_replicate);
  }

  void CompareWindow(const std::vector<WindowDim>& a, const std::vector<WindowDim>& b) {
    Field("window size", a.size(), b.size());
    for (size_t k = 0; k < a.size() && diff_.empty(); ++k) {
      const std::string w = "window[" + std::to_string(k) + "].";
      Field(w + "size", a[k].size, b[k].size);
      Field(w + "stride", a[k].stride, b[k].stride);
      Field(w + "pad_low", a[k].pad_low, b[k].pad_low);
      Field(w + "pad_high", a[k].pad_high, b[k].pad_high);
      Field(w + "base_dilation", a[k].base_dilation, b[k].base_dilation);
      Field(w + "window_dilation", a[k].window_dilation, b[k].window_dilation);
    }
  }

  void CompareInstruction(const Instruction& a, const Instruction& b) {
    Field("name", a.name, b.name);
    Field("opcode", std::string(OpcodeName(a.opcode)), std::string(OpcodeName(b.opcode)));
    CompareShape("shape", a.shape, b.shape);
    std::vector<std::string> ops_a, ops_b;
    for (const Instruction* o : a.operands) ops_a.push_back(InstructionName(o));
    for (const Instruction* o : b.operands) ops_b.push_back(InstructionName(o));
    Field("operands", ops_a, ops_b);
    Field("parent", ComputationName(a.parent), ComputationName(b.parent));
    Field("parameter_number", a.parameter_number, b.parameter_number);
    CompareLiteral("literal", a.literal, b.literal);
    Field("dimensions", a.dimensions, b.dimensions);
    Field("slice_starts", a.slice_starts, b.slice_starts);
    Field("slice_limits", a.slice_limits, b.slice_limits);
    Field("slice_strides", a.slice_strides, b.slice_strides);
    Field("slice_sizes", a.slice_sizes, b.slice_sizes);
    Field("padding size", a.padding.size(), b.padding.size());
    for (size_t k = 0; k < a.padding.size() && diff_.empty(); ++k) {
      const std::string p = "padding[" + std::to_string(k) + "].";
      Field(p + "low", a.padding[k].low, b.padding[k].low);
      Field(p + "high", a.padding[k].high, b.padding[k].high);
      Field(p + "interior", a.padding[k].interior, b.padding[k].interior);
    }
    Field("dot.lhs_batch", a.dot.lhs_batch, b.dot.lhs_batch);
    Field("dot.rhs_batch", a.dot.rhs_batch, b.dot.rhs_batch);
    Field("dot.lhs_contracting", a.dot.lhs_contracting, b.dot.lhs_contracting);
    Field("dot.rhs_contracting", a.dot.rhs_contracting, b.dot.rhs_contracting);
    Field("conv.input_batch", a.conv.input_batch, b.conv.input_batch);
    Field("conv.input_feature", a.conv.input_feature, b.conv.input_feature);
    Field("conv.input_spatial", a.conv.input_spatial, b.conv.input_spatial);
    Field("conv.kernel_input_feature", a.conv.kernel_input_feature, b.conv.kernel_input_feature);
    Field("conv.kernel_output_feature", a.conv.kernel_output_feature,
          b.conv.kernel_output_feature);
    Field("conv.kernel_spatial", a.conv.kernel_spatial, b.conv.kernel_spatial);
    Field("conv.output_batch", a.conv.output_batch, b.conv.output_batch);
    Field("conv.output_feature", a.conv.output_feature, b.conv.output_feature);
    Field("conv.output_spatial", a.conv.output_spatial, b.conv.output_spatial);
    CompareWindow(a.window, b.window);
    Field("feature_group_count", a.feature_group_count, b.feature_group_count);
    Field("reduce_kind", a.reduce_kind, b.reduce_kind);
    Field("comparison", a.comparison, b.comparison);
    Field("exclusive", a.exclusive, b.exclusive);
    Field("descending", a.descending, b.descending);
    Field("k", a.k, b.k);
    Field("seed", a.seed, b.seed);
    Field("rng_low", a.rng_low, b.rng_low);
    Field("rng_high", a.rng_high, b.rng_high);
    Field("rng_global_dims", a.rng_global_dims, b.rng_global_dims);
    Field("replica_groups", a.replica_groups, b.replica_groups);
    Field("iota_replica_groups",
          a.iota_replica_groups ? a.iota_replica_groups->ToString() : std::string("none"),
          b.iota_replica_groups ? b.iota_replica_groups->ToString() : std::string("none"));
    Field("source_target_pairs", a.source_target_pairs, b.source_target_pairs);
    Field("split_dimension", a.split_dimension, b.split_dimension);
    Field("concat_dimension", a.concat_dimension, b.concat_dimension);
    Field("trip_count", a.trip_count, b.trip_count);
    Field("custom_call_target", a.custom_call_target, b.custom_call_target);
    Field("custom_call_flops", a.custom_call_flops, b.custom_call_flops);
    Field("body", ComputationName(a.body), ComputationName(b.body));
    Field("tuple_index", a.tuple_index, b.tuple_index);
    Field("scope", a.scope, b.scope);
    CompareSharding(a.sharding, b.sharding);
  }

  void CompareComputation(const Computation& a, const Computation& b) {
    where_ = "computation %" + a.name() + ": ";
    Field("name", a.name(), b.name());
    Field("instruction count", a.instructions().size(), b.instructions().size());
    Field("root", InstructionName(a.root()), InstructionName(b.root()));
    for (size_t k = 0; k < a.instructions().size() && diff_.empty(); ++k) {
      where_ = "computation %" + a.name() + ", instruction %" + a.instructions()[k]->name + ": ";
      CompareInstruction(*a.instructions()[k], *b.instructions()[k]);
    }
  }

  std::string where_;
  std::string diff_;
};

// "" when a and b are equal field by field; else the first difference.
inline std::string ModuleDifference(const Module& a, const Module& b) {
  return ModuleDiffer().Compare(a, b);
}

}  // namespace podsim::ir::testing
