// Printer half of the IR text format (ir/text.h); docs/ir.md is the reference. The output is
// canonical: one spelling per module, so Print(Parse(Print(m))) == Print(m).

#include <string>
#include <vector>

#include "ir/text.h"
#include "ir/text_attributes.h"
#include "ir/text_numbers.h"

namespace podsim::ir {

namespace {

using text_internal::AppendDouble;
using text_internal::AppendElement;
using text_internal::AppendInt;
using text_internal::AppendName;
using text_internal::AppendQuoted;
using text_internal::AppendUint;
using text_internal::Attr;
using text_internal::AttrName;

// v[i], or `fallback` when v is too short (only in malformed instructions).
int64_t At(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return i < v.size() ? v[i] : fallback;
}

class InstructionPrinter {
 public:
  explicit InstructionPrinter(std::string* out) : out_(*out) {}

  void Print(const Instruction& i) {
    if (i.parent && i.parent->root() == &i) out_.append("ROOT ");
    out_.push_back('%');
    AppendName(i.name, &out_);
    out_.append(" = ");
    PrintShape(i.shape);
    out_.push_back(' ');
    out_.append(OpcodeName(i.opcode));
    out_.push_back('(');
    if (i.opcode == Opcode::kParameter) {
      AppendInt(i.parameter_number, &out_);
    } else if (i.opcode == Opcode::kConstant) {
      PrintLiteral(i.literal);
    } else {
      for (size_t k = 0; k < i.operands.size(); ++k) {
        if (k) out_.append(", ");
        Operand(i.operands[k]);
      }
    }
    out_.push_back(')');
    for (Attr a : text_internal::OpcodeAttrs(i.opcode)) Attribute(i, a);
    Attribute(i, Attr::kSharding);
    Attribute(i, Attr::kScope);
  }

 private:
  void Operand(const Instruction* o) {
    if (o == nullptr) {
      out_.append("%<null>");
      return;
    }
    out_.push_back('%');
    AppendName(o->name, &out_);
  }

  void PrintShape(const Shape& s) {
    if (s.is_tuple) {
      out_.push_back('(');
      for (size_t k = 0; k < s.tuple_shapes.size(); ++k) {
        if (k) out_.append(", ");
        PrintShape(s.tuple_shapes[k]);
      }
      out_.push_back(')');
      return;
    }
    out_.append(DTypeName(s.dtype));
    out_.push_back('[');
    for (size_t k = 0; k < s.dims.size(); ++k) {
      if (k) out_.push_back(',');
      AppendInt(s.dims[k], &out_);
    }
    out_.push_back(']');
  }

  // Scalars bare ("0.5"); arrays as braces nested per dimension ("{{1, 2}, {3, 4}}").
  void PrintLiteral(const Literal& l) {
    const Shape& s = l.shape;
    if (s.is_tuple || l.NumElements() != s.NumElements()) {
      // Malformed (the verifier rejects it): print the values flat.
      out_.push_back('{');
      for (size_t k = 0; k < l.values.size(); ++k) {
        if (k) out_.append(", ");
        AppendElement(l.values[k], s.dtype, &out_);
      }
      out_.push_back('}');
      return;
    }
    if (s.dims.empty()) {
      AppendElement(l.values[0], s.dtype, &out_);
      return;
    }
    size_t next = 0;
    LiteralDim(l, 0, &next);
  }

  void LiteralDim(const Literal& l, size_t dim, size_t* next) {
    out_.push_back('{');
    const bool innermost = dim + 1 == l.shape.dims.size();
    for (int64_t k = 0; k < l.shape.dims[dim]; ++k) {
      if (k) out_.append(", ");
      if (innermost) {
        AppendElement(l.values[(*next)++], l.shape.dtype, &out_);
      } else {
        LiteralDim(l, dim + 1, next);
      }
    }
    out_.push_back('}');
  }

  void IntList(const std::vector<int64_t>& v) {
    out_.push_back('{');
    for (size_t k = 0; k < v.size(); ++k) {
      if (k) out_.push_back(',');
      AppendInt(v[k], &out_);
    }
    out_.push_back('}');
  }

  // "3x3": one field of every window dim, 'x'-separated.
  template <typename Field>
  void WindowField(const char* name, const std::vector<WindowDim>& w, Field field) {
    out_.append(name);
    for (size_t k = 0; k < w.size(); ++k) {
      if (k) out_.push_back('x');
      field(w[k]);
    }
  }

  void Window(const std::vector<WindowDim>& w) {
    out_.push_back('{');
    if (!w.empty()) {
      bool strided = false, padded = false, lhs_dilated = false, rhs_dilated = false;
      for (const WindowDim& d : w) {
        strided |= d.stride != 1;
        padded |= d.pad_low != 0 || d.pad_high != 0;
        lhs_dilated |= d.base_dilation != 1;
        rhs_dilated |= d.window_dilation != 1;
      }
      WindowField("size=", w, [&](const WindowDim& d) { AppendInt(d.size, &out_); });
      if (strided) {
        WindowField(" stride=", w, [&](const WindowDim& d) { AppendInt(d.stride, &out_); });
      }
      if (padded) {
        WindowField(" pad=", w, [&](const WindowDim& d) {
          AppendInt(d.pad_low, &out_);
          out_.push_back('_');
          AppendInt(d.pad_high, &out_);
        });
      }
      if (lhs_dilated) {
        WindowField(" lhs_dilate=", w,
                    [&](const WindowDim& d) { AppendInt(d.base_dilation, &out_); });
      }
      if (rhs_dilated) {
        WindowField(" rhs_dilate=", w,
                    [&](const WindowDim& d) { AppendInt(d.window_dilation, &out_); });
      }
    }
    out_.push_back('}');
  }

  // One operand's labels: `a`/`b` at their positions, spatial dim k as the digit k.
  void Labels(char a, int64_t a_dim, char b, int64_t b_dim, const std::vector<int64_t>& spatial) {
    std::string labels(spatial.size() + 2, '?');
    auto put = [&](int64_t pos, char c) {
      if (pos >= 0 && pos < static_cast<int64_t>(labels.size())) labels[pos] = c;
    };
    put(a_dim, a);
    put(b_dim, b);
    for (size_t k = 0; k < spatial.size(); ++k) {
      put(spatial[k], k < 10 ? static_cast<char>('0' + k) : '?');
    }
    out_.append(labels);
  }

  void DimLabels(const ConvDims& c) {
    Labels('b', c.input_batch, 'f', c.input_feature, c.input_spatial);
    out_.push_back('_');
    Labels('i', c.kernel_input_feature, 'o', c.kernel_output_feature, c.kernel_spatial);
    out_.append("->");
    Labels('b', c.output_batch, 'f', c.output_feature, c.output_spatial);
  }

  void Slice(const Instruction& i) {
    out_.push_back('{');
    for (size_t d = 0; d < i.slice_starts.size(); ++d) {
      if (d) out_.append(", ");
      out_.push_back('[');
      AppendInt(i.slice_starts[d], &out_);
      out_.push_back(':');
      AppendInt(At(i.slice_limits, d, 0), &out_);
      int64_t stride = At(i.slice_strides, d, 1);
      if (stride != 1) {
        out_.push_back(':');
        AppendInt(stride, &out_);
      }
      out_.push_back(']');
    }
    out_.push_back('}');
  }

  void Padding(const std::vector<PadDim>& padding) {
    if (padding.empty()) {
      out_.append("{}");
      return;
    }
    for (size_t d = 0; d < padding.size(); ++d) {
      if (d) out_.push_back('x');
      AppendInt(padding[d].low, &out_);
      out_.push_back('_');
      AppendInt(padding[d].high, &out_);
      out_.push_back('_');
      AppendInt(padding[d].interior, &out_);
    }
  }

  void Groups(const std::vector<std::vector<int64_t>>& groups) {
    out_.push_back('{');
    for (size_t g = 0; g < groups.size(); ++g) {
      if (g) out_.push_back(',');
      IntList(groups[g]);
    }
    out_.push_back('}');
  }

  void Pairs(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
    out_.push_back('{');
    for (size_t k = 0; k < pairs.size(); ++k) {
      if (k) out_.push_back(',');
      out_.push_back('{');
      AppendInt(pairs[k].first, &out_);
      out_.push_back(',');
      AppendInt(pairs[k].second, &out_);
      out_.push_back('}');
    }
    out_.push_back('}');
  }

  // Whether a kWhenSet attribute differs from the Instruction default.
  static bool IsSet(const Instruction& i, Attr a) {
    switch (a) {
      case Attr::kLhsBatchDims: return !i.dot.lhs_batch.empty();
      case Attr::kRhsBatchDims: return !i.dot.rhs_batch.empty();
      case Attr::kLhsContractingDims: return !i.dot.lhs_contracting.empty();
      case Attr::kRhsContractingDims: return !i.dot.rhs_contracting.empty();
      case Attr::kFeatureGroupCount: return i.feature_group_count != 1;
      case Attr::kExclusive: return i.exclusive;
      case Attr::kDescending: return i.descending;
      case Attr::kSharding: return i.sharding.has_value();
      case Attr::kRange: return i.argument_range.has_value();
      case Attr::kFlops: return i.custom_call_flops != 0;
      case Attr::kRegion: return i.body != nullptr;
      case Attr::kRegionDims: return !i.dimensions.empty();
      case Attr::kRegionWindow: return !i.window.empty();
      case Attr::kScope: return !i.scope.empty();
      default: return true;
    }
  }

  // Appends ", name=value" unless the attribute prints only when set and is not.
  void Attribute(const Instruction& i, Attr a) {
    if (text_internal::AttrPresence(a) == text_internal::Presence::kWhenSet && !IsSet(i, a)) {
      return;
    }
    out_.append(", ");
    out_.append(AttrName(a));
    out_.push_back('=');
    switch (a) {
      case Attr::kDimensions: IntList(i.dimensions); break;
      case Attr::kSlice: Slice(i); break;
      case Attr::kDynamicSliceSizes: IntList(i.slice_sizes); break;
      case Attr::kPadding: Padding(i.padding); break;
      case Attr::kLhsBatchDims: IntList(i.dot.lhs_batch); break;
      case Attr::kRhsBatchDims: IntList(i.dot.rhs_batch); break;
      case Attr::kLhsContractingDims: IntList(i.dot.lhs_contracting); break;
      case Attr::kRhsContractingDims: IntList(i.dot.rhs_contracting); break;
      case Attr::kWindow:
      case Attr::kRegionWindow: Window(i.window); break;
      case Attr::kDimLabels: DimLabels(i.conv); break;
      case Attr::kFeatureGroupCount: AppendInt(i.feature_group_count, &out_); break;
      case Attr::kKind: out_.append(ReduceKindName(i.reduce_kind)); break;
      case Attr::kDirection: out_.append(ComparisonName(i.comparison)); break;
      case Attr::kExclusive: out_.append(i.exclusive ? "true" : "false"); break;
      case Attr::kDescending: out_.append(i.descending ? "true" : "false"); break;
      case Attr::kK: AppendInt(i.k, &out_); break;
      case Attr::kSeed: AppendUint(i.seed, &out_); break;
      case Attr::kLow: AppendDouble(i.rng_low, &out_); break;
      case Attr::kHigh: AppendDouble(i.rng_high, &out_); break;
      case Attr::kGlobalDims: IntList(i.rng_global_dims); break;
      case Attr::kReplicaGroups:
        if (i.iota_replica_groups) {
          out_.append(i.iota_replica_groups->ToString());
        } else {
          Groups(i.replica_groups);
        }
        break;
      case Attr::kSourceTargetPairs: Pairs(i.source_target_pairs); break;
      case Attr::kSplitDimension: AppendInt(i.split_dimension, &out_); break;
      case Attr::kConcatDimension: AppendInt(i.concat_dimension, &out_); break;
      case Attr::kTripCount: AppendInt(i.trip_count, &out_); break;
      case Attr::kBody:
      case Attr::kRegion:
        out_.push_back('%');
        AppendName(i.body ? std::string_view(i.body->name()) : std::string_view("<null>"), &out_);
        break;
      case Attr::kIndex: AppendInt(i.tuple_index, &out_); break;
      case Attr::kTiling:
        out_.append(i.tiling ? i.tiling->ToString() : std::string("{none}"));
        break;
      case Attr::kSharding: out_.append(i.sharding->ToString()); break;
      case Attr::kRange:
        out_.push_back('{');
        AppendDouble(i.argument_range->first, &out_);
        out_.push_back(',');
        AppendDouble(i.argument_range->second, &out_);
        out_.push_back('}');
        break;
      case Attr::kScope: AppendQuoted(i.scope, &out_); break;
      case Attr::kCustomCallTarget: AppendQuoted(i.custom_call_target, &out_); break;
      case Attr::kFlops: AppendDouble(i.custom_call_flops, &out_); break;
      case Attr::kRegionDims: IntList(i.dimensions); break;
    }
  }

  std::string& out_;
};

}  // namespace

std::string PrintInstruction(const Instruction& instr) {
  std::string out;
  InstructionPrinter(&out).Print(instr);
  return out;
}

std::string PrintModule(const Module& module) {
  std::string out;
  out.reserve(static_cast<size_t>(module.InstructionCount()) * 96 + 64);
  InstructionPrinter printer(&out);
  out.append("HloModule ");
  AppendName(module.name(), &out);
  if (!module.output_aliases().empty()) {
    // HLO's syntax: {output index}: (parameter number, {parameter index}, kind).
    out.append(", input_output_alias={ ");
    bool first = true;
    for (const OutputAlias& a : module.output_aliases()) {
      if (!first) out.append(", ");
      first = false;
      out.append("{" + std::to_string(a.output) + "}: (" + std::to_string(a.parameter) +
                 ", {}, may-alias)");
    }
    out.append(" }");
  }
  out.push_back('\n');
  for (const auto& c : module.computations()) {
    out.push_back('\n');
    if (c.get() == module.entry()) out.append("ENTRY ");
    out.push_back('%');
    AppendName(c->name(), &out);
    out.append(" {\n");
    for (const auto& i : c->instructions()) {
      out.append("  ");
      printer.Print(*i);
      out.push_back('\n');
    }
    out.append("}\n");
  }
  return out;
}

}  // namespace podsim::ir
