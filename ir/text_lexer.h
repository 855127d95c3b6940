#pragma once
// Internal to the IR text format: a cursor over the text that skips whitespace and comments
// (`// to end of line`, `/* ... */`), reads the format's tokens in place (no token list, no
// copies except for names and strings) and reports errors as podsim::Error
// "FILE:LINE:COL: message" (1-based line and byte column).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "ir/dtype.h"

namespace podsim::ir::text_internal {

struct Loc {
  int line = 1;
  int col = 1;
};

class Lexer {
 public:
  Lexer(std::string_view text, std::string filename);

  // The location of the next token (skips whitespace and comments first).
  Loc Here();
  [[noreturn]] void Fail(Loc loc, const std::string& message) const;
  [[noreturn]] void FailHere(const std::string& message) { Fail(Here(), message); }
  // "FILE:LINE:COL" of `loc`, for messages that point at a second place.
  std::string Where(Loc loc) const;
  // The next token quoted for a message ("'foo'", "'{'", "end of input").
  std::string Describe();

  bool AtEnd();
  bool Peek(char c);
  // Whether `c` is the very next character (no whitespace or comment before it).
  bool PeekAdjacent(char c) const { return p_ != end_ && *p_ == c; }
  // Consumes `c` (after trivia) if it is next.
  bool Consume(char c);
  // Consumes `text` (after trivia) if it comes next, e.g. "->".
  bool Consume(std::string_view text);
  // Consumes `c` or fails with "expected 'c' <context>, got ...".
  void Expect(char c, std::string_view context);
  // Same, with the context built only on failure: `context()` returns a std::string.
  template <typename Context>
    requires std::is_invocable_r_v<std::string, Context>
  void Expect(char c, const Context& context) {
    if (!Consume(c)) Expect(c, std::string_view(context()));
  }
  // Consumes the word `keyword` if the next word is exactly it.
  bool ConsumeKeyword(std::string_view keyword);

  // The next run of name characters [A-Za-z0-9_.-] (possibly empty).
  std::string_view Word();
  // Word() without consuming it.
  std::string_view PeekWord();
  // The next run of [A-Za-z0-9], not skipping trivia first (for dim_labels pieces).
  std::string_view AlnumRun();
  // A bare word or a double-quoted string; fails with "expected <what>" when neither is next.
  std::string Name(std::string_view what);
  // A double-quoted string with \" \\ \n \t \r \xHH escapes.
  std::string QuotedString();
  int64_t Int();
  uint64_t Uint();
  double Double();
  // One constant element of type `t` (see text_numbers.h ParseElement).
  double Element(DType t);
  // At '{': returns the text through the next '}' on the same line (sharding bodies, which
  // do not nest).
  std::string_view BraceBlock(std::string_view what);
  // At '(': skips to after the balanced ')'.
  void SkipParens();
  // At '{', '(' or '[': consumes through the matching close, across lines, with every bracket
  // kind nesting and double-quoted strings skipped whole; returns the text, brackets included.
  std::string_view Balanced(std::string_view what);
  // An attribute value of unknown structure: a run of bracketed groups, quoted strings and
  // other characters up to a ',' ')' '}' or whitespace outside brackets. Fails if empty.
  std::string_view RawValue(std::string_view what);

  // A saved position, to look ahead and come back.
  struct Mark {
    const char* p;
    const char* line_start;
    int line;
  };
  Mark Save() const { return {p_, line_start_, line_}; }
  void Restore(const Mark& m) {
    p_ = m.p;
    line_start_ = m.line_start;
    line_ = m.line;
  }

 private:
  void SkipTrivia();
  // At '"': to after the closing quote, escapes skipped without being checked.
  void SkipQuoted();
  void Newline(const char* at);
  // The location of p_ itself (no trivia skipping).
  Loc Here0() const;

  const char* p_;
  const char* end_;
  const char* line_start_;
  int line_ = 1;
  std::string filename_;
};

}  // namespace podsim::ir::text_internal
