// Hostile input reaching base/: deep JSON, endless files, times that do not fit int64
// picoseconds. Each is a clear error, never a crash or a wrapped value.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "base/config.h"
#include "base/error.h"
#include "base/io.h"
#include "base/memory.h"
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
  // A number beyond double (found by tests/fuzz/topology_fuzz) is invalid JSON, not an uncaught
  // nlohmann::out_of_range.
  CHECK_THROWS_WITH_AS(ParseJson("{\"a\": 9999e999999999999999999}", "x.json"),
                       doctest::Contains("x.json: invalid JSON: [json.exception.out_of_range.406] number overflow"),
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

TEST_CASE("Time arithmetic that leaves the int64 picosecond range throws") {
  CHECK_THROWS_WITH_AS(Time::Max() + Time::Picos(1), doctest::Contains("leaves the picosecond clock's range"), Error);
  CHECK_THROWS_AS(Time::Picos(-5) - Time::Max(), Error);
  // A loop of 1e13 trips of 1 s: 1e25 ps.
  CHECK_THROWS_WITH_AS(Time::FromSeconds(1) * int64_t{10000000000000},
                       doctest::Contains("1 s * 10000000000000"), Error);
  CHECK_THROWS_AS(Time::FromSeconds(1).Scaled(1e30), Error);
  Time t = Time::Max() - Time::Picos(1);
  CHECK_THROWS_AS(t += Time::Picos(2), Error);
  // In range: exact.
  CHECK((Time::FromSeconds(1) * int64_t{1000000}).picos() == 1000000000000000000);
  // 1 GiB at 1 B/s = 1.07e9 s.
  CHECK_THROWS_WITH_AS(TransferTime(Bytes{int64_t{1} << 30}, BytesPerSecond{1}),
                       doctest::Contains("out of the picosecond clock's range"), Error);
  CHECK(TransferTime(Bytes{1000}, BytesPerSecond{1}).picos() == 1000000000000000);
}

TEST_CASE("RequireMemory refuses what this machine cannot hold, naming what asked") {
  CHECK(MemoryBudgetBytes() > (uint64_t{1} << 20));
  RequireMemory(1 << 20, "a small table");  // no throw
  CHECK_THROWS_WITH_AS(RequireMemory(1e30, "the test's table"),
                       doctest::Contains("the test's table needs "), Error);
  CHECK_THROWS_WITH_AS(RequireMemory(std::nan(""), "a NaN estimate"),
                       doctest::Contains("this machine allows"), Error);
}

}  // namespace
}  // namespace podsim
