// Parser half of the IR text format (ir/text.h); docs/ir.md is the grammar. A hand-written
// recursive-descent parser over text_internal::Lexer: one pass builds the module (operands must
// be defined before use; loop bodies may be referenced before their definition), then shape
// rules and the verifier run, and their errors are reported at the offending instruction.

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "ir/shape_inference.h"
#include "ir/text.h"
#include "ir/text_attributes.h"
#include "ir/text_lexer.h"
#include "ir/verifier.h"

namespace podsim::ir {

namespace {

using text_internal::Attr;
using text_internal::AttrName;
using text_internal::Lexer;
using text_internal::Loc;
using text_internal::Presence;

constexpr DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kS32, DType::kPred};

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

// Decodes one operand's dim labels ("b01f"): `a` and `b` are the two letter roles (b/f or i/o),
// digits are spatial dims in order.
void DecodeLabels(Lexer& lex, Loc loc, std::string_view labels, char a, char b, int64_t* a_dim,
                  int64_t* b_dim, std::vector<int64_t>* spatial) {
  *a_dim = *b_dim = -1;
  spatial->assign(labels.size(), -1);
  size_t num_spatial = 0;
  auto fail = [&](const std::string& what) {
    lex.Fail(loc, "dim_labels '" + std::string(labels) + "': " + what);
  };
  for (size_t pos = 0; pos < labels.size(); ++pos) {
    char c = labels[pos];
    int64_t* slot = nullptr;
    if (c == a) {
      slot = a_dim;
    } else if (c == b) {
      slot = b_dim;
    } else if (c >= '0' && c <= '9') {
      if (static_cast<size_t>(c - '0') >= labels.size()) {
        fail("spatial dim " + std::string(1, c) + " exceeds the rank");
      }
      slot = &(*spatial)[c - '0'];
      ++num_spatial;
    } else {
      fail(std::string("unexpected label '") + c + "' (expected " + a + ", " + b +
           " or a spatial digit)");
    }
    if (*slot != -1) fail(std::string("label '") + c + "' appears twice");
    *slot = static_cast<int64_t>(pos);
  }
  if (*a_dim < 0 || *b_dim < 0) fail(std::string("needs both '") + a + "' and '" + b + "'");
  spatial->resize(num_spatial);
  for (size_t k = 0; k < num_spatial; ++k) {
    if ((*spatial)[k] < 0) {
      fail("spatial dims must be numbered 0.." + std::to_string(num_spatial - 1));
    }
  }
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename) : lex_(text, filename) {
    names_.reserve(text.size() / 48 + 16);
    entries_.reserve(text.size() / 48 + 16);
  }

  std::unique_ptr<Module> Run() {
    Loc start = lex_.Here();
    if (!lex_.ConsumeKeyword("HloModule")) {
      lex_.FailHere("expected 'HloModule <name>' at the start, got " + lex_.Describe());
    }
    module_ = std::make_unique<Module>(lex_.Name("a module name"));
    while (!lex_.AtEnd()) ParseComputation();
    if (!module_->entry()) {
      lex_.Fail(start, "module has no ENTRY computation (mark one with 'ENTRY %name {')");
    }
    ResolveBodies();
    CheckShapes();
    VerifyWithLocations();
    return std::move(module_);
  }

 private:
  void ParseComputation() {
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

  void ParseInstruction(Computation* c, const Instruction** root) {
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
      instr->literal = ParseLiteral(instr->shape);
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

  Instruction* ParseOperand(const Computation* c) {
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

  Shape ParseShape() {
    if (lex_.Consume('(')) {
      std::vector<Shape> elements;
      if (!lex_.Consume(')')) {
        do {
          elements.push_back(ParseShape());
        } while (lex_.Consume(','));
        lex_.Expect(')', "to close the tuple shape");
      }
      return Shape::Tuple(std::move(elements));
    }
    Loc loc = lex_.Here();
    std::string_view type = lex_.Word();
    Shape s;
    auto known = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                              [&](DType t) { return DTypeName(t) == type; });
    if (known == std::end(kDTypes)) {
      lex_.Fail(loc, type.empty() ? "expected a shape like f32[8,16], got " + lex_.Describe()
                                  : "unknown element type '" + std::string(type) +
                                        "' (expected f32, bf16, s32 or pred)");
    }
    s.dtype = *known;
    lex_.Expect('[', [&] { return "after element type " + std::string(type); });
    if (!lex_.Consume(']')) {
      do {
        Loc dim_loc = lex_.Here();
        int64_t d = lex_.Int();
        if (d < 0) lex_.Fail(dim_loc, "dimension " + std::to_string(d) + " is negative");
        s.dims.push_back(d);
      } while (lex_.Consume(','));
      lex_.Expect(']', "to close the dimensions");
    }
    return s;
  }

  // A scalar is one value; an array is '{...}' nested per dimension, or flat row-major.
  Literal ParseLiteral(const Shape& shape) {
    Loc loc = lex_.Here();
    if (shape.is_tuple) lex_.Fail(loc, "a constant must have an array shape");
    Literal lit;
    lit.shape = shape;
    lit.values.reserve(static_cast<size_t>(shape.NumElements()));
    if (shape.dims.empty()) {
      lit.values.push_back(lex_.Element(shape.dtype));
      return lit;
    }
    lex_.Expect('{', [&] { return "to open the values of a " + shape.ToString() + " constant"; });
    if (shape.rank() > 1 && lex_.Peek('{')) {
      LiteralDim(shape, 0, loc, &lit.values);
      return lit;
    }
    if (!lex_.Consume('}')) {
      do {
        lit.values.push_back(lex_.Element(shape.dtype));
      } while (lex_.Consume(','));
      lex_.Expect('}', "to close the constant's values");
    }
    if (lit.NumElements() != shape.NumElements()) {
      lex_.Fail(loc, "constant of shape " + shape.ToString() + " needs " +
                         std::to_string(shape.NumElements()) + " values, got " +
                         std::to_string(lit.NumElements()));
    }
    return lit;
  }

  // After the '{' of dimension `dim`, opened at `open`.
  void LiteralDim(const Shape& shape, size_t dim, Loc open, std::vector<double>* values) {
    int64_t count = 0;
    const bool innermost = dim + 1 == shape.dims.size();
    if (!lex_.Consume('}')) {
      do {
        if (innermost) {
          values->push_back(lex_.Element(shape.dtype));
        } else {
          Loc inner = lex_.Here();
          lex_.Expect('{', [&] {
            return "to open dimension " + std::to_string(dim + 1) + " of the constant";
          });
          LiteralDim(shape, dim + 1, inner, values);
        }
        ++count;
      } while (lex_.Consume(','));
      lex_.Expect('}', [&] {
        return "to close dimension " + std::to_string(dim) + " of the constant";
      });
    }
    if (count != shape.dims[dim]) {
      lex_.Fail(open, "dimension " + std::to_string(dim) + " of " + shape.ToString() + " has " +
                          std::to_string(shape.dims[dim]) + " elements, these braces hold " +
                          std::to_string(count));
    }
  }

  void ParseAttributes(Instruction& instr, Loc op_loc) {
    const auto allowed = text_internal::OpcodeAttrs(instr.opcode);
    uint64_t seen = 0;
    while (lex_.Consume(',')) {
      Loc loc = lex_.Here();
      std::string_view name = lex_.Word();
      if (name.empty()) lex_.Fail(loc, "expected an attribute name, got " + lex_.Describe());
      Attr a;
      if (!text_internal::LookupAttr(name, &a)) {
        lex_.Fail(loc, "unknown attribute '" + std::string(name) + "'");
      }
      if (a != Attr::kSharding && a != Attr::kScope &&
          std::find(allowed.begin(), allowed.end(), a) == allowed.end()) {
        lex_.Fail(loc, "attribute '" + std::string(name) + "' does not apply to " +
                           std::string(OpcodeName(instr.opcode)) + " (" + Takes(instr.opcode) +
                           ")");
      }
      uint64_t bit = uint64_t{1} << static_cast<int>(a);
      if (seen & bit) lex_.Fail(loc, "attribute '" + std::string(name) + "' is given twice");
      seen |= bit;
      lex_.Expect('=', [&] { return "after attribute name " + std::string(name); });
      ParseAttributeValue(instr, a);
    }
    if (std::string_view next = lex_.PeekWord(); !next.empty() && next != "ROOT") {
      lex_.FailHere("expected ',' before '" + std::string(next) +
                    "' (attributes are separated by commas)");
    }
    for (Attr a : allowed) {
      if (text_internal::AttrPresence(a) == Presence::kRequired &&
          !(seen & (uint64_t{1} << static_cast<int>(a)))) {
        lex_.Fail(op_loc, std::string(OpcodeName(instr.opcode)) + " %" + instr.name +
                              " needs attribute " + std::string(AttrName(a)) + "=");
      }
    }
    if (instr.opcode == Opcode::kRandomUniform &&
        !(seen & (uint64_t{1} << static_cast<int>(Attr::kGlobalDims))) && !instr.shape.is_tuple) {
      instr.rng_global_dims = instr.shape.dims;
    }
  }

  // "it takes dimensions, kind" for messages.
  static std::string Takes(Opcode op) {
    const auto attrs = text_internal::OpcodeAttrs(op);
    if (attrs.empty()) return "it takes only sharding and scope";
    std::string out = "it takes ";
    for (size_t k = 0; k < attrs.size(); ++k) {
      if (k) out += ", ";
      out += AttrName(attrs[k]);
    }
    return out + ", sharding, scope";
  }

  std::vector<int64_t> IntList() {
    std::vector<int64_t> v;
    lex_.Expect('{', "to open a list of integers");
    if (lex_.Consume('}')) return v;
    do {
      v.push_back(lex_.Int());
    } while (lex_.Consume(','));
    lex_.Expect('}', "to close the list of integers");
    return v;
  }

  bool Bool() {
    Loc loc = lex_.Here();
    std::string_view w = lex_.Word();
    if (w == "true") return true;
    if (w == "false") return false;
    lex_.Fail(loc, "expected true or false, got '" + std::string(w) + "'");
  }

  void ParseSlice(Instruction& instr) {
    lex_.Expect('{', "to open slice={[start:limit:stride], ...}");
    if (lex_.Consume('}')) return;
    do {
      lex_.Expect('[', "to open a slice dimension [start:limit] or [start:limit:stride]");
      instr.slice_starts.push_back(lex_.Int());
      lex_.Expect(':', "between slice start and limit");
      instr.slice_limits.push_back(lex_.Int());
      instr.slice_strides.push_back(lex_.Consume(':') ? lex_.Int() : 1);
      lex_.Expect(']', "to close a slice dimension");
    } while (lex_.Consume(','));
    lex_.Expect('}', "to close slice={...}");
  }

  void ParsePadding(Instruction& instr) {
    if (lex_.Consume('{')) {
      lex_.Expect('}', "(padding={} is the padding of a scalar)");
      return;
    }
    do {
      PadDim p;
      p.low = lex_.Int();
      lex_.Expect('_', "between low and high padding (low_high or low_high_interior)");
      p.high = lex_.Int();
      if (lex_.Consume('_')) p.interior = lex_.Int();
      instr.padding.push_back(p);
    } while (lex_.Consume('x'));
  }

  void ParseWindow(Instruction& instr) {
    static constexpr std::string_view kFields[] = {"size", "stride", "pad", "lhs_dilate",
                                                   "rhs_dilate"};
    std::vector<int64_t> values[5];  // pad holds low,high pairs
    Loc where[5];
    bool given[5] = {};
    lex_.Expect('{', "to open window={size=... }");
    while (!lex_.Consume('}')) {
      Loc loc = lex_.Here();
      std::string_view key = lex_.Word();
      int f = static_cast<int>(std::find(std::begin(kFields), std::end(kFields), key) -
                               std::begin(kFields));
      if (f == 5) {
        lex_.Fail(loc, key.empty() ? "expected a window field or '}', got " + lex_.Describe()
                                   : "unknown window field '" + std::string(key) +
                                         "' (expected size, stride, pad, lhs_dilate, rhs_dilate)");
      }
      if (given[f]) lex_.Fail(loc, "window field '" + std::string(key) + "' is given twice");
      given[f] = true;
      where[f] = loc;
      lex_.Expect('=', [&] { return "after window field " + std::string(key); });
      do {
        values[f].push_back(lex_.Int());
        if (f == 2) {
          lex_.Expect('_', "between low and high window padding");
          values[f].push_back(lex_.Int());
        }
      } while (lex_.Consume('x'));
    }
    if (!given[0]) {
      for (int f = 1; f < 5; ++f) {
        if (given[f]) lex_.Fail(where[f], "window needs size= before other fields");
      }
      return;
    }
    const size_t n = values[0].size();
    for (int f = 1; f < 5; ++f) {
      size_t count = f == 2 ? values[f].size() / 2 : values[f].size();
      if (given[f] && count != n) {
        lex_.Fail(where[f], "window " + std::string(kFields[f]) + " has " + std::to_string(count) +
                                " entries, size has " + std::to_string(n));
      }
    }
    instr.window.resize(n);
    for (size_t d = 0; d < n; ++d) {
      WindowDim& w = instr.window[d];
      w.size = values[0][d];
      if (given[1]) w.stride = values[1][d];
      if (given[2]) {
        w.pad_low = values[2][2 * d];
        w.pad_high = values[2][2 * d + 1];
      }
      if (given[3]) w.base_dilation = values[3][d];
      if (given[4]) w.window_dilation = values[4][d];
    }
  }

  void ParseDimLabels(Instruction& instr) {
    Loc loc = lex_.Here();
    std::string_view input = lex_.AlnumRun();
    if (!lex_.Consume('_')) lex_.Fail(loc, "dim_labels must look like b01f_01io->b01f");
    std::string_view kernel = lex_.AlnumRun();
    if (!lex_.Consume("->")) lex_.Fail(loc, "dim_labels must look like b01f_01io->b01f");
    std::string_view output = lex_.AlnumRun();
    ConvDims& c = instr.conv;
    DecodeLabels(lex_, loc, input, 'b', 'f', &c.input_batch, &c.input_feature, &c.input_spatial);
    DecodeLabels(lex_, loc, kernel, 'i', 'o', &c.kernel_input_feature, &c.kernel_output_feature,
                 &c.kernel_spatial);
    DecodeLabels(lex_, loc, output, 'b', 'f', &c.output_batch, &c.output_feature,
                 &c.output_spatial);
  }

  std::vector<std::vector<int64_t>> Groups() {
    std::vector<std::vector<int64_t>> groups;
    lex_.Expect('{', "to open replica_groups={{...},...}");
    if (lex_.Consume('}')) return groups;
    do {
      groups.push_back(IntList());
    } while (lex_.Consume(','));
    lex_.Expect('}', "to close replica_groups");
    return groups;
  }

  // [G,S]<=[dims] or [G,S]<=[dims]T(perm): the iota form of ir/iota.h.
  IotaReplicaGroupList IotaGroups() {
    Loc loc = lex_.Here();
    auto ints = [&](char close, const char* what) {
      std::vector<int64_t> v = {lex_.Int()};
      while (lex_.Consume(',')) v.push_back(lex_.Int());
      lex_.Expect(close, what);
      return v;
    };
    lex_.Expect('[', "to open replica_groups=[groups,size]<=[...]");
    std::vector<int64_t> shape = ints(']', "to close replica_groups=[groups,size]");
    if (shape.size() != 2) {
      lex_.Fail(loc, "replica_groups=[groups,size]<=[...] needs two numbers in its first []");
    }
    if (!lex_.Consume("<=")) lex_.FailHere("expected '<=' after replica_groups=[groups,size]");
    lex_.Expect('[', "to open the iota dims of replica_groups");
    std::vector<int64_t> dims = ints(']', "to close the iota dims of replica_groups");
    std::vector<int64_t> perm(dims.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
    if (lex_.Consume("T(")) perm = ints(')', "to close the transpose T(...)");
    IotaReplicaGroupList g;
    g.num_groups = shape[0];
    g.group_size = shape[1];
    try {
      g.devices = IotaDevices::Create(std::move(dims), std::move(perm));
    } catch (const Error& e) {
      lex_.Fail(loc, std::string("bad replica_groups: ") + e.what());
    }
    if (g.num_groups * g.group_size != g.devices.size()) {
      lex_.Fail(loc, "replica_groups=" + g.ToString() + ": " + std::to_string(g.num_groups) +
                         " groups of " + std::to_string(g.group_size) + " need " +
                         std::to_string(g.num_groups * g.group_size) +
                         " partitions, the iota has " + std::to_string(g.devices.size()));
    }
    return g;
  }

  void ParsePairs(Instruction& instr) {
    lex_.Expect('{', "to open source_target_pairs={{src,dst},...}");
    if (lex_.Consume('}')) return;
    do {
      Loc loc = lex_.Here();
      std::vector<int64_t> pair = IntList();
      if (pair.size() != 2) {
        lex_.Fail(loc, "a source-target pair needs two partitions {src,dst}, got " +
                           std::to_string(pair.size()));
      }
      instr.source_target_pairs.emplace_back(pair[0], pair[1]);
    } while (lex_.Consume(','));
    lex_.Expect('}', "to close source_target_pairs");
  }

  void ParseSharding(Instruction& instr) { instr.sharding = ShardingBlock(); }

  Sharding ShardingBlock() {
    Loc loc = lex_.Here();
    std::string_view block = lex_.BraceBlock("sharding={...}");
    // Sharding::Parse reads the printed spelling exactly: drop whitespace next to punctuation
    // and collapse other runs to one space.
    std::string text;
    text.reserve(block.size());
    for (size_t k = 0; k < block.size(); ++k) {
      char c = block[k];
      bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
      if (!space) {
        text.push_back(c);
        continue;
      }
      while (k + 1 < block.size() &&
             (block[k + 1] == ' ' || block[k + 1] == '\t' || block[k + 1] == '\n' ||
              block[k + 1] == '\r')) {
        ++k;
      }
      char prev = text.empty() ? '{' : text.back();
      char next = k + 1 < block.size() ? block[k + 1] : '}';
      auto punct = [](char ch) {
        return std::string_view("{}[],=").find(ch) != std::string_view::npos;
      };
      if (!punct(prev) && !punct(next)) text.push_back(' ');
    }
    try {
      return Sharding::Parse(text);
    } catch (const Error& e) {
      lex_.Fail(loc, std::string("bad sharding: ") + e.what());
    }
  }

  void ParseAttributeValue(Instruction& instr, Attr a) {
    switch (a) {
      case Attr::kDimensions: instr.dimensions = IntList(); break;
      case Attr::kSlice: ParseSlice(instr); break;
      case Attr::kDynamicSliceSizes: instr.slice_sizes = IntList(); break;
      case Attr::kPadding: ParsePadding(instr); break;
      case Attr::kLhsBatchDims: instr.dot.lhs_batch = IntList(); break;
      case Attr::kRhsBatchDims: instr.dot.rhs_batch = IntList(); break;
      case Attr::kLhsContractingDims: instr.dot.lhs_contracting = IntList(); break;
      case Attr::kRhsContractingDims: instr.dot.rhs_contracting = IntList(); break;
      case Attr::kWindow: ParseWindow(instr); break;
      case Attr::kDimLabels: ParseDimLabels(instr); break;
      case Attr::kFeatureGroupCount: instr.feature_group_count = lex_.Int(); break;
      case Attr::kKind: {
        Loc loc = lex_.Here();
        std::string_view w = lex_.Word();
        if (!ParseReduceKind(w, &instr.reduce_kind)) {
          lex_.Fail(loc, "unknown reduction kind '" + std::string(w) +
                             "' (expected add, max, min, and or or)");
        }
        break;
      }
      case Attr::kDirection: {
        Loc loc = lex_.Here();
        std::string_view w = lex_.Word();
        if (!ParseComparison(w, &instr.comparison)) {
          lex_.Fail(loc, "unknown comparison direction '" + std::string(w) +
                             "' (expected EQ, NE, LT, LE, GT or GE)");
        }
        break;
      }
      case Attr::kExclusive: instr.exclusive = Bool(); break;
      case Attr::kDescending: instr.descending = Bool(); break;
      case Attr::kK: instr.k = lex_.Int(); break;
      case Attr::kSeed: instr.seed = lex_.Uint(); break;
      case Attr::kLow: instr.rng_low = lex_.Double(); break;
      case Attr::kHigh: instr.rng_high = lex_.Double(); break;
      case Attr::kGlobalDims: instr.rng_global_dims = IntList(); break;
      case Attr::kReplicaGroups:
        if (lex_.Peek('[')) {
          instr.iota_replica_groups = IotaGroups();
        } else {
          instr.replica_groups = Groups();
        }
        break;
      case Attr::kSourceTargetPairs: ParsePairs(instr); break;
      case Attr::kSplitDimension: instr.split_dimension = lex_.Int(); break;
      case Attr::kConcatDimension: instr.concat_dimension = lex_.Int(); break;
      case Attr::kTripCount: instr.trip_count = lex_.Int(); break;
      case Attr::kBody: {
        Loc loc = lex_.Here();
        lex_.Expect('%', "before the body computation's name");
        pending_bodies_.push_back({&instr, lex_.Name("a computation name"), loc});
        break;
      }
      case Attr::kIndex: instr.tuple_index = lex_.Int(); break;
      case Attr::kTiling: instr.tiling = ShardingBlock(); break;
      case Attr::kSharding: ParseSharding(instr); break;
      case Attr::kScope: instr.scope = lex_.QuotedString(); break;
    }
  }

  void ResolveBodies() {
    for (const PendingBody& p : pending_bodies_) {
      auto it = computations_.find(p.name);
      if (it == computations_.end()) {
        lex_.Fail(p.loc, "body=%" + p.name + " names no computation of this module");
      }
      p.loop->body = it->second.first;
    }
  }

  // Shape rules instruction by instruction, so that an error points at its line.
  void CheckShapes() {
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
  void VerifyWithLocations() {
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

}  // namespace

std::unique_ptr<Module> ParseModule(std::string_view text, const std::string& filename) {
  return Parser(text, filename).Run();
}

}  // namespace podsim::ir
