// Hostile input reaching base/: deep JSON, endless files, times that do not fit int64
// picoseconds. Each is a clear error, never a crash or a wrapped value.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "base/config.h"
#include "base/error.h"
#include "base/io.h"
#include "base/units.h"

namespace podsim {
namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST_CASE("JSON nested deeper than kMaxJsonDepth is refused while it is read") {
  // kMaxJsonDepth = 64: 64 levels of arrays parse; 100 000 would overflow the stack when the
  // value is printed or copied, and are refused.
  CHECK(ParseJson(Nested(kMaxJsonDepth), "x.json").is_array());
  CHECK_THROWS_WITH_AS(ParseJson(Nested(100000), "x.json"),
                       "x.json: JSON nested deeper than 64 levels", ConfigError);
  CHECK_THROWS_WITH_AS(ParseJson("{\"a\": ", "x.json"), doctest::Contains("x.json: invalid JSON"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(ParseOverrideValue(Nested(1000)),
                       "--set value: JSON nested deeper than 64 levels", ConfigError);
}

TEST_CASE("files are read up to a limit, so a device like /dev/zero is refused") {
  CHECK_THROWS_WITH_AS(ReadFile("/dev/zero", 1 << 20),
                       "'/dev/zero' holds more than 1048576 bytes, the most an input file may have",
                       Error);
  CHECK_THROWS_WITH_AS(ReadJsonFile("/dev/zero"), doctest::Contains("/dev/zero: '/dev/zero' holds more than"),
                       ConfigError);
}

TEST_CASE("a time beyond int64 picoseconds is an error, not a wrapped value") {
  // 1e13 us = 1e19 ps > 9.2e18: the conversion used to wrap (a latency became 1 ps).
  CHECK_THROWS_WITH_AS(Time::FromMicros(1e13), doctest::Contains("is out of range"), Error);
  CHECK_THROWS_AS(Time::FromSeconds(-1e8), Error);
  CHECK_THROWS_AS(Time::FromSeconds(std::nan("")), Error);
  CHECK(Time::FromSeconds(1e6).picos() == 1'000'000'000'000'000'000);  // 1e6 s still fits
}

}  // namespace
}  // namespace podsim
