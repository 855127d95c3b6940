#include "ir/text_lexer.h"

#include <charconv>
#include <system_error>

#include "base/error.h"
#include "ir/text_numbers.h"

namespace podsim::ir::text_internal {

namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Lexer::Lexer(std::string_view text, std::string filename)
    : p_(text.data()),
      end_(text.data() + text.size()),
      line_start_(text.data()),
      filename_(std::move(filename)) {}

void Lexer::Newline(const char* at) {
  ++line_;
  line_start_ = at + 1;
}

void Lexer::SkipTrivia() {
  while (p_ != end_) {
    char c = *p_;
    if (c == '\n') {
      Newline(p_);
      ++p_;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++p_;
    } else if (c == '/' && end_ - p_ >= 2 && p_[1] == '/') {
      while (p_ != end_ && *p_ != '\n') ++p_;
    } else if (c == '/' && end_ - p_ >= 2 && p_[1] == '*') {
      Loc open = Here0();
      p_ += 2;
      while (true) {
        if (end_ - p_ < 2) Fail(open, "unterminated /* comment");
        if (p_[0] == '*' && p_[1] == '/') break;
        if (*p_ == '\n') Newline(p_);
        ++p_;
      }
      p_ += 2;
    } else {
      return;
    }
  }
}

Loc Lexer::Here0() const { return {line_, static_cast<int>(p_ - line_start_) + 1}; }

Loc Lexer::Here() {
  SkipTrivia();
  return Here0();
}

std::string Lexer::Where(Loc loc) const {
  return filename_ + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

void Lexer::Fail(Loc loc, const std::string& message) const {
  throw Error(Where(loc) + ": " + message);
}

std::string Lexer::Describe() {
  SkipTrivia();
  if (p_ == end_) return "end of input";
  const char* q = p_;
  while (q != end_ && IsNameChar(*q) && q - p_ < 24) ++q;
  if (q == p_) ++q;
  // A byte that is not printable ASCII (a NUL would cut the message short) shows as \xNN.
  std::string shown;
  for (const char* c = p_; c != q; ++c) {
    const unsigned char u = static_cast<unsigned char>(*c);
    if (u >= 0x20 && u < 0x7f) {
      shown += *c;
    } else {
      static const char* kHex = "0123456789abcdef";
      shown += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    }
  }
  return "'" + shown + "'";
}

bool Lexer::AtEnd() {
  SkipTrivia();
  return p_ == end_;
}

bool Lexer::Peek(char c) {
  SkipTrivia();
  return p_ != end_ && *p_ == c;
}

bool Lexer::Consume(char c) {
  if (!Peek(c)) return false;
  ++p_;
  return true;
}

bool Lexer::Consume(std::string_view text) {
  SkipTrivia();
  if (static_cast<size_t>(end_ - p_) < text.size() || std::string_view(p_, text.size()) != text) {
    return false;
  }
  p_ += text.size();
  return true;
}

void Lexer::Expect(char c, std::string_view context) {
  if (Consume(c)) return;
  FailHere(std::string("expected '") + c + "' " + std::string(context) + ", got " + Describe());
}

bool Lexer::ConsumeKeyword(std::string_view keyword) {
  SkipTrivia();
  const char* q = p_;
  while (q != end_ && IsNameChar(*q)) ++q;
  if (std::string_view(p_, q - p_) != keyword) return false;
  p_ = q;
  return true;
}

std::string_view Lexer::Word() {
  SkipTrivia();
  const char* start = p_;
  while (p_ != end_ && IsNameChar(*p_)) ++p_;
  return std::string_view(start, p_ - start);
}

std::string_view Lexer::PeekWord() {
  const char* saved = p_;
  std::string_view w = Word();
  p_ = saved;
  return w;
}

std::string_view Lexer::AlnumRun() {
  const char* start = p_;
  while (p_ != end_ && IsAlnum(*p_)) ++p_;
  return std::string_view(start, p_ - start);
}

std::string Lexer::Name(std::string_view what) {
  if (Peek('"')) return QuotedString();
  std::string_view w = Word();
  if (w.empty()) FailHere("expected " + std::string(what) + ", got " + Describe());
  return std::string(w);
}

std::string Lexer::QuotedString() {
  Loc open = Here();
  if (p_ == end_ || *p_ != '"') FailHere("expected a \"quoted string\", got " + Describe());
  ++p_;
  std::string out;
  while (true) {
    const char* run = p_;
    while (p_ != end_ && *p_ != '"' && *p_ != '\\' && *p_ != '\n') ++p_;
    out.append(run, p_);
    if (p_ == end_ || *p_ == '\n') Fail(open, "unterminated string (a string ends on its line)");
    if (*p_ == '"') {
      ++p_;
      return out;
    }
    Loc escape = Here0();
    ++p_;  // backslash
    char c = p_ == end_ ? '\0' : *p_;
    switch (c) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'x': {
        int hi = end_ - p_ > 2 ? HexValue(p_[1]) : -1;
        int lo = end_ - p_ > 2 ? HexValue(p_[2]) : -1;
        if (hi < 0 || lo < 0) Fail(escape, "\\x needs two hex digits");
        out.push_back(static_cast<char>(hi * 16 + lo));
        p_ += 2;
        break;
      }
      default:
        Fail(escape, "unknown escape '\\" + std::string(1, c) +
                         "' (use \\\" \\\\ \\n \\t \\r or \\xHH)");
    }
    ++p_;
  }
}

int64_t Lexer::Int() {
  Loc loc = Here();
  int64_t v = 0;
  auto res = std::from_chars(p_, end_, v);
  if (res.ec == std::errc::result_out_of_range) Fail(loc, "integer out of range");
  if (res.ec != std::errc()) Fail(loc, "expected an integer, got " + Describe());
  p_ = res.ptr;
  return v;
}

uint64_t Lexer::Uint() {
  Loc loc = Here();
  uint64_t v = 0;
  auto res = std::from_chars(p_, end_, v);
  if (res.ec == std::errc::result_out_of_range) Fail(loc, "integer out of range for 64 bits");
  if (res.ec != std::errc()) Fail(loc, "expected a non-negative integer, got " + Describe());
  p_ = res.ptr;
  return v;
}

double Lexer::Double() {
  Loc loc = Here();
  size_t n = ScanNumber(p_, end_, /*allow_exact_suffix=*/false);
  if (n == 0) Fail(loc, "expected a number, got " + Describe());
  double v = 0;
  std::string error;
  if (!ParseDouble(std::string_view(p_, n), &v, &error)) Fail(loc, error);
  p_ += n;
  return v;
}

double Lexer::Element(DType t) {
  Loc loc = Here();
  size_t n = ScanNumber(p_, end_, /*allow_exact_suffix=*/true);
  if (n == 0) {
    while (p_ + n != end_ && IsAlnum(p_[n])) ++n;
    if (n == 0) Fail(loc, "expected a " + std::string(DTypeName(t)) + " value, got " + Describe());
  }
  double v = 0;
  std::string error;
  if (!ParseElement(std::string_view(p_, n), t, &v, &error)) Fail(loc, error);
  p_ += n;
  return v;
}

std::string_view Lexer::BraceBlock(std::string_view what) {
  Loc open = Here();
  if (p_ == end_ || *p_ != '{') {
    FailHere("expected '{' to open " + std::string(what) + ", got " + Describe());
  }
  const char* start = p_;
  while (p_ != end_ && *p_ != '}' && *p_ != '\n') ++p_;
  if (p_ == end_ || *p_ != '}') {
    Fail(open, "unterminated " + std::string(what) + " (no closing '}' on its line)");
  }
  ++p_;
  return std::string_view(start, p_ - start);
}

void Lexer::SkipParens() {
  Loc open = Here();
  int depth = 0;
  do {
    if (p_ == end_) Fail(open, "unbalanced '(' (no closing ')')");
    if (*p_ == '(') ++depth;
    if (*p_ == ')') --depth;
    if (*p_ == '\n') Newline(p_);
    ++p_;
  } while (depth > 0);
}

void Lexer::SkipQuoted() {
  const Loc open = Here0();
  ++p_;
  while (p_ != end_ && *p_ != '"' && *p_ != '\n') p_ += (*p_ == '\\' && end_ - p_ > 1 && p_[1] != '\n') ? 2 : 1;
  if (p_ == end_ || *p_ != '"') Fail(open, "unterminated string (a string ends on its line)");
  ++p_;
}

std::string_view Lexer::Balanced(std::string_view what) {
  const Loc open = Here();
  if (p_ == end_ || (*p_ != '{' && *p_ != '(' && *p_ != '[')) {
    FailHere("expected '{', '(' or '[' to open " + std::string(what) + ", got " + Describe());
  }
  const char* start = p_;
  std::string stack;  // expected closing brackets
  do {
    if (p_ == end_) {
      Fail(open, "unterminated " + std::string(what) + " (no closing '" + stack.back() + "')");
    }
    const char c = *p_;
    if (c == '{' || c == '(' || c == '[') {
      stack.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
    } else if (c == '}' || c == ')' || c == ']') {
      if (stack.empty() || c != stack.back()) {
        Fail(Here0(), "unbalanced '" + std::string(1, c) + "' in " + std::string(what));
      }
      stack.pop_back();
    } else if (c == '"') {
      SkipQuoted();
      continue;
    } else if (c == '\n') {
      Newline(p_);
    }
    ++p_;
  } while (!stack.empty());
  return std::string_view(start, p_ - start);
}

std::string_view Lexer::RawValue(std::string_view what) {
  SkipTrivia();
  const char* start = p_;
  while (p_ != end_) {
    const char c = *p_;
    if (c == '{' || c == '(' || c == '[') {
      Balanced(what);
    } else if (c == '"') {
      SkipQuoted();
    } else if (c == ',' || c == ')' || c == '}' || c == ']' || c == ' ' || c == '\t' ||
               c == '\n' || c == '\r') {
      break;
    } else {
      ++p_;
    }
  }
  if (p_ == start) FailHere("expected a value for " + std::string(what) + ", got " + Describe());
  return std::string_view(start, p_ - start);
}

}  // namespace podsim::ir::text_internal
