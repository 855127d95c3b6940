// Parser half of the IR text format (ir/text.h); docs/ir.md is the grammar. One pass builds the
// module (operands must be defined before use; loop bodies may be referenced before their
// definition), then shape rules and the verifier run, and their errors are reported at the
// offending instruction. Attributes are parsed in text_parser_attributes.cc.

#include "ir/text_parser.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "ir/shape_inference.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace text_internal {

std::unique_ptr<Module> Parser::Run() {
  Loc start = lex_.Here();
  if (!lex_.ConsumeKeyword("HloModule")) {
    lex_.FailHere("expected 'HloModule <name>' at the start, got " + lex_.Describe());
  }
  module_ = std::make_unique<Module>(lex_.Name("a module name"));
  if (lex_.Consume(',')) ParseModuleAttributes();
  while (!lex_.AtEnd()) ParseComputation();
  if (!module_->entry()) {
    lex_.Fail(start, "module has no ENTRY computation (mark one with 'ENTRY %name {')");
  }
  ResolveBodies();
  CheckShapes();
  VerifyWithLocations();
  return std::move(module_);
}

void Parser::ParseModuleAttributes() {
  do {
    const Loc at = lex_.Here();
    const std::string key(lex_.Word());
    if (key != "input_output_alias") {
      lex_.Fail(at, "unknown module attribute '" + key + "' (podsim reads input_output_alias)");
    }
    lex_.Expect('=', "after input_output_alias");
    lex_.Expect('{', "to open input_output_alias");
    std::vector<OutputAlias> aliases;
    while (!lex_.Consume('}')) {
      if (!aliases.empty()) lex_.Expect(',', "between input_output_alias entries");
      OutputAlias a;
      lex_.Expect('{', "before an aliased output index ({1}: (0, {}, may-alias))");
      a.output = lex_.Int();
      lex_.Expect('}', "after the output index");
      lex_.Expect(':', "after the output index");
      lex_.Expect('(', "before the aliased parameter");
      a.parameter = lex_.Int();
      lex_.Expect(',', "after the parameter number");
      lex_.Expect('{', "the parameter index (podsim's parameters are arrays: {})");
      lex_.Expect('}', "the parameter index (podsim's parameters are arrays: {})");
      if (lex_.Consume(',')) {
        const Loc kind_at = lex_.Here();
        const std::string kind(lex_.Word());
        if (kind != "may-alias" && kind != "must-alias") {
          lex_.Fail(kind_at, "alias kind must be may-alias or must-alias, got '" + kind + "'");
        }
      }
      lex_.Expect(')', "to close an input_output_alias entry");
      aliases.push_back(a);
    }
    module_->set_output_aliases(std::move(aliases));
  } while (lex_.Consume(','));
}

void Parser::ParseComputation() {
  Loc start = lex_.Here();
  bool is_entry = lex_.ConsumeKeyword("ENTRY");
  Loc name_loc = lex_.Here();
  lex_.Expect('%', is_entry ? "before the entry computation's name"
                            : "to start a computation ('%name {' or 'ENTRY %name {')");
  std::string name = lex_.Name("a computation name");
  if (auto it = computations_.find(name); it != computations_.end()) {
    lex_.Fail(name_loc, "computation %" + name + " is already defined at " +
                            lex_.Where(it->second.second));
  }
  if (is_entry && module_->entry()) {
    lex_.Fail(start, "a second ENTRY computation; %" + module_->entry()->name() +
                         " is already the entry");
  }
  // An HLO-style signature "(p: f32[4]) -> f32[4]" is accepted and ignored.
  if (lex_.Peek('(')) lex_.SkipParens();
  if (lex_.Consume("->")) ParseShape();
  lex_.Expect('{', [&] { return "to open computation %" + name; });
  Computation* c = module_->AddComputation(name, is_entry);
  computations_.emplace(name, std::make_pair(c, name_loc));
  const Instruction* root = nullptr;
  while (!lex_.Consume('}')) {
    if (lex_.AtEnd()) {
      lex_.Fail(name_loc, "computation %" + name + " is not closed with '}'");
    }
    ParseInstruction(c, &root);
  }
}

void Parser::ParseInstruction(Computation* c, const Instruction** root) {
  Loc start = lex_.Here();
  bool is_root = lex_.ConsumeKeyword("ROOT");
  Loc name_loc = lex_.Here();
  if (!lex_.Consume('%')) {
    lex_.FailHere("expected an instruction '%name = shape opcode(...)' or '}', got " +
                  lex_.Describe());
  }
  auto instr = std::make_unique<Instruction>();
  instr->name = lex_.Name("an instruction name");
  if (auto it = names_.find(instr->name); it != names_.end()) {
    lex_.Fail(name_loc, "instruction name %" + instr->name + " is already defined at " +
                            lex_.Where(entries_[it->second].start));
  }
  lex_.Expect('=', [&] { return "after %" + instr->name; });
  Loc shape_loc = lex_.Here();
  instr->shape = ParseShape();
  Loc op_loc = lex_.Here();
  std::string_view op_name = lex_.Word();
  if (op_name.empty()) lex_.Fail(op_loc, "expected an opcode, got " + lex_.Describe());
  if (!ParseOpcode(op_name, &instr->opcode)) {
    lex_.Fail(op_loc, "unknown opcode '" + std::string(op_name) + "'");
  }
  const Opcode op = instr->opcode;
  lex_.Expect('(', [&] { return "after opcode " + std::string(op_name); });
  if (op == Opcode::kParameter) {
    instr->parameter_number = lex_.Int();
  } else if (op == Opcode::kConstant) {
    instr->literal = ReadLiteral(lex_, instr->shape);
  } else if (!lex_.Peek(')')) {
    do {
      instr->operands.push_back(ParseOperand(c));
    } while (lex_.Consume(','));
  }
  lex_.Expect(')', [&] { return "to close the operand list of %" + instr->name; });
  ParseAttributes(*instr, op_loc);

  Instruction* added = instr.get();
  module_->ReserveName(added->name);
  c->AppendNamed(std::move(instr));
  names_.emplace(added->name, entries_.size());
  entries_.push_back(InstrEntry{added, start, shape_loc});
  if (is_root) {
    if (*root) {
      lex_.Fail(start, "computation %" + c->name() + " has a second ROOT (the first is %" +
                           (*root)->name + ")");
    }
    *root = added;
    c->set_root(added);
  }
}

Instruction* Parser::ParseOperand(const Computation* c) {
  Loc loc = lex_.Here();
  if (!lex_.Consume('%')) lex_.FailHere("expected an operand '%name', got " + lex_.Describe());
  std::string name = lex_.Name("an operand name");
  auto it = names_.find(name);
  if (it == names_.end()) {
    lex_.Fail(loc, "undefined operand %" + name + " (operands must be defined before use)");
  }
  Instruction* o = entries_[it->second].instr;
  if (o->parent != c) {
    lex_.Fail(loc, "operand %" + name + " is defined in computation %" + o->parent->name() +
                       ", not in %" + c->name());
  }
  return o;
}

Shape Parser::ParseShape(int depth) { return ReadShape(lex_, /*xla_layouts=*/false, depth); }



void Parser::ResolveBodies() {
  for (const PendingBody& p : pending_bodies_) {
    auto it = computations_.find(p.name);
    if (it == computations_.end()) {
      lex_.Fail(p.loc, "body=%" + p.name + " names no computation of this module");
    }
    p.loop->body = it->second.first;
  }
}

// Shape rules instruction by instruction, so that an error points at its line.
void Parser::CheckShapes() {
  for (const InstrEntry& entry : entries_) {
    const Instruction& i = *entry.instr;
    Shape expected;
    try {
      expected = InferShape(i);
    } catch (const Error& e) {
      lex_.Fail(entry.start, e.what());
    }
    if (expected != i.shape) {
      lex_.Fail(entry.shape, "%" + i.name + ": shape " + i.shape.ToString() +
                                 " does not match the " + std::string(OpcodeName(i.opcode)) +
                                 " shape rule, which gives " + expected.ToString());
    }
  }
}

// Runs the verifier; its message names the computation and instruction
// ("computation %c, instruction %i: ..."), which locates it.
void Parser::VerifyWithLocations() {
  try {
    Verify(*module_);
  } catch (const Error& e) {
    std::string_view message = e.what();
    Loc loc;
    auto name_after = [&](std::string_view marker, std::string_view stops) -> std::string {
      size_t at = message.find(marker);
      if (at == std::string_view::npos) return "";
      std::string_view rest = message.substr(at + marker.size());
      return std::string(rest.substr(0, rest.find_first_of(stops)));
    };
    std::string instr = name_after(", instruction %", ":");
    std::string comp = name_after("computation %", ",:");
    if (auto it = names_.find(instr); !instr.empty() && it != names_.end()) {
      loc = entries_[it->second].start;
    } else if (auto ct = computations_.find(comp); !comp.empty() && ct != computations_.end()) {
      loc = ct->second.second;
    }
    lex_.Fail(loc, std::string(message));
  }
}

}  // namespace text_internal

std::unique_ptr<Module> ParseModule(std::string_view text, const std::string& filename) {
  return text_internal::Parser(text, filename).Run();
}

}  // namespace podsim::ir
