// Numbers in the IR text format (ir/text_numbers.h, internal): every value prints as text that
// reads back bit for bit — all 65536 bf16 patterns, a sweep of f32 patterns, doubles for
// attributes — and prints short.

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "ir/literal.h"
#include "ir/text_numbers.h"

namespace podsim::ir::text_internal {
namespace {

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

std::string Element(double v, DType t) {
  std::string out;
  AppendElement(v, t, &out);
  return out;
}

// Prints v as an element of t, scans and parses it back; checks the bits and the whole text was
// one token.
void CheckElement(double v, DType t) {
  std::string text = Element(v, t);
  size_t n = ScanNumber(text.data(), text.data() + text.size(), true);
  if (n == 0) n = text.size();  // true / false
  REQUIRE_MESSAGE(n == text.size(), text);
  double back = 0;
  std::string error;
  REQUIRE_MESSAGE(ParseElement(text, t, &back, &error), text << ": " << error);
  CHECK_MESSAGE(Bits(back) == Bits(v), text);
}

TEST_CASE("every bf16 value round-trips and prints in at most 10 characters") {
  // 8 significant bits need at most 1 + ceil(8 log10 2) = 4 significant decimal digits, so no
  // finite value needs more than "-1.234e-38" (10 characters).
  size_t longest = 0;
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    double v = std::bit_cast<float>(hi << 16);
    CheckElement(v, DType::kBF16);
    if (std::isfinite(v)) longest = std::max(longest, Element(v, DType::kBF16).size());
  }
  CHECK(longest == 10);
  CHECK(Element(RoundToDType(0.1, DType::kBF16), DType::kBF16) == "0.1");
  CHECK(Element(RoundToDType(1.0 / 3, DType::kBF16), DType::kBF16) == "0.334");
  CHECK(Element(RoundToDType(3.14159, DType::kBF16), DType::kBF16) == "3.14");
}

TEST_CASE("f32 values round-trip and print shortest") {
  std::mt19937_64 rng(42);
  for (int k = 0; k < 200000; ++k) {
    uint32_t bits = static_cast<uint32_t>(rng());
    CheckElement(std::bit_cast<float>(bits), DType::kF32);
  }
  for (float f : {0.0f, -0.0f, 1.0f, 0.1f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    CheckElement(f, DType::kF32);
  }
  CHECK(Element(static_cast<float>(0.1), DType::kF32) == "0.1");
  CHECK(Element(-0.0, DType::kF32) == "-0");
  CHECK(Element(16777216, DType::kF32) == "16777216");
}

TEST_CASE("NaNs keep sign and payload") {
  CHECK(Element(std::numeric_limits<double>::quiet_NaN(), DType::kF32) == "nan");
  CHECK(Element(-std::numeric_limits<double>::quiet_NaN(), DType::kF32) == "-nan");
  const double payload = std::bit_cast<double>(uint64_t{0x7ff0000000000abc});
  CHECK(Element(payload, DType::kBF16) == "nan(0xabc)");
  for (uint64_t bits : {uint64_t{0x7ff8000000000000}, uint64_t{0xfff8000000000000},
                        uint64_t{0x7ff0000000000001}, uint64_t{0xffffffffffffffff}}) {
    CheckElement(std::bit_cast<double>(bits), DType::kF32);
    CheckElement(std::bit_cast<double>(bits), DType::kBF16);
  }
}

TEST_CASE("s32 and pred print as integers and booleans") {
  for (double v : {0.0, 1.0, -1.0, 2147483647.0, -2147483648.0}) CheckElement(v, DType::kS32);
  CHECK(Element(-2147483648.0, DType::kS32) == "-2147483648");
  CHECK(Element(1, DType::kPred) == "true");
  CHECK(Element(0, DType::kPred) == "false");
  CheckElement(1, DType::kPred);
  CheckElement(0, DType::kPred);
}

TEST_CASE("values outside their type keep the exact double with a d suffix") {
  CHECK(Element(0.1, DType::kF32) == "0.1d");
  CHECK(Element(2147483648.0, DType::kS32) == "2147483648d");
  CHECK(Element(-0.0, DType::kS32) == "-0d");
  CHECK(Element(std::numeric_limits<double>::infinity(), DType::kPred) == "infd");
  for (double v : {0.1, 1e-40, 1e300, -0.0}) {
    CheckElement(v, DType::kF32);
    CheckElement(v, DType::kBF16);
    CheckElement(v, DType::kS32);
    CheckElement(v, DType::kPred);
  }
}

TEST_CASE("doubles round-trip") {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 100000; ++k) {
    double v = std::bit_cast<double>(rng());
    std::string text;
    AppendDouble(v, &text);
    double back = 0;
    std::string error;
    REQUIRE_MESSAGE(ParseDouble(text, &back, &error), text << ": " << error);
    CHECK_MESSAGE(Bits(back) == Bits(v), text);
  }
  double v = 0;
  std::string error;
  CHECK(!ParseDouble("1e999", &v, &error));
  CHECK(error == "number '1e999' is out of range");
  CHECK(!ParseDouble("1.2.3", &v, &error));
  CHECK(error == "malformed number '1.2.3'");
}

TEST_CASE("names print bare when they can, quoted otherwise") {
  std::string out;
  AppendName("add.1", &out);
  AppendName("get-tuple-element_2", &out);
  AppendName("a b", &out);
  AppendName("", &out);
  CHECK(out == "add.1get-tuple-element_2\"a b\"\"\"");
}

}  // namespace
}  // namespace podsim::ir::text_internal
