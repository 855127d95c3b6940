#include "ir/text_numbers.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <type_traits>

#include "ir/literal.h"

namespace podsim::ir::text_internal {

namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr uint64_t kMantissaMask = (uint64_t{1} << 52) - 1;
constexpr uint64_t kExponentMask = uint64_t{0x7ff} << 52;
constexpr uint64_t kQuietBit = uint64_t{1} << 51;
// Marks a constant element read as an exact double, not rounded to its type ("0.1d").
constexpr char kExactSuffix = 'd';

void AppendNan(double v, std::string* out) {
  uint64_t bits = std::bit_cast<uint64_t>(v);
  if (bits & kSignBit) out->push_back('-');
  out->append("nan");
  uint64_t mantissa = bits & kMantissaMask;
  if (mantissa == kQuietBit) return;
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), mantissa, 16);
  out->append("(0x");
  out->append(buf, res.ptr);
  out->push_back(')');
}

// Appends inf/nan; returns false for a finite value.
bool AppendSpecial(double v, std::string* out) {
  if (std::isnan(v)) {
    AppendNan(v, out);
    return true;
  }
  if (std::isinf(v)) {
    out->append(v > 0 ? "inf" : "-inf");
    return true;
  }
  return false;
}

// Reads "inf" or "nan[(0x...)]" after an optional sign; returns false if `token` is not one.
bool ParseSpecial(std::string_view token, double* v, std::string* error) {
  bool negative = false;
  std::string_view t = token;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  if (t == "inf") {
    *v = negative ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
    return true;
  }
  if (t.substr(0, 3) != "nan") return false;
  uint64_t mantissa = kQuietBit;
  if (t.size() > 3) {
    std::string_view payload = t.substr(3);
    bool ok = payload.size() > 4 && payload.substr(0, 3) == "(0x" && payload.back() == ')';
    if (ok) {
      const char* first = payload.data() + 3;
      const char* last = payload.data() + payload.size() - 1;
      auto res = std::from_chars(first, last, mantissa, 16);
      ok = res.ec == std::errc() && res.ptr == last && mantissa != 0 && mantissa <= kMantissaMask;
    }
    if (!ok) {
      *error = "bad NaN '" + std::string(token) + "' (expected nan or nan(0x<52-bit payload>))";
      *v = 0;
      return true;
    }
  }
  *v = std::bit_cast<double>((negative ? kSignBit : 0) | kExponentMask | mantissa);
  return true;
}

// Parses a finite decimal as T; out-of-range magnitudes go through double so that they round
// to inf or zero like a conversion would.
template <typename T>
bool ParseFinite(std::string_view token, T* v, std::string* error) {
  const char* first = token.data();
  const char* last = token.data() + token.size();
  if (first != last && *first == '+') ++first;
  T value{};
  auto res = std::from_chars(first, last, value);
  if (res.ec == std::errc() && res.ptr == last) {
    *v = value;
    return true;
  }
  if (res.ec == std::errc::result_out_of_range && res.ptr == last) {
    if constexpr (std::is_same_v<T, float>) {
      double d = 0;
      if (ParseFinite<double>(token, &d, error)) {
        *v = static_cast<float>(d);
        return true;
      }
      return false;
    }
    *error = "number '" + std::string(token) + "' is out of range";
    return false;
  }
  *error = "malformed number '" + std::string(token) + "'";
  return false;
}

}  // namespace

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}

void AppendUint(uint64_t v, std::string* out) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}

void AppendDouble(double v, std::string* out) {
  if (AppendSpecial(v, out)) return;
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}

void AppendElement(double v, DType t, std::string* out) {
  switch (t) {
    case DType::kPred:
      if (v == 1.0) {
        out->append("true");
        return;
      }
      if (std::bit_cast<uint64_t>(v) == 0) {
        out->append("false");
        return;
      }
      break;
    case DType::kS8:
    case DType::kU8:
    case DType::kS16:
    case DType::kU16:
    case DType::kS32:
    case DType::kU32:
    case DType::kS64:
    case DType::kU64:
      // Integers whose double is an integer print as integers (2^63 and above do not fit
      // AppendInt's int64: they keep the exact double form below).
      if (RoundToDType(v, t) == v && !(v == 0 && std::signbit(v)) && v < 9.2233720368547758e18) {
        AppendInt(static_cast<int64_t>(v), out);
        return;
      }
      break;
    case DType::kToken: break;
    case DType::kF64:
      AppendDouble(v, out);
      return;
    case DType::kF32: {
      if (AppendSpecial(v, out)) return;
      float f = static_cast<float>(v);
      if (static_cast<double>(f) != v) break;
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof(buf), f);
      out->append(buf, res.ptr);
      return;
    }
    case DType::kBF16:
    case DType::kF16:
    case DType::kF8E4M3FN:
    case DType::kF8E5M2: {
      if (AppendSpecial(v, out)) return;
      if (RoundToDType(v, t) != v) break;
      // The shortest float text always reads back; a few significant digits often do too
      // (bf16 keeps 8 mantissa bits, f16 11, f8 at most 4): take the shortest candidate, the
      // float form on ties.
      float f = static_cast<float>(v);
      char best[32];
      auto res = std::to_chars(best, best + sizeof(best), f);
      size_t best_len = static_cast<size_t>(res.ptr - best);
      char buf[32];
      for (int precision = 1; precision <= 4; ++precision) {
        auto r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::general, precision);
        size_t len = static_cast<size_t>(r.ptr - buf);
        if (len >= best_len) continue;
        double back = 0;
        std::string error;
        if (!ParseElement(std::string_view(buf, len), t, &back, &error) || back != v) continue;
        std::copy(buf, r.ptr, best);
        best_len = len;
        break;
      }
      out->append(best, best_len);
      return;
    }
  }
  // Not a value of type t: keep the double exactly.
  AppendDouble(v, out);
  out->push_back(kExactSuffix);
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

void AppendQuoted(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\t': out->append("\\t"); break;
      case '\r': out->append("\\r"); break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out->append("\\x");
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendName(std::string_view s, std::string* out) {
  bool bare = !s.empty();
  for (char c : s) bare = bare && IsNameChar(c);
  if (bare) {
    out->append(s);
  } else {
    AppendQuoted(s, out);
  }
}

size_t ScanNumber(const char* p, const char* end, bool allow_exact_suffix) {
  const char* q = p;
  if (q != end && (*q == '-' || *q == '+')) ++q;
  if (end - q >= 3 && q[0] == 'i' && q[1] == 'n' && q[2] == 'f') {
    q += 3;
  } else if (end - q >= 3 && q[0] == 'n' && q[1] == 'a' && q[2] == 'n') {
    q += 3;
    if (q != end && *q == '(') {
      while (q != end && *q != ')' && *q != '\n') ++q;
      if (q != end && *q == ')') ++q;
    }
  } else {
    const char* digits = q;
    while (q != end && ((*q >= '0' && *q <= '9') || *q == '.')) ++q;
    if (q == digits) return 0;
    if (q != end && (*q == 'e' || *q == 'E')) {
      ++q;
      if (q != end && (*q == '-' || *q == '+')) ++q;
      while (q != end && *q >= '0' && *q <= '9') ++q;
    }
  }
  if (allow_exact_suffix && q != end && *q == kExactSuffix) ++q;
  return q - p;
}

bool ParseDouble(std::string_view token, double* v, std::string* error) {
  error->clear();
  if (ParseSpecial(token, v, error)) return error->empty();
  return ParseFinite<double>(token, v, error);
}

bool ParseElement(std::string_view token, DType t, double* v, std::string* error) {
  error->clear();
  if (token.size() > 1 && token.back() == kExactSuffix) {
    return ParseDouble(token.substr(0, token.size() - 1), v, error);
  }
  if (t == DType::kPred) {
    if (token == "true") {
      *v = 1;
      return true;
    }
    if (token == "false") {
      *v = 0;
      return true;
    }
  }
  if (ParseSpecial(token, v, error)) {
    if (!error->empty()) return false;
    if (IsFloating(t)) {
      // f8e4m3fn has no infinities: inf reads as NaN. Other specials keep their bits.
      if (std::isinf(*v)) *v = RoundToDType(*v, t);
      return true;
    }
  } else if (t == DType::kF64) {
    return ParseFinite<double>(token, v, error);
  } else if (IsFloating(t)) {
    // Through float, as XLA reads a literal of these types (the double rounding is exact
    // for every type narrower than f32's 24 bits except at ties, which a printed value of
    // the type never is).
    float f = 0;
    if (!ParseFinite<float>(token, &f, error)) return false;
    *v = RoundToDType(f, t);
    return true;
  } else if (!ParseFinite<double>(token, v, error)) {
    return false;
  }
  if (RoundToDType(*v, t) != *v) {
    *error = "'" + std::string(token) + "' is not of type " + std::string(DTypeName(t)) +
             (t == DType::kPred ? " (expected true, false, 1 or 0" : " (expected an integer") +
             "; a 'd' suffix keeps any double exactly)";
    return false;
  }
  return true;
}

}  // namespace podsim::ir::text_internal
