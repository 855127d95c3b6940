// base/units.h: time rounding, transfer times and byte counts as text, derived by hand.

#include <doctest/doctest.h>

#include "base/error.h"
#include "base/units.h"

namespace podsim {
namespace {

TEST_CASE("Time::FromSeconds and FromMicros round to the nearest picosecond, both signs") {
  // 1.4 ps -> 1, 1.6 ps -> 2; halves go away from zero.
  CHECK(Time::FromSeconds(1.4e-12).picos() == 1);
  CHECK(Time::FromSeconds(1.6e-12).picos() == 2);
  CHECK(Time::FromSeconds(-1.4e-12).picos() == -1);  // was 0: rounded toward +inf
  CHECK(Time::FromSeconds(-1.6e-12).picos() == -2);
  CHECK(Time::FromMicros(2.5).picos() == 2500000);
  CHECK(Time::FromMicros(-2.5).picos() == -2500000);
  CHECK(Time::FromMicros(-0.0000015).picos() == -2);  // -1.5 ps: away from zero
}

TEST_CASE("TransferTime rounds up to whole picoseconds") {
  // 1000 B at 3e11 B/s = 3.333... ns = 3333.33 ps -> 3334 ps.
  CHECK(TransferTime(Bytes{1000}, BytesPerSecond{3e11}).picos() == 3334);
  // 1 MiB at 1e12 B/s = 1048576 ps exactly: no spurious extra picosecond.
  CHECK(TransferTime(Bytes{1048576}, BytesPerSecond{1e12}).picos() == 1048576);
  CHECK(TransferTime(Bytes{0}, BytesPerSecond{1}).picos() == 0);
  CHECK_THROWS_AS(TransferTime(Bytes{-1}, BytesPerSecond{1}), Error);
  CHECK_THROWS_AS(TransferTime(Bytes{1}, BytesPerSecond{0}), Error);
}

TEST_CASE("bytes as text") {
  CHECK(FormatBytes(100) == "100 B");
  CHECK(FormatBytes(1536) == "1.5 KiB");
  CHECK(FormatBytes(16.0 * 1073741824.0) == "16 GiB");
  CHECK(FormatBytes(17.2 * 1073741824.0) == "17.2 GiB");
  CHECK(ParseBytes("8MiB", "x") == 8 * 1048576);
  CHECK(ParseBytes("32MB", "x") == 32000000);
  CHECK(ParseBytes("4096", "x") == 4096);
  CHECK(ParseBytes("1.5KiB", "x") == 1536);
  CHECK_THROWS_WITH(ParseBytes("1.5B", "--bytes"),
                    "--bytes: '1.5B' is not a whole positive byte count (e.g. 8MiB, 32MB, 4096)");
  CHECK_THROWS_AS(ParseBytes("8 parsecs", "x"), Error);
}

}  // namespace
}  // namespace podsim
