// Parse errors of the IR text format: each names FILE:LINE:COL of the offending token and says
// what is wrong. Columns are computed from where the token sits in the test's own text
// (Loc(...) below), so each expectation reads as "at this token".

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "ir/text.h"
#include "tests/ir/all_ops_module.h"

namespace podsim::ir {
namespace {

// A module whose entry holds `lines` (one instruction each, indented by two spaces), starting
// on line 3.
std::string Main(const std::vector<std::string>& lines) {
  std::string text = "HloModule m\nENTRY %main {\n";
  for (const std::string& l : lines) text += "  " + l + "\n";
  return text + "}\n";
}

// "LINE:COL" of the `nth` occurrence of `token` in `text`.
std::string Loc(const std::string& text, const std::string& token, int nth = 1) {
  size_t at = std::string::npos;
  for (int k = 0; k < nth; ++k) at = text.find(token, at == std::string::npos ? 0 : at + 1);
  REQUIRE_MESSAGE(at != std::string::npos, "token " << token << " not in the test text");
  int line = 1;
  size_t line_start = 0;
  for (size_t k = 0; k < at; ++k) {
    if (text[k] == '\n') {
      ++line;
      line_start = k + 1;
    }
  }
  return std::to_string(line) + ":" + std::to_string(at - line_start + 1);
}

// Parses `text` and checks the error is "t.hlo:<where>: ..." and contains `needle`.
void ExpectError(const std::string& text, const std::string& where, const std::string& needle) {
  try {
    ParseModule(text, "t.hlo");
    FAIL_CHECK("expected an error at " << where << " containing: " << needle);
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(message.rfind("t.hlo:" + where + ": ", 0) == 0, message);
    CHECK_MESSAGE(message.find(needle) != std::string::npos, message);
  }
}

// Checks the error of Main(lines) sits at `token` (its `nth` occurrence).
void ExpectErrorAt(const std::vector<std::string>& lines, const std::string& token,
                   const std::string& needle, int nth = 1) {
  std::string text = Main(lines);
  ExpectError(text, Loc(text, token, nth), needle);
}

const char kParam[] = "%a = f32[4] parameter(0)";

TEST_CASE("unknown opcode") {
  ExpectErrorAt({kParam, "ROOT %b = f32[4] frobnicate(%a)"}, "frobnicate",
                "unknown opcode 'frobnicate'");
}

TEST_CASE("undefined operands") {
  ExpectErrorAt({kParam, "%b = f32[4] add(%a, %nope)"}, "%nope", "undefined operand %nope");
  // Defined later in the same computation: still an error (SSA order).
  ExpectErrorAt({kParam, "%b = f32[4] negate(%c)", "%c = f32[4] abs(%a)"}, "%c)",
                "undefined operand %c (operands must be defined before use)");
  // Defined in another computation.
  std::string text =
      "HloModule m\n%other {\n  %p = f32[4] parameter(0)\n}\n"
      "ENTRY %main {\n  %q = f32[4] negate(%p)\n}\n";
  ExpectError(text, Loc(text, "%p)"), "operand %p is defined in computation %other, not in %main");
}

TEST_CASE("bad attributes") {
  ExpectErrorAt({kParam, "%b = f32[4] negate(%a), bogus=1"}, "bogus", "unknown attribute 'bogus'");
  ExpectErrorAt({kParam, "%b = f32[4] negate(%a), k=1"}, "k=1",
                "attribute 'k' does not apply to negate (it takes only sharding and scope)");
  ExpectErrorAt({kParam, "%b = f32[] reduce(%a), dimensions={0}, kind=add, dimensions={0}"},
                "dimensions", "attribute 'dimensions' is given twice", 2);
  ExpectErrorAt({kParam, "%b = f32[] reduce(%a), dimensions={0}"}, "reduce",
                "reduce %b needs attribute kind=");
  ExpectErrorAt({kParam, "%b = f32[] reduce(%a), dimensions={0}, kind=sum"}, "sum",
                "unknown reduction kind 'sum' (expected add, max, min, and or or)");
  ExpectErrorAt({kParam, "%b = pred[4] compare(%a, %a), direction=lt"}, "lt",
                "unknown comparison direction 'lt'");
  ExpectErrorAt({kParam, "%b = f32[4] cumsum(%a), dimensions={0}, exclusive=yes"}, "yes",
                "expected true or false");
  ExpectErrorAt({kParam, "%b = f32[4] reverse(%a), dimensions={99999999999999999999}"},
                "99999", "integer out of range");
  ExpectErrorAt({kParam, "%b = f32[4] reverse(%a), dimensions=7"}, "7",
                "expected '{' to open a list of integers, got '7'");
  ExpectErrorAt({kParam, "%b = f32[4] reverse(%a) dimensions={0}"}, "dimensions",
                "expected ',' before 'dimensions' (attributes are separated by commas)");
  ExpectErrorAt({kParam, "%b = f32[4] negate(%a) $"}, "$",
                "expected an instruction '%name = shape opcode(...)' or '}', got '$'");
}

TEST_CASE("bad attribute values of structured attributes") {
  const std::string img = "%x = f32[1,4,4,2] parameter(0)";
  const std::string ker = "%k = f32[3,3,2,2] parameter(1)";
  ExpectErrorAt({img, ker,
                 "%c = f32[1,2,2,2] convolution(%x, %k), window={size=3x3}, "
                 "dim_labels=b01f_01xo->b01f"},
                "b01f_01xo", "dim_labels '01xo': unexpected label 'x' (expected i, o or a spatial");
  ExpectErrorAt({img, ker,
                 "%c = f32[1,2,2,2] convolution(%x, %k), window={size=3x3}, "
                 "dim_labels=b02f_01io->b01f"},
                "b02f", "dim_labels 'b02f': spatial dims must be numbered 0..1");
  ExpectErrorAt({img, ker,
                 "%c = f32[1,2,2,2] convolution(%x, %k), window={size=3x3 stride=2}, "
                 "dim_labels=b01f_01io->b01f"},
                "stride", "window stride has 1 entries, size has 2");
  ExpectErrorAt({img, ker,
                 "%c = f32[1,2,2,2] convolution(%x, %k), window={size=3x3 step=2x2}, "
                 "dim_labels=b01f_01io->b01f"},
                "step", "unknown window field 'step'");
  ExpectErrorAt({kParam, "%z = f32[] constant(0)", "%p = f32[5] pad(%a, %z), padding=1"}, "}",
                "expected '_' between low and high padding");
  ExpectErrorAt({kParam, "%s = f32[2] slice(%a), slice={[0,2]}"}, ",2]",
                "expected ':' between slice start and limit");
  ExpectErrorAt({kParam, "%c = f32[4] collective-permute(%a), source_target_pairs={{0,1,2}}"},
                "{0,1,2}", "a source-target pair needs two partitions {src,dst}, got 3");
  ExpectErrorAt({kParam, "%b = f32[4] negate(%a), sharding={tiled}"}, "{tiled}",
                "bad sharding: sharding '{tiled}'");
  ExpectErrorAt({kParam, "%b = f32[4] negate(%a), sharding={devices=[2]0,1"}, "{devices",
                "unterminated sharding={...} (no closing '}' on its line)");
  ExpectErrorAt({kParam, "%l = (f32[4]) loop(%a), trip_count=1, body=%nobody"}, "%nobody",
                "body=%nobody names no computation of this module");
}

TEST_CASE("bad shapes and constants") {
  ExpectErrorAt({"%a = c64[4] parameter(0)"}, "c64",
                "unknown element type 'c64' (expected one of f32, bf16, s32, pred, f16, f64");
  ExpectErrorAt({"%a = f32[4,-1] parameter(0)"}, "-1", "dimension -1 is negative");
  ExpectErrorAt({"%a = f32[4 parameter(0)"}, "parameter",
                "expected ']' to close the dimensions, got 'parameter'");
  ExpectErrorAt({"%c = f32[4] constant({1, 2, 3})"}, "{1", "constant of shape f32[4] needs 4 "
                                                           "values, got 3");
  ExpectErrorAt({"%c = f32[2,2] constant({{1, 2}, {3}})"}, "{3}",
                "dimension 1 of f32[2,2] has 2 elements, these braces hold 1");
  ExpectErrorAt({"%c = s32[] constant(1.5)"}, "1.5", "'1.5' is not of type s32");
  ExpectErrorAt({"%c = pred[] constant(2)"}, "2)", "'2' is not of type pred");
  ExpectErrorAt({"%c = f32[] constant(one)"}, "one", "malformed number 'one'");
  ExpectErrorAt({"%c = f32[] constant(nan(0xzz))"}, "nan", "bad NaN 'nan(0xzz)'");
  ExpectErrorAt({"%c = (f32[]) constant(1)"}, "1)", "a constant must have an array shape");
  // Sizes that do not fit int64: (2^63 - 1)^2 elements; 2^62 x 4 = 2^64 elements; 2^61
  // elements of 4 bytes = 2^63 bytes.
  ExpectErrorAt({"%a = f32[9223372036854775807,9223372036854775807] parameter(0)"}, "f32",
                "shape f32[9223372036854775807,9223372036854775807]: its element count overflows "
                "int64");
  ExpectErrorAt({"%a = f32[4611686018427387904,4] parameter(0)"}, "f32",
                "its element count overflows int64");
  ExpectErrorAt({"%a = f32[2305843009213693952] parameter(0)"}, "f32",
                "shape f32[2305843009213693952]: its size in bytes overflows int64");
  // Two values of 2^62 bytes each: each fits, their sum (what a memory model adds up) does not.
  CHECK_THROWS_WITH_AS(ParseModule(Main({"%a = f32[1152921504606846976] parameter(0)",
                                         "%b = f32[1152921504606846976] parameter(1)",
                                         "ROOT %t = (f32[1152921504606846976], "
                                         "f32[1152921504606846976]) tuple(%a, %b)"}),
                                   "t.hlo"),
                       doctest::Contains("instruction %b: the module's values add up to more than "
                                         "2^63 bytes"),
                       Error);
  // A constant that claims 4e12 values but holds one: an error, with no 16 TB reserved first.
  ExpectErrorAt({"%c = f32[1000000000000] constant({1})"}, "{1",
                "constant of shape f32[1000000000000] needs 1000000000000 values, got 1");
}

TEST_CASE("nesting and rank are bounded: no recursion or allocation on input depth") {
  // 65 levels of tuples around f32[] (kMaxShapeDepth = 64), and a rank-65 shape (kMaxRank).
  const std::string deep = std::string(65, '(') + "f32[]" + std::string(65, ')');
  ExpectErrorAt({"%a = " + deep + " parameter(0)"}, "f32[]", "tuple shapes nest deeper than 64");
  std::string dims = "1";
  for (int k = 1; k < 65; ++k) dims += ",1";
  ExpectErrorAt({"%a = f32[" + dims + "] parameter(0)"}, "1]", "more than 64 dimensions");
  // 40 000 '(' (the size that overflowed the stack) stop at the 66th: 65 columns after the
  // first.
  const std::string text = Main({"%a = " + std::string(40000, '(') + " parameter(0)"});
  const std::string first = Loc(text, "(");
  const size_t colon = first.find(':');
  ExpectError(text, first.substr(0, colon + 1) + std::to_string(std::stoi(first.substr(colon + 1)) + 65),
              "tuple shapes nest deeper than 64 levels");
}

TEST_CASE("shape rules and the verifier point at the instruction") {
  const std::string x = "%x = f32[4,8] parameter(0)";
  const std::string y = "%y = f32[8,4] parameter(1)";
  // A written shape that differs from the rule: at the shape.
  ExpectErrorAt({x, y, "%d = f32[4,5] dot(%x, %y), lhs_contracting_dims={1}, "
                       "rhs_contracting_dims={0}"},
                "f32[4,5]",
                "%d: shape f32[4,5] does not match the dot shape rule, which gives f32[4,4]");
  // Operands the rule rejects: at the instruction.
  ExpectErrorAt({x, y, "%d = f32[4,4] dot(%x, %y), lhs_contracting_dims={0}, "
                       "rhs_contracting_dims={0}"},
                "%d", "%d (dot): contracting dim sizes differ: 4 vs 8");
  ExpectErrorAt({x, "%t = (f32[4,8]) tuple(%x)", "%g = f32[4,8] get-tuple-element(%t), index=3"},
                "%g", "index 3 out of range");
  ExpectErrorAt({x, "%b = f32[4,8] parameter(0)"}, "%b",
                "instruction %b: parameter number 0 is used twice");
  ExpectErrorAt({x, "%b = f32[4,8] negate(%x), sharding={devices=[2,1]0}"}, "%b",
                "lists 1 devices, tile dims need 2");
  // A loop whose body is the entry.
  ExpectErrorAt({"%i = s32[] parameter(0)", "%l = () loop(), trip_count=1, body=%main"}, "%l",
                "loop body cannot be the entry computation");
}

TEST_CASE("extents and products that overflow int64 are errors naming the instruction") {
  const std::string big = "9223372036854775807";  // INT64_MAX
  // pad: 4 + (2^63 - 1) + (2^63 - 1) overflows.
  ExpectErrorAt({kParam, "%z = f32[] constant(0)",
                 "%p = f32[5] pad(%a, %z), padding=" + big + "_" + big},
                "%p", "%p (pad): the padded extent overflows int64");
  // slice with the largest stride: ceil(4 / (2^63 - 1)) = 1, no wrap-around.
  ExpectErrorAt({kParam, "%s = f32[2] slice(%a), slice={[0:4:" + big + "]}"}, "f32[2]",
                "shape f32[2] does not match the slice shape rule, which gives f32[1]");
  // all-gather over 4 of a dim of 2^62 + 1: 2^64 + 4 overflows (pred: 1 byte an element, so
  // the operand itself fits).
  ExpectErrorAt({"%x = pred[4611686018427387905] parameter(0)",
                 "%g = pred[4] all-gather(%x), dimensions={0}, replica_groups={{0,1,2,3}}"},
                "%g", "%g (all-gather): the gathered extent overflows int64");
  // Tile dims whose product wraps used to pass: 2^32 x 2^32 = 2^64 wraps to 0.
  ExpectErrorAt({"%x = f32[4,8] parameter(0)",
                 "%b = f32[4,8] negate(%x), sharding={devices=[4294967296,4294967296]0}"},
                "%b", "the product of its tile dims overflows int64");
}

TEST_CASE("names, roots, computations") {
  ExpectErrorAt({kParam, "%a = f32[4] negate(%a)"}, "%a =", "instruction name %a is already "
                                                            "defined at t.hlo:3:3",
                2);
  ExpectErrorAt({kParam, "ROOT %b = f32[4] negate(%a)", "ROOT %c = f32[4] abs(%a)"}, "ROOT %c",
                "computation %main has a second ROOT (the first is %b)");
  ExpectErrorAt({"%a f32[4] parameter(0)"}, "f32", "expected '=' after %a, got 'f32'");
  ExpectErrorAt({kParam, "%b = f32[4] negate(%a", "}"}, "}\n}",
                "expected ')' to close the operand list of %b, got '}'");

  std::string text = "ENTRY %main {\n}\n";
  ExpectError(text, "1:1", "expected 'HloModule <name>' at the start, got 'ENTRY'");
  text = "HloModule m\n%c {\n  %a = f32[] parameter(0)\n}\n";
  ExpectError(text, "1:1", "module has no ENTRY computation");
  text = "HloModule m\nENTRY %a {\n  %x = f32[] parameter(0)\n}\nENTRY %b {\n"
         "  %y = f32[] parameter(0)\n}\n";
  ExpectError(text, "5:1", "a second ENTRY computation; %a is already the entry");
  text = "HloModule m\nENTRY %a {\n  %x = f32[] parameter(0)\n}\n%a {\n}\n";
  ExpectError(text, "5:1", "computation %a is already defined at t.hlo:2:7");
  text = "HloModule m\nENTRY %main {\n  %x = f32[] parameter(0)\n";
  ExpectError(text, "2:7", "computation %main is not closed with '}'");
  // A computation that loops into itself: the verifier names the computation.
  text = "HloModule m\n%b {\n  %i = s32[] parameter(0)\n  %l = () loop(), trip_count=1, "
         "body=%b\n  ROOT %t = () tuple()\n}\nENTRY %main {\n  %p = f32[] parameter(0)\n}\n";
  ExpectError(text, Loc(text, "%l"), "loop body cannot be the computation containing the loop");
}

TEST_CASE("strings and comments") {
  ExpectErrorAt({"%a = f32[] parameter(0), scope=\"open"}, "\"open", "unterminated string");
  ExpectErrorAt({"%a = f32[] parameter(0), scope=\"a\\qb\""}, "\\q", "unknown escape '\\q'");
  ExpectErrorAt({"%a = f32[] parameter(0), scope=\"\\x4\""}, "\\x", "\\x needs two hex digits");
  ExpectErrorAt({"%a = f32[] parameter(0), scope=moe"}, "moe",
                "expected a \"quoted string\", got 'moe'");
  ExpectErrorAt({"%a = f32[] parameter(0) /* never closed"}, "/*", "unterminated /* comment");
  // Lines and columns count through comments of either kind.
  std::string text =
      "HloModule m // the module\n"
      "/* a comment\n"
      "   over three\n"
      "   lines */ ENTRY %main {\n"
      "  %a = f32[] parameter(0) // a parameter\n"
      "  %b = f32[] negate(%a), /* inline */ kind=add\n"
      "}\n";
  ExpectError(text, Loc(text, "kind"), "attribute 'kind' does not apply to negate");
  CHECK(Loc(text, "kind") == "6:39");
}

TEST_CASE("truncated or corrupted text gives an error, never a crash") {
  // Prefixes of a printed module, and the module with one character deleted or replaced: each either parses (a harmless edit) or throws podsim::Error with a location.
  const std::string text = PrintModule(*testing::BuildAllOpsModule());
  int errors = 0;
  auto parse = [&](const std::string& t) {
    try {
      ParseModule(t, "t.hlo");
    } catch (const Error& e) {
      ++errors;
      CHECK_MESSAGE(std::string(e.what()).rfind("t.hlo:", 0) == 0, e.what());
    }
  };
  // Every 3rd position keeps the test fast; the positions cover every kind of token.
  for (size_t n = 0; n < text.size(); n += 3) parse(text.substr(0, n));
  for (size_t k = 0; k < text.size(); k += 3) {
    parse(text.substr(0, k) + text.substr(k + 1));
    std::string replaced = text;
    replaced[k] = "{}()[],=%\"x9-_ "[k % 16];
    parse(replaced);
  }
  CHECK(errors > static_cast<int>(text.size() / 3));
}

}  // namespace
}  // namespace podsim::ir

namespace podsim::ir {
namespace {

TEST_CASE("bytes that are not printable text are shown escaped, so a NUL cannot cut the message") {
  const std::string nul("\0\0\0", 3);
  CHECK_THROWS_WITH_AS(ParseModule(nul, "t.hlo"),
                       "t.hlo:1:1: expected 'HloModule <name>' at the start, got '\\x00'", Error);
  CHECK_THROWS_WITH_AS(ParseModule("HloModule m\nENTRY %main {\n  ROOT %x = f32[2] parameter(0), \xff\n}\n", "t.hlo"),
                       doctest::Contains("t.hlo:3:34: expected an attribute name, got '\\xff'"),
                       Error);
}

}  // namespace
}  // namespace podsim::ir
