// The attributes of the IR text format (ir/text_attributes.h, docs/ir.md): the Parser methods
// that read "dimensions={0,1}", "window={...}", "replica_groups=...", shardings and the rest.

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "ir/text_parser.h"

namespace podsim::ir::text_internal {
namespace {

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

}  // namespace

void Parser::ParseAttributes(Instruction& instr, Loc op_loc) {
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
std::string Parser::Takes(Opcode op) {
  const auto attrs = text_internal::OpcodeAttrs(op);
  if (attrs.empty()) return "it takes only sharding and scope";
  std::string out = "it takes ";
  for (size_t k = 0; k < attrs.size(); ++k) {
    if (k) out += ", ";
    out += AttrName(attrs[k]);
  }
  return out + ", sharding, scope";
}

std::vector<int64_t> Parser::IntList() {
  std::vector<int64_t> v;
  lex_.Expect('{', "to open a list of integers");
  if (lex_.Consume('}')) return v;
  do {
    v.push_back(lex_.Int());
  } while (lex_.Consume(','));
  lex_.Expect('}', "to close the list of integers");
  return v;
}

bool Parser::Bool() {
  Loc loc = lex_.Here();
  std::string_view w = lex_.Word();
  if (w == "true") return true;
  if (w == "false") return false;
  lex_.Fail(loc, "expected true or false, got '" + std::string(w) + "'");
}

void Parser::ParseSlice(Instruction& instr) {
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

void Parser::ParsePadding(Instruction& instr) {
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

void Parser::ParseWindow(Instruction& instr) {
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

void Parser::ParseDimLabels(Instruction& instr) {
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

std::vector<std::vector<int64_t>> Parser::Groups() {
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
IotaReplicaGroupList Parser::IotaGroups() {
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

void Parser::ParsePairs(Instruction& instr) {
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

Sharding Parser::ShardingBlock() {
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

void Parser::ParseAttributeValue(Instruction& instr, Attr a) {
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
    case Attr::kRange: {
      lex_.Expect('{', "to open range={low,high}");
      const double low = lex_.Double();
      lex_.Expect(',', "between the low and high of range={low,high}");
      const double high = lex_.Double();
      lex_.Expect('}', "to close range={low,high}");
      instr.argument_range = std::make_pair(low, high);
      break;
    }
  }
}

}  // namespace podsim::ir::text_internal
