// Attribute values and literals of the IR text format, read from a text_internal::Lexer; shared
// by the native parser (text_parser*.cc) and the XLA HLO importer (hlo_import*.cc), whose
// spellings of these values are the same.

#include "ir/text_values.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

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

// After the '{' of dimension `dim`, opened at `open`.
void LiteralDim(Lexer& lex, const Shape& shape, size_t dim, Loc open, std::vector<double>* values) {
  int64_t count = 0;
  const bool innermost = dim + 1 == shape.dims.size();
  if (!lex.Consume('}')) {
    do {
      if (innermost) {
        values->push_back(lex.Element(shape.dtype));
      } else {
        Loc inner = lex.Here();
        lex.Expect('{', [&] {
          return "to open dimension " + std::to_string(dim + 1) + " of the constant";
        });
        LiteralDim(lex, shape, dim + 1, inner, values);
      }
      ++count;
    } while (lex.Consume(','));
    lex.Expect('}', [&] {
      return "to close dimension " + std::to_string(dim) + " of the constant";
    });
  }
  if (count != shape.dims[dim]) {
    lex.Fail(open, "dimension " + std::to_string(dim) + " of " + shape.ToString() + " has " +
                        std::to_string(shape.dims[dim]) + " elements, these braces hold " +
                        std::to_string(count));
  }
}

}  // namespace

std::vector<int64_t> ReadIntList(Lexer& lex) {
  std::vector<int64_t> v;
  lex.Expect('{', "to open a list of integers");
  if (lex.Consume('}')) return v;
  do {
    v.push_back(lex.Int());
  } while (lex.Consume(','));
  lex.Expect('}', "to close the list of integers");
  return v;
}

bool ReadBool(Lexer& lex) {
  Loc loc = lex.Here();
  std::string_view w = lex.Word();
  if (w == "true") return true;
  if (w == "false") return false;
  lex.Fail(loc, "expected true or false, got '" + std::string(w) + "'");
}

void ReadSlice(Lexer& lex, Instruction& instr) {
  lex.Expect('{', "to open slice={[start:limit:stride], ...}");
  if (lex.Consume('}')) return;
  do {
    lex.Expect('[', "to open a slice dimension [start:limit] or [start:limit:stride]");
    instr.slice_starts.push_back(lex.Int());
    lex.Expect(':', "between slice start and limit");
    instr.slice_limits.push_back(lex.Int());
    instr.slice_strides.push_back(lex.Consume(':') ? lex.Int() : 1);
    lex.Expect(']', "to close a slice dimension");
  } while (lex.Consume(','));
  lex.Expect('}', "to close slice={...}");
}

void ReadPadding(Lexer& lex, Instruction& instr) {
  if (lex.Consume('{')) {
    lex.Expect('}', "(padding={} is the padding of a scalar)");
    return;
  }
  do {
    PadDim p;
    p.low = lex.Int();
    lex.Expect('_', "between low and high padding (low_high or low_high_interior)");
    p.high = lex.Int();
    if (lex.Consume('_')) p.interior = lex.Int();
    instr.padding.push_back(p);
  } while (lex.Consume('x'));
}

void ReadWindow(Lexer& lex, Instruction& instr) {
  static constexpr std::string_view kFields[] = {"size", "stride", "pad", "lhs_dilate",
                                                 "rhs_dilate"};
  std::vector<int64_t> values[5];  // pad holds low,high pairs
  Loc where[5];
  bool given[5] = {};
  lex.Expect('{', "to open window={size=... }");
  while (!lex.Consume('}')) {
    Loc loc = lex.Here();
    std::string_view key = lex.Word();
    int f = static_cast<int>(std::find(std::begin(kFields), std::end(kFields), key) -
                             std::begin(kFields));
    if (f == 5) {
      lex.Fail(loc, key.empty() ? "expected a window field or '}', got " + lex.Describe()
                                 : "unknown window field '" + std::string(key) +
                                       "' (expected size, stride, pad, lhs_dilate, rhs_dilate)");
    }
    if (given[f]) lex.Fail(loc, "window field '" + std::string(key) + "' is given twice");
    given[f] = true;
    where[f] = loc;
    lex.Expect('=', [&] { return "after window field " + std::string(key); });
    do {
      values[f].push_back(lex.Int());
      if (f == 2) {
        lex.Expect('_', "between low and high window padding");
        values[f].push_back(lex.Int());
      }
    } while (lex.Consume('x'));
  }
  if (!given[0]) {
    for (int f = 1; f < 5; ++f) {
      if (given[f]) lex.Fail(where[f], "window needs size= before other fields");
    }
    return;
  }
  const size_t n = values[0].size();
  for (int f = 1; f < 5; ++f) {
    size_t count = f == 2 ? values[f].size() / 2 : values[f].size();
    if (given[f] && count != n) {
      lex.Fail(where[f], "window " + std::string(kFields[f]) + " has " + std::to_string(count) +
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

void ReadDimLabels(Lexer& lex, Instruction& instr) {
  Loc loc = lex.Here();
  std::string_view input = lex.AlnumRun();
  if (!lex.Consume('_')) lex.Fail(loc, "dim_labels must look like b01f_01io->b01f");
  std::string_view kernel = lex.AlnumRun();
  if (!lex.Consume("->")) lex.Fail(loc, "dim_labels must look like b01f_01io->b01f");
  std::string_view output = lex.AlnumRun();
  ConvDims& c = instr.conv;
  DecodeLabels(lex, loc, input, 'b', 'f', &c.input_batch, &c.input_feature, &c.input_spatial);
  DecodeLabels(lex, loc, kernel, 'i', 'o', &c.kernel_input_feature, &c.kernel_output_feature,
               &c.kernel_spatial);
  DecodeLabels(lex, loc, output, 'b', 'f', &c.output_batch, &c.output_feature,
               &c.output_spatial);
}

std::vector<std::vector<int64_t>> ReadGroups(Lexer& lex) {
  std::vector<std::vector<int64_t>> groups;
  lex.Expect('{', "to open replica_groups={{...},...}");
  if (lex.Consume('}')) return groups;
  do {
    groups.push_back(ReadIntList(lex));
  } while (lex.Consume(','));
  lex.Expect('}', "to close replica_groups");
  return groups;
}

// [G,S]<=[dims] or [G,S]<=[dims]T(perm): the iota form of ir/iota.h.
IotaReplicaGroupList ReadIotaGroups(Lexer& lex) {
  Loc loc = lex.Here();
  auto ints = [&](char close, const char* what) {
    std::vector<int64_t> v = {lex.Int()};
    while (lex.Consume(',')) v.push_back(lex.Int());
    lex.Expect(close, what);
    return v;
  };
  lex.Expect('[', "to open replica_groups=[groups,size]<=[...]");
  std::vector<int64_t> shape = ints(']', "to close replica_groups=[groups,size]");
  if (shape.size() != 2) {
    lex.Fail(loc, "replica_groups=[groups,size]<=[...] needs two numbers in its first []");
  }
  if (!lex.Consume("<=")) lex.FailHere("expected '<=' after replica_groups=[groups,size]");
  lex.Expect('[', "to open the iota dims of replica_groups");
  std::vector<int64_t> dims = ints(']', "to close the iota dims of replica_groups");
  std::vector<int64_t> perm(dims.size());
  for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
  if (lex.Consume("T(")) perm = ints(')', "to close the transpose T(...)");
  IotaReplicaGroupList g;
  g.num_groups = shape[0];
  g.group_size = shape[1];
  try {
    g.devices = IotaDevices::Create(std::move(dims), std::move(perm));
  } catch (const Error& e) {
    lex.Fail(loc, std::string("bad replica_groups: ") + e.what());
  }
  if (g.num_groups * g.group_size != g.devices.size()) {
    lex.Fail(loc, "replica_groups=" + g.ToString() + ": " + std::to_string(g.num_groups) +
                       " groups of " + std::to_string(g.group_size) + " need " +
                       std::to_string(g.num_groups * g.group_size) +
                       " partitions, the iota has " + std::to_string(g.devices.size()));
  }
  return g;
}

void ReadPairs(Lexer& lex, Instruction& instr) {
  lex.Expect('{', "to open source_target_pairs={{src,dst},...}");
  if (lex.Consume('}')) return;
  do {
    Loc loc = lex.Here();
    std::vector<int64_t> pair = ReadIntList(lex);
    if (pair.size() != 2) {
      lex.Fail(loc, "a source-target pair needs two partitions {src,dst}, got " +
                         std::to_string(pair.size()));
    }
    instr.source_target_pairs.emplace_back(pair[0], pair[1]);
  } while (lex.Consume(','));
  lex.Expect('}', "to close source_target_pairs");
}

Sharding ShardingFromText(Lexer& lex, Loc loc, std::string_view block) {
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
    lex.Fail(loc, std::string("bad sharding: ") + e.what());
  }
}

Sharding ReadSharding(Lexer& lex) {
  Loc loc = lex.Here();
  return ShardingFromText(lex, loc, lex.BraceBlock("sharding={...}"));
}

// A scalar is one value; an array is '{...}' nested per dimension, or flat row-major.
Literal ReadLiteral(Lexer& lex, const Shape& shape) {
  Loc loc = lex.Here();
  if (shape.is_tuple) lex.Fail(loc, "a constant must have an array shape");
  Literal lit;
  lit.shape = shape;
  // Not the declared count: a short constant may claim a huge shape. Values arrive as they are
  // read, and their number is checked against the shape.
  lit.values.reserve(static_cast<size_t>(std::min<int64_t>(shape.NumElements(), 1 << 16)));
  if (shape.dims.empty()) {
    lit.values.push_back(lex.Element(shape.dtype));
    return lit;
  }
  lex.Expect('{', [&] { return "to open the values of a " + shape.ToString() + " constant"; });
  if (shape.rank() > 1 && lex.Peek('{')) {
    LiteralDim(lex, shape, 0, loc, &lit.values);
    return lit;
  }
  if (!lex.Consume('}')) {
    do {
      lit.values.push_back(lex.Element(shape.dtype));
    } while (lex.Consume(','));
    lex.Expect('}', "to close the constant's values");
  }
  if (lit.NumElements() != shape.NumElements()) {
    lex.Fail(loc, "constant of shape " + shape.ToString() + " needs " +
                       std::to_string(shape.NumElements()) + " values, got " +
                       std::to_string(lit.NumElements()));
  }
  return lit;
}


Shape ReadShape(Lexer& lex, bool xla_layouts, int depth) {
  if (depth > kMaxShapeDepth) {
    lex.FailHere("tuple shapes nest deeper than " + std::to_string(kMaxShapeDepth) + " levels");
  }
  if (lex.Consume('(')) {
    std::vector<Shape> elements;
    if (!lex.Consume(')')) {
      do {
        elements.push_back(ReadShape(lex, xla_layouts, depth + 1));
      } while (lex.Consume(','));
      lex.Expect(')', "to close the tuple shape");
    }
    return Shape::Tuple(std::move(elements));
  }
  Loc loc = lex.Here();
  std::string_view type = lex.Word();
  Shape s;
  if (!LookupDType(type, &s.dtype)) {
    if (type.empty()) lex.Fail(loc, "expected a shape like f32[8,16], got " + lex.Describe());
    try {
      ParseDType(type);
    } catch (const Error& e) {
      lex.Fail(loc, e.what());
    }
  }
  lex.Expect('[', [&] { return "after element type " + std::string(type); });
  if (!lex.Consume(']')) {
    do {
      Loc dim_loc = lex.Here();
      if (lex.Peek('<') || lex.Peek('?')) {
        lex.Fail(dim_loc, "dynamic dimensions (<=N, ?) are not supported: shapes are static");
      }
      int64_t d = lex.Int();
      if (d < 0) lex.Fail(dim_loc, "dimension " + std::to_string(d) + " is negative");
      if (static_cast<int64_t>(s.dims.size()) == kMaxRank) {
        lex.Fail(dim_loc, "more than " + std::to_string(kMaxRank) + " dimensions");
      }
      s.dims.push_back(d);
    } while (lex.Consume(','));
    lex.Expect(']', "to close the dimensions");
    try {
      s.ByteSize();  // the element count and the byte size fit int64
    } catch (const Error& e) {
      lex.Fail(loc, e.what());
    }
  }
  // XLA writes a layout right after the dims ("f32[8,16]{1,0}"); podsim has none. (A '{' after
  // a space is something else: the body after a computation signature's result shape.)
  if (xla_layouts && lex.PeekAdjacent('{')) lex.Balanced("a layout");
  return s;
}

}  // namespace podsim::ir::text_internal
