#pragma once
// Internal to ir/: the parser of the IR text format (ir/text.h), a hand-written recursive-descent
// parser over text_internal::Lexer. text_parser.cc parses modules, computations, instructions,
// shapes and literals and runs the checks after the parse; text_parser_attributes.cc parses the
// attributes.

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/module.h"
#include "ir/text_attributes.h"
#include "ir/text_lexer.h"
#include "ir/text_values.h"

namespace podsim::ir::text_internal {

// Where an instruction was written, for errors found after it was parsed.
struct InstrEntry {
  Instruction* instr;
  Loc start;  // its first token ("ROOT" or '%')
  Loc shape;  // its result shape
};

struct PendingBody {
  Instruction* loop;
  std::string name;
  Loc loc;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename) : lex_(text, filename) {
    names_.reserve(text.size() / 48 + 16);
    entries_.reserve(text.size() / 48 + 16);
  }

  std::unique_ptr<Module> Run();

 private:
  void ParseModuleAttributes();
  void ParseComputation();

  void ParseInstruction(Computation* c, const Instruction** root);

  Instruction* ParseOperand(const Computation* c);

  // `depth`: tuples around this shape; more than kMaxShapeDepth is an error (no unbounded
  // recursion on input).
  Shape ParseShape(int depth = 0);

  void ParseAttributes(Instruction& instr, Loc op_loc);

  // "it takes dimensions, kind" for messages.
  static std::string Takes(Opcode op);

  void ParseAttributeValue(Instruction& instr, Attr a);

  void ResolveBodies();

  // Shape rules instruction by instruction, so that an error points at its line.
  void CheckShapes();

  // Runs the verifier; its message names the computation and instruction
  // ("computation %c, instruction %i: ..."), which locates it.
  void VerifyWithLocations();

  Lexer lex_;
  std::unique_ptr<Module> module_;
  // Every instruction in parse order (which is module order).
  std::vector<InstrEntry> entries_;
  // Name -> index in entries_. Keys view the names owned by the instructions (stable:
  // instructions are heap-allocated).
  std::unordered_map<std::string_view, size_t> names_;
  std::unordered_map<std::string, std::pair<Computation*, Loc>> computations_;
  std::vector<PendingBody> pending_bodies_;
};

}  // namespace podsim::ir::text_internal
