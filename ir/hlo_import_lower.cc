// Lowers hlo_internal::HloText to podsim's IR (ir/hlo_import.h), checking every instruction's
// declared shape against podsim's shape rules as it goes so that an error names its line: the
// driver, the generic ops and parameters (ir/hlo_import_lower.h says where the rest is).
// docs/hlo-import.md is the table of what becomes what.

#include "ir/hlo_import_lower.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace hlo_internal {

void Lowerer::Run() {
  out_.module = std::make_unique<Module>(text_.name);
  DecidePartitioned();
  const HloComputation& entry = text_.computations[text_.entry];
  Computation* c = out_.module->AddComputation(entry.name, /*is_entry=*/true);
  Instruction* root = Lower(entry, c, ParamMode::kEntry, {});
  c->set_root(root);
  SetAliases(entry, root);
  out_.module->OrderComputations();
  out_.module->RemoveDeadCode();
  try {
    Verify(*out_.module);
  } catch (const Error& e) {
    lex_.Fail(entry.loc, std::string("the imported module does not verify: ") + e.what());
  }
}

const HloComputation& Lowerer::Callee(const NameRef& ref) const {
  auto it = text_.by_name.find(ref.name);
  if (it == text_.by_name.end()) Fail(ref.loc, "%" + ref.name + " names no computation");
  return text_.computations[it->second];
}

void Lowerer::DecidePartitioned() {
  bool spmd = text_.computations[text_.entry].name.ends_with("_spmd");
  int64_t devices = text_.num_partitions;
  for (const HloComputation& c : text_.computations) {
    for (const HloInstr& i : c.instrs) {
      Opcode op;
      const bool collective = ParseOpcode(i.opcode, &op) && IsCollective(op);
      if (collective || i.opcode == "partition-id" || i.opcode.ends_with("-start")) spmd = true;
      if (text_.num_partitions == 0 && (collective || i.opcode.ends_with("-start"))) {
        if (i.attrs.iota_replica_groups) {
          devices = std::max(devices, i.attrs.iota_replica_groups->devices.size());
        }
        for (const auto& g : i.attrs.replica_groups) {
          for (int64_t d : g) devices = std::max(devices, d + 1);
        }
        for (const auto& [s, t] : i.attrs.source_target_pairs) {
          devices = std::max({devices, s + 1, t + 1});
        }
      }
    }
  }
  out_.partitioned = spmd;
  out_.num_partitions = devices;
}

std::string Lowerer::ScopeOf(const HloInstr& h) {
  const size_t slash = h.op_name.rfind('/');
  return slash == std::string::npos ? h.op_name : h.op_name.substr(0, slash);
}

Instruction* Lowerer::Emit(Computation* c, const HloInstr& h, Opcode op, const Shape& shape,
                           std::vector<Instruction*> operands, const std::string& name) {
  auto ins = std::make_unique<Instruction>(h.attrs);
  ins->opcode = op;
  ins->shape = shape;
  ins->operands = std::move(operands);
  ins->name = name.empty() ? h.name : name;
  ins->scope = ScopeOf(h);
  if (out_.partitioned) ins->sharding.reset();
  Instruction* added = c->Add(std::move(ins));
  CheckShapeRule(added, h);
  return added;
}

void Lowerer::CheckShapeRule(const Instruction* added, const HloInstr& h) const {
  Shape expected;
  try {
    expected = InferShape(*added);
  } catch (const Error& e) {
    Fail(h.loc, std::string(e.what()));
  }
  if (expected != added->shape) {
    Fail(h.shape_loc, h.name + ": shape " + added->shape.ToString() + " does not match the " +
                          std::string(OpcodeName(added->opcode)) + " shape rule, which gives " +
                          expected.ToString());
  }
}

Instruction* Lowerer::Operand(const Values& values, const HloInstr& h, size_t k) const {
  if (k >= h.operands.size()) {
    Fail(h.opcode_loc, h.opcode + " " + h.name + " needs at least " + std::to_string(k + 1) +
                           " operand(s), got " + std::to_string(h.operands.size()));
  }
  const NameRef& r = h.operands[k];
  auto it = values.find(r.name);
  if (it == values.end()) {
    Fail(r.loc, "%" + r.name + " is not defined before its use in this computation");
  }
  return it->second;
}

void Lowerer::RequireOperands(const HloInstr& h, size_t n) const {
  if (h.operands.size() != n) {
    Fail(h.opcode_loc, h.opcode + " takes " + std::to_string(n) + " operand(s), got " +
                           std::to_string(h.operands.size()));
  }
}

Instruction* Lowerer::LowerOne(Computation* c, Values& v, const HloInstr& h) {
  const std::string& op = h.opcode;
  if (op == "constant") {
    HloInstr k = h;
    k.attrs.literal = *h.literal;
    if (h.Has("elided")) {
      Warn(h.loc, "constant " + h.name + " was printed elided ({...}): its values are zeros");
    }
    return Emit(c, k, Opcode::kConstant, h.shape, {});
  }
  if (op == "copy" || op == "opt-barrier") {
    RequireOperands(h, 1);
    return Operand(v, h, 0);  // layouts and scheduling barriers: no value change
  }
  if (op == "bitcast") {
    RequireOperands(h, 1);
    Instruction* x = Operand(v, h, 0);
    if (x->shape.is_tuple || x->shape.dtype != h.shape.dtype) {
      Fail(h.opcode_loc, "bitcast " + h.name +
                             " changes the element type: podsim reads "
                             "bitcasts that reshape only");
    }
    return x->shape == h.shape ? x : Emit(c, h, Opcode::kReshape, h.shape, {x});
  }
  if (op == "get-tuple-element") {
    RequireOperands(h, 1);
    Instruction* t = Operand(v, h, 0);
    if (!t->shape.is_tuple || h.tuple_index < 0 ||
        h.tuple_index >= static_cast<int64_t>(t->shape.tuple_shapes.size())) {
      Fail(h.opcode_loc, "get-tuple-element " + h.name +
                             ": index=" + std::to_string(h.tuple_index) + " is not an element of " +
                             t->shape.ToString());
    }
    if (t->opcode == Opcode::kTuple) return t->operands[static_cast<size_t>(h.tuple_index)];
    HloInstr g = h;
    g.attrs.tuple_index = h.tuple_index;
    return Emit(c, g, Opcode::kGetTupleElement, h.shape, {t});
  }
  if (op == "reduce" || op == "reduce-window") return LowerReduce(c, v, h);
  if (op == "batch-norm-training" || op == "batch-norm-grad") return LowerBatchNorm(c, v, h);
  if (op == "bitcast-convert") {
    // Reinterpreting bits: the same type is the value itself; another type is a kernel that
    // reads and writes the bytes (its values are not interpretable).
    RequireOperands(h, 1);
    Instruction* x = Operand(v, h, 0);
    if (x->shape == h.shape) return x;
    return Opaque(c, v, h, 0);
  }
  if (op == "clamp") return LowerClamp(c, v, h);
  if (op == "gather") return LowerGather(c, v, h);
  if (op == "scatter") return LowerScatter(c, v, h);
  if (op == "sort") return LowerSort(c, v, h);
  if (op == "reduce-precision") return LowerReducePrecision(c, v, h);
  if (op == "call" || op == "fusion") return LowerCall(c, v, h);
  if (op == "conditional") return LowerConditional(c, v, h);
  if (op.ends_with("-start") || op.ends_with("-done") || op == "async-update") {
    return LowerAsync(c, v, h);
  }
  if (op == "all-to-all" && h.attrs.dimensions.empty()) return LowerTupleAllToAll(c, v, h);
  if (op == "select-and-scatter") return LowerSelectAndScatter(c, v, h);
  if (op == "rng-bit-generator") {
    // Random bits: a kernel writing the new state and the bits, one op per element.
    return Opaque(c, v, h, h.shape.is_tuple && h.shape.tuple_shapes.size() == 2
                               ? static_cast<double>(h.shape.tuple_shapes[1].NumElements())
                               : 0);
  }
  if (op == "while") return LowerWhile(c, v, h);
  if (op == "custom-call") return LowerCustomCall(c, v, h);
  if (op == "iota") {
    if (h.iota_dimension < 0) Fail(h.opcode_loc, "iota " + h.name + " needs iota_dimension=");
    HloInstr i = h;
    i.attrs.dimensions = {h.iota_dimension};
    return Emit(c, i, Opcode::kIota, h.shape, {});
  }
  if (op == "partition-id") {
    // podsim's partition-id is s32; XLA's is u32.
    Instruction* id = Emit(c, h, Opcode::kPartitionId, Shape(DType::kS32, {}), {},
                           h.shape.dtype == DType::kS32 ? "" : h.name + ".s32");
    if (h.shape.dtype == DType::kS32) return id;
    return Make(c, h, Opcode::kConvert, h.shape, {id}, "");
  }
  Opcode opcode;
  if (!ParseOpcode(op, &opcode) || opcode == Opcode::kLoop || opcode == Opcode::kParameter ||
      opcode == Opcode::kArgmax || opcode == Opcode::kCumsum || opcode == Opcode::kTopK ||
      opcode == Opcode::kRandomUniform || opcode == Opcode::kAutoToManual || opcode == Opcode::kManualToAuto) {
    Fail(h.opcode_loc, "opcode '" + op + "' is not supported by the HLO importer yet");
  }
  HloInstr e = h;
  if (IsCollective(opcode) && opcode != Opcode::kAllGather && opcode != Opcode::kAllToAll &&
      opcode != Opcode::kCollectivePermute) {
    e.attrs.reduce_kind = KindOf(h);
  }
  if (opcode == Opcode::kAllToAll) {
    if (h.attrs.dimensions.size() != 1) {
      Fail(h.opcode_loc, "all-to-all " + h.name + " needs one dimensions={d}");
    }
    e.attrs.split_dimension = e.attrs.concat_dimension = h.attrs.dimensions[0];
  }
  if (opcode == Opcode::kDot && h.operands.size() == 2 && !h.shape.is_tuple) {
    if (Instruction* mixed = LowerMixedDot(c, v, h)) return mixed;
  }
  if (opcode == Opcode::kConvolution && h.ints.count("batch_group_count") &&
      h.ints.at("batch_group_count") != 1) {
    // A filter gradient with batch groups (of a depthwise convolution): podsim's convolution
    // has feature groups only, so it is an opaque kernel with the convolution's flops, two per
    // multiply-add: output elements x kernel window x input features per output feature
    // (the kernel's input-feature dim).
    RequireOperands(h, 2);
    const Shape& k = Operand(v, h, 1)->shape;
    const ConvDims& cd = h.attrs.conv;
    auto kernel_dim = [&](int64_t d) {
      if (k.is_tuple || d < 0 || d >= k.rank() || !h.Has("dim_labels")) {
        Fail(h.opcode_loc,
             "convolution " + h.name + ": dim_labels do not fit its kernel " + k.ToString());
      }
      return static_cast<double>(k.dims[static_cast<size_t>(d)]);
    };
    double window = kernel_dim(cd.kernel_input_feature);
    for (int64_t d : cd.kernel_spatial) window *= kernel_dim(d);
    return Opaque(c, v, h, 2.0 * static_cast<double>(h.shape.NumElements()) * window);
  }
  std::vector<Instruction*> operands;
  for (size_t k = 0; k < h.operands.size(); ++k) operands.push_back(Operand(v, h, k));
  return Emit(c, e, opcode, h.shape, std::move(operands));
}

Instruction* Lowerer::Lower(const HloComputation& hc, Computation* target, ParamMode mode,
                            const std::vector<Instruction*>& args, bool tuple_state) {
  if (++depth_ > 64) Fail(hc.loc, "calls nest more than 64 deep (or recurse)");
  Values values;
  values.reserve(hc.instrs.size());
  std::vector<Instruction*> loop_params;
  if (mode == ParamMode::kLoop) {
    HloInstr it;
    it.name = "iteration";
    Instruction* iter =
        Emit(target, it, Opcode::kParameter, Shape(DType::kS32, {}), {}, hc.name + ".iteration");
    iter->parameter_number = 0;
    for (size_t k = 0; k < args.size(); ++k) {
      HloInstr p;
      p.name = hc.name + ".carried";
      p.attrs.parameter_number = static_cast<int64_t>(k + 1);
      loop_params.push_back(Emit(target, p, Opcode::kParameter, args[k]->shape, {}));
    }
  }
  for (const HloInstr& h : hc.instrs) {
    Instruction* value = nullptr;
    if (h.opcode == "parameter") {
      const int64_t n = h.attrs.parameter_number;
      if (mode == ParamMode::kEntry) {
        HloInstr p = h;
        p.attrs.parameter_number = n;
        value = Emit(target, p, Opcode::kParameter, h.shape, {});
      } else if (mode == ParamMode::kInline) {
        if (n < 0 || static_cast<size_t>(n) >= args.size()) {
          Fail(h.loc, "parameter(" + std::to_string(n) + ") of " + hc.name + " has no operand");
        }
        value = args[static_cast<size_t>(n)];
      } else {
        if (n != 0) Fail(h.loc, "a while body takes one parameter, parameter(0)");
        if (!tuple_state) {
          value = loop_params[0];
        } else {
          std::vector<Shape> shapes;
          for (Instruction* p : loop_params) shapes.push_back(p->shape);
          value = Make(target, h, Opcode::kTuple, Shape::Tuple(shapes), loop_params, "");
        }
      }
      if (value->shape != h.shape) {
        Fail(h.shape_loc, "parameter " + h.name + " is " + h.shape.ToString() + ", its value is " +
                              value->shape.ToString());
      }
    } else {
      value = LowerOne(target, values, h);
    }
    if (!h.tuple_sharding.empty() && !out_.partitioned) value = ShardElements(target, h, value);
    values[h.name] = value;
  }
  --depth_;
  return values.at(hc.instrs[hc.root].name);
}

Instruction* Lowerer::ShardElements(Computation* c, const HloInstr& h, Instruction* value) {
  const Shape& s = value->shape;
  const bool flat = s.is_tuple && std::none_of(s.tuple_shapes.begin(), s.tuple_shapes.end(),
                                               [](const Shape& e) { return e.is_tuple; });
  if (!flat || s.tuple_shapes.size() != h.tuple_sharding.size()) {
    Warn(h.loc, h.name + ": a tuple sharding of " + std::to_string(h.tuple_sharding.size()) +
                    " elements for " + s.ToString() +
                    " (podsim reads it on a flat tuple of as many); dropped");
    return value;
  }
  // Element k annotated as a Sharding custom-call is: a same-shape reshape carrying it.
  std::vector<Instruction*> elements;
  for (size_t k = 0; k < s.tuple_shapes.size(); ++k) {
    Instruction* e = Element(c, h, value, static_cast<int64_t>(k));
    elements.push_back(Make(c, h, Opcode::kReshape, e->shape, {e}, "sharded",
                            [&](Instruction& a) { a.sharding = h.tuple_sharding[k]; }));
    elements.back()->scope = e->scope;  // an annotation of e: its time is e's layer's
  }
  return Make(c, h, Opcode::kTuple, s, elements, "sharded");
}

void Lowerer::SetAliases(const HloComputation& entry, const Instruction* root) {
  std::vector<OutputAlias> aliases;
  const auto params = out_.module->entry()->parameters();
  for (const auto& [output, parameter] : text_.aliases) {
    const bool ok = root->shape.is_tuple && output >= 0 &&
                    output < static_cast<int64_t>(root->shape.tuple_shapes.size()) &&
                    parameter >= 0 && parameter < static_cast<int64_t>(params.size()) &&
                    root->shape.tuple_shapes[static_cast<size_t>(output)] ==
                        params[static_cast<size_t>(parameter)]->shape;
    if (ok) {
      aliases.push_back({output, parameter});
    } else {
      Warn(entry.loc, "input_output_alias {" + std::to_string(output) + "}: (" +
                          std::to_string(parameter) + ") does not match the shapes; dropped");
    }
  }
  out_.module->set_output_aliases(std::move(aliases));
}

}  // namespace hlo_internal

HloImport ImportHlo(std::string_view text, const std::string& filename,
                    const HloImportOptions& options) {
  text_internal::Lexer lex(text, filename);
  hlo_internal::HloText parsed = hlo_internal::ParseHloText(lex);
  HloImport out;
  hlo_internal::Lowerer(parsed, lex, options, out).Run();
  return out;
}

bool LooksLikeXlaHlo(std::string_view text) {
  for (std::string_view marker : {"]{", "to_apply=", "entry_computation_layout", "metadata={",
                                  "backend_config=", " while(", " call(", "iota_dimension="}) {
    if (text.find(marker) != std::string_view::npos) return true;
  }
  // An instruction named without '%' ("  x = f32[2] ...").
  size_t line = 0;
  for (int n = 0; n < 64 && line < text.size(); ++n) {
    const size_t end = std::min(text.find('\n', line), text.size());
    std::string_view l = text.substr(line, end - line);
    const size_t first = l.find_first_not_of(" \t");
    if (first != std::string_view::npos) {
      l.remove_prefix(first);
      if (l.starts_with("ROOT ")) l.remove_prefix(5);
      const size_t eq = l.find(" = ");
      if (eq != std::string_view::npos && eq > 0 && l[0] != '%' && l[0] != '/' &&
          l.substr(0, eq).find_first_of(" ,(){}") == std::string_view::npos) {
        return true;
      }
    }
    line = end + 1;
  }
  return false;
}

}  // namespace podsim::ir
