#pragma once
// Internal to the IR text format: numbers and strings as the text spells them. Every Append*
// writes text that the matching Parse*/Scan* reads back bit-exactly.
//
//   finite   shortest round-trip decimal ("1", "0.1", "-0", "1e+30")
//   inf      "inf", "-inf"
//   NaN      "nan" / "-nan" for the default quiet NaN, else "nan(0x8000000000001)" with the
//            52-bit mantissa in hex (so every payload survives)
//   exact    a constant element that is not a value of its type gets a 'd' suffix ("0.1d" in
//            an f32 constant is the double 0.1, not rounded to f32)

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/dtype.h"

namespace podsim::ir::text_internal {

void AppendInt(int64_t v, std::string* out);
void AppendUint(uint64_t v, std::string* out);
// A double attribute value (random-uniform low/high).
void AppendDouble(double v, std::string* out);
// A constant element of type `t`: true/false for pred, an integer for s32, and for f32/bf16 the
// shortest text that reads back (rounded to `t`) as exactly `v`. A value that is not of type
// `t` (0.1 in an f32 literal, 1.5 in s32) prints as its exact double with a 'd' suffix
// ("0.1d"), which ParseElement keeps unrounded.
void AppendElement(double v, DType t, std::string* out);
// `s` in double quotes with \" \\ \n \t \r and \xHH escapes (bytes >= 0x80 pass unchanged).
void AppendQuoted(std::string_view s, std::string* out);
// A name as a bare word when it is non-empty and only has [A-Za-z0-9_.-], else quoted.
void AppendName(std::string_view s, std::string* out);
bool IsNameChar(char c);

// Length of the number token at [p, end): [+-] then digits/'.'/exponent, "inf", "nan" or
// "nan(0x...)", then the 'd' suffix if allowed; 0 when there is none.
size_t ScanNumber(const char* p, const char* end, bool allow_exact_suffix);
// Parses a whole token from ScanNumber. Returns false (with `*error` set) when malformed or out of
// range.
bool ParseDouble(std::string_view token, double* v, std::string* error);
// Parses an element of type `t`: f32/bf16 decimals round to the type; s32 needs an integer in
// range; pred takes true, false, 1 or 0; a 'd'-suffixed number is kept exactly.
bool ParseElement(std::string_view token, DType t, double* v, std::string* error);

}  // namespace podsim::ir::text_internal
