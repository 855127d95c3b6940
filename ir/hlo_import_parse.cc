// Reads XLA HLO text into hlo_internal::HloText (ir/hlo_import_internal.h): the module as
// written, every attribute podsim uses parsed in place (so errors point at their token), every
// other attribute skipped whole.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/hlo_import_internal.h"
#include "ir/text_values.h"

namespace podsim::ir::hlo_internal {

using text_internal::Lexer;

bool HloInstr::Has(std::string_view key) const {
  for (const std::string& k : seen) {
    if (k == key) return true;
  }
  return false;
}

namespace {

class HloParser {
 public:
  explicit HloParser(Lexer& lex) : lex_(lex) {}

  HloText Run() {
    if (!lex_.ConsumeKeyword("HloModule")) {
      lex_.FailHere("expected 'HloModule <name>' at the start, got " + lex_.Describe());
    }
    out_.name = lex_.Name("a module name");
    while (lex_.Consume(',')) HeaderAttribute();
    bool has_entry = false;
    while (!lex_.AtEnd()) {
      HloComputation c = Computation();
      if (c.is_entry) {
        if (has_entry) {
          lex_.Fail(c.loc, "a second ENTRY computation; %" +
                               out_.computations[out_.entry].name + " is already the entry");
        }
        has_entry = true;
        out_.entry = out_.computations.size();
      }
      if (!out_.by_name.emplace(c.name, out_.computations.size()).second) {
        lex_.Fail(c.loc, "computation " + c.name + " is defined twice");
      }
      out_.computations.push_back(std::move(c));
    }
    if (out_.computations.empty()) lex_.FailHere("module has no computations");
    // Without ENTRY, XLA takes the last computation as the entry.
    if (!has_entry) {
      out_.entry = out_.computations.size() - 1;
      out_.computations[out_.entry].is_entry = true;
    }
    return std::move(out_);
  }

 private:
  // An optional '%' and a name.
  NameRef Ref(std::string_view what) {
    NameRef r;
    r.loc = lex_.Here();
    lex_.Consume('%');
    r.name = lex_.Name(what);
    return r;
  }

  void HeaderAttribute() {
    const Loc at = lex_.Here();
    const std::string key(lex_.Word());
    if (key.empty()) lex_.Fail(at, "expected a module attribute, got " + lex_.Describe());
    lex_.Expect('=', [&] { return "after module attribute " + key; });
    if (key == "num_partitions") {
      out_.num_partitions = lex_.Int();
      if (out_.num_partitions < 1) lex_.Fail(at, "num_partitions must be >= 1");
    } else if (key == "input_output_alias") {
      Aliases();
    } else {
      lex_.RawValue(key);  // entry_computation_layout, is_scheduled, replica_count, ...
    }
  }

  // { {0}: (0, {}, may-alias), {1, 2}: (3, {0}), ... }: top-level outputs aliasing whole
  // parameters are kept; nested ones are skipped (podsim's aliases are top-level).
  void Aliases() {
    lex_.Expect('{', "to open input_output_alias");
    while (!lex_.Consume('}')) {
      if (lex_.AtEnd()) lex_.FailHere("input_output_alias is not closed with '}'");
      lex_.Consume(',');
      std::vector<int64_t> output = text_internal::ReadIntList(lex_);
      lex_.Expect(':', "after an aliased output index");
      lex_.Expect('(', "before the aliased parameter");
      const int64_t parameter = lex_.Int();
      lex_.Expect(',', "after the parameter number");
      std::vector<int64_t> param_index = text_internal::ReadIntList(lex_);
      if (lex_.Consume(',')) lex_.Word();  // may-alias / must-alias
      lex_.Expect(')', "to close an input_output_alias entry");
      if (output.size() == 1 && param_index.empty()) {
        out_.aliases.emplace_back(output[0], parameter);
      }
    }
  }

  HloComputation Computation() {
    HloComputation c;
    c.loc = lex_.Here();
    c.is_entry = lex_.ConsumeKeyword("ENTRY");
    if (!lex_.Peek('%') && lex_.PeekWord().empty()) {
      lex_.FailHere("expected a computation ('name {' or 'ENTRY name {'), got " +
                    lex_.Describe());
    }
    c.name = Ref("a computation name").name;
    if (lex_.Peek('(')) lex_.Balanced("the computation's signature");
    if (lex_.Consume("->")) Shape();
    lex_.Expect('{', [&] { return "to open computation " + c.name; });
    bool has_root = false;
    while (!lex_.Consume('}')) {
      if (lex_.AtEnd()) lex_.Fail(c.loc, "computation " + c.name + " is not closed with '}'");
      HloInstr i = Instr();
      if (i.is_root) {
        if (has_root) lex_.Fail(i.loc, "a second ROOT in computation " + c.name);
        has_root = true;
        c.root = c.instrs.size();
      }
      if (!c.by_name.emplace(i.name, c.instrs.size()).second) {
        lex_.Fail(i.loc, "instruction " + i.name + " is defined twice in computation " + c.name);
      }
      c.instrs.push_back(std::move(i));
    }
    if (c.instrs.empty()) lex_.Fail(c.loc, "computation " + c.name + " has no instructions");
    if (!has_root) c.root = c.instrs.size() - 1;
    return c;
  }

  ir::Shape Shape() { return text_internal::ReadShape(lex_, /*xla_layouts=*/true); }

  HloInstr Instr() {
    HloInstr i;
    i.loc = lex_.Here();
    i.is_root = lex_.ConsumeKeyword("ROOT");
    if (!lex_.Peek('%') && lex_.PeekWord().empty()) {
      lex_.FailHere("expected an instruction 'name = shape opcode(...)' or '}', got " +
                    lex_.Describe());
    }
    i.name = Ref("an instruction name").name;
    lex_.Expect('=', [&] { return "after " + i.name; });
    i.shape_loc = lex_.Here();
    i.shape = Shape();
    i.opcode_loc = lex_.Here();
    i.opcode = std::string(lex_.Word());
    if (i.opcode.empty()) lex_.FailHere("expected an opcode after the shape, got " + lex_.Describe());
    lex_.Expect('(', [&] { return "after opcode " + i.opcode; });
    if (i.opcode == "constant") {
      Constant(i);
    } else if (i.opcode == "parameter") {
      const Loc n_loc = lex_.Here();
      i.attrs.parameter_number = lex_.Int();
      if (i.attrs.parameter_number < 0) lex_.Fail(n_loc, "parameter number must be >= 0");
      lex_.Expect(')', "after the parameter number");
    } else if (!lex_.Consume(')')) {
      do {
        i.operands.push_back(Operand());
      } while (lex_.Consume(','));
      lex_.Expect(')', "to close the operand list");
    }
    while (lex_.Consume(',')) Attribute(i);
    return i;
  }

  void Constant(HloInstr& i) {
    const Loc loc = lex_.Here();
    if (i.shape.is_tuple) lex_.Fail(loc, "tuple constants are not supported");
    const Lexer::Mark mark = lex_.Save();
    if (lex_.Consume('{') && lex_.Consume("...") && lex_.Consume('}')) {
      // XLA elides large constants when printing: their values are unknown.
      i.literal = Literal::Zeros(i.shape);
      i.seen.push_back("elided");
    } else {
      lex_.Restore(mark);
      i.literal = text_internal::ReadLiteral(lex_, i.shape);
    }
    lex_.Expect(')', "to close the constant");
  }

  // [shape] [%]name. A typed operand starts with a tuple shape '(' or a type followed by '['.
  NameRef Operand() {
    if (lex_.Peek('(')) {
      Shape();
    } else {
      const Lexer::Mark mark = lex_.Save();
      DType t;
      const std::string_view w = lex_.Word();
      if (LookupDType(w, &t) && lex_.Peek('[')) {
        lex_.Restore(mark);
        Shape();
      } else {
        lex_.Restore(mark);
      }
    }
    return Ref("an operand name");
  }

  void Attribute(HloInstr& i) {
    const Loc at = lex_.Here();
    const std::string key(lex_.Word());
    if (key.empty()) lex_.Fail(at, "expected an attribute name, got " + lex_.Describe());
    lex_.Expect('=', [&] { return "after attribute name " + key; });
    i.seen.push_back(key);
    Instruction& a = i.attrs;
    namespace tv = text_internal;
    if (key == "dimensions") {
      a.dimensions = tv::ReadIntList(lex_);
    } else if (key == "slice") {
      tv::ReadSlice(lex_, a);
    } else if (key == "padding") {
      tv::ReadPadding(lex_, a);
    } else if (key == "window") {
      tv::ReadWindow(lex_, a);
    } else if (key == "dim_labels") {
      tv::ReadDimLabels(lex_, a);
    } else if (key == "lhs_batch_dims") {
      a.dot.lhs_batch = tv::ReadIntList(lex_);
    } else if (key == "rhs_batch_dims") {
      a.dot.rhs_batch = tv::ReadIntList(lex_);
    } else if (key == "lhs_contracting_dims") {
      a.dot.lhs_contracting = tv::ReadIntList(lex_);
    } else if (key == "rhs_contracting_dims") {
      a.dot.rhs_contracting = tv::ReadIntList(lex_);
    } else if (key == "feature_group_count") {
      a.feature_group_count = lex_.Int();
    } else if (key == "direction") {
      const Loc loc = lex_.Here();
      const std::string_view w = lex_.Word();
      if (!ParseComparison(w, &a.comparison)) {
        lex_.Fail(loc, "unknown comparison direction '" + std::string(w) +
                           "' (expected EQ, NE, LT, LE, GT or GE)");
      }
    } else if (key == "replica_groups") {
      if (lex_.Peek('[')) {
        a.iota_replica_groups = tv::ReadIotaGroups(lex_);
      } else {
        a.replica_groups = tv::ReadGroups(lex_);
      }
    } else if (key == "source_target_pairs") {
      tv::ReadPairs(lex_, a);
    } else if (key == "dynamic_slice_sizes") {
      a.slice_sizes = tv::ReadIntList(lex_);
    } else if (key == "sharding") {
      ShardingAttr(i);
    } else if (key == "to_apply") {
      i.to_apply = Ref("a computation name");
    } else if (key == "condition") {
      i.condition = Ref("a computation name");
    } else if (key == "select") {
      i.select = Ref("a computation name");
    } else if (key == "scatter") {
      i.scatter = Ref("a computation name");
    } else if (key == "body") {
      i.body = Ref("a computation name");
    } else if (key == "calls") {
      i.calls = Ref("a computation name");
    } else if (key == "true_computation") {
      i.true_computation = Ref("a computation name");
    } else if (key == "false_computation") {
      i.false_computation = Ref("a computation name");
    } else if (key == "branch_computations") {
      lex_.Expect('{', "to open branch_computations={...}");
      if (!lex_.Consume('}')) {
        do {
          i.branch_computations.push_back(Ref("a computation name"));
        } while (lex_.Consume(','));
        lex_.Expect('}', "to close branch_computations");
      }
    } else if (key == "custom_call_target") {
      i.custom_call_target = lex_.Name("a custom-call target");
    } else if (key == "backend_config") {
      i.backend_config = std::string(lex_.Peek('"') ? lex_.QuotedString()
                                                    : std::string(lex_.RawValue(key)));
    } else if (key == "metadata") {
      i.op_name = OpName(lex_.Balanced("metadata={...}"));
    } else if (key == "iota_dimension") {
      i.iota_dimension = lex_.Int();
    } else if (key == "index") {
      i.tuple_index = lex_.Int();
    } else if (key == "exponent_bits") {
      i.exponent_bits = lex_.Int();
    } else if (key == "mantissa_bits") {
      i.mantissa_bits = lex_.Int();
    } else if (key == "epsilon") {
      i.epsilon = lex_.Double();
    } else if (key == "largest") {
      i.largest = tv::ReadBool(lex_);
    } else if (key == "offset_dims" || key == "collapsed_slice_dims" ||
               key == "start_index_map" || key == "slice_sizes" ||
               key == "update_window_dims" || key == "inserted_window_dims" ||
               key == "scatter_dims_to_operand_dims" || key == "operand_batching_dims" ||
               key == "start_indices_batching_dims" || key == "input_batching_dims" ||
               key == "scatter_indices_batching_dims") {
      i.int_lists[key] = tv::ReadIntList(lex_);
    } else if (key == "index_vector_dim" || key == "feature_index" ||
               key == "batch_group_count") {
      i.ints[key] = lex_.Int();
    } else {
      // Advisory or not used by podsim: channel_id, use_global_device_ids,
      // frontend_attributes, operand_precision, api_version, control-predecessors, ...
      lex_.RawValue(key);
    }
  }

  // sharding={...} or a tuple sharding {{...}, {...}}.
  void ShardingAttr(HloInstr& i) {
    const Loc loc = lex_.Here();
    const std::string_view block = lex_.Balanced("sharding={...}");
    size_t k = 1;
    while (k < block.size() && (block[k] == ' ' || block[k] == '\n' || block[k] == '\t')) ++k;
    if (k < block.size() && block[k] == '{') {
      // Split the top-level elements.
      int depth = 0;
      size_t start = 0;
      for (size_t p = 1; p + 1 < block.size(); ++p) {
        const char c = block[p];
        if (c == '{') {
          if (depth++ == 0) start = p;
        } else if (c == '}') {
          if (--depth == 0) {
            i.tuple_sharding.push_back(
                text_internal::ShardingFromText(lex_, loc, block.substr(start, p + 1 - start)));
          }
        }
      }
      return;
    }
    i.attrs.sharding = text_internal::ShardingFromText(lex_, loc, block);
  }

  // op_name="..." inside metadata={...}, unescaped; empty when absent.
  static std::string OpName(std::string_view metadata) {
    const std::string_view key = "op_name=\"";
    const size_t at = metadata.find(key);
    if (at == std::string_view::npos) return "";
    std::string out;
    for (size_t p = at + key.size(); p < metadata.size() && metadata[p] != '"'; ++p) {
      if (metadata[p] == '\\' && p + 1 < metadata.size()) ++p;
      out.push_back(metadata[p]);
    }
    return out;
  }

  Lexer& lex_;
  HloText out_;
};

}  // namespace

HloText ParseHloText(Lexer& lex) { return HloParser(lex).Run(); }

}  // namespace podsim::ir::hlo_internal
