// Manual-region tilings checked like shardings, and against the partitions a program runs on;
// device ids of any int64 size survive proto -> text -> proto.

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace {

// A manual region over `tiles` row blocks of f32[8,6], with the tiling's device list given.
std::string Region(const std::string& tiling) {
  return R"(HloModule region
ENTRY %main {
  %x = f32[8,6] parameter(0)
  %m = f32[2,6] auto-to-manual(%x), tiling=)" +
         tiling + R"(, sharding={manual}
  ROOT %y = f32[8,6] manual-to-auto(%m), tiling={devices=[4,1]<=[4]}
})";
}

TEST_CASE("a tiling is verified like a sharding: device count, repeats, tile rank") {
  CHECK_NOTHROW(ParseModule(Region("{devices=[4,1]<=[4]}")));
  CHECK_NOTHROW(ParseModule(Region("{devices=[4,1]3,2,1,0}")));
  // 1 device for 4 tiles used to verify and simulate.
  CHECK_THROWS_WITH_AS(ParseModule(Region("{devices=[4,1]0}")),
                       doctest::Contains("instruction %m: tiling {devices=[4,1]0} lists 1 devices, "
                                         "tile dims need 4"),
                       Error);
  CHECK_THROWS_WITH_AS(ParseModule(Region("{devices=[4,1]0,1,1,2}")),
                       doctest::Contains("tiling {devices=[4,1]0,1,1,2} names device 1 twice"),
                       Error);
}

TEST_CASE("a tiling spans every partition of the program") {
  const auto m = ParseModule(Region("{devices=[4,1]<=[4]}"));
  CHECK_NOTHROW(VerifyManualTilings(*m, 4));
  CHECK_THROWS_WITH_AS(VerifyManualTilings(*m, 8),
                       doctest::Contains("instruction %m: tiling {devices=[4,1]<=[4]} spans 4 "
                                         "devices but the program runs on 8 partitions"),
                       Error);
}

TEST_CASE("device ids of any int64 size print back to text that parses") {
  // 19 digits: the proto form has always held them; the text parser stopped at 15.
  const std::string text = R"(HloModule ids

ENTRY %main {
  ROOT %x = f32[2] parameter(0), sharding={devices=[2]0,1234567890123456789}
}
)";
  const auto m = ParseModule(text);
  CHECK(PrintModule(*m) == text);
  const auto from_proto = ModuleFromProtoBytes(ModuleToProtoBytes(*m));
  CHECK(PrintModule(*from_proto) == text);
  CHECK_THROWS_WITH_AS(
      ParseModule(R"(HloModule ids
ENTRY %main {
  ROOT %x = f32[2] parameter(0), sharding={maximal device=12345678901234567890}
})"),
      doctest::Contains("integer 12345678901234567890 does not fit int64"), Error);
}

}  // namespace
}  // namespace podsim::ir
