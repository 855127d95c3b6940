// A parameter's argument range: printed and parsed, kept by the protobuf form, checked by the
// verifier, and honoured by RandomArguments.

#include <doctest/doctest.h>

#include <algorithm>

#include "base/error.h"
#include "ir/interpreter.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace {

constexpr const char* kText = R"(HloModule m
ENTRY %main {
  %v = f32[64] parameter(0), range={0.5,2}
  %n = s32[64] parameter(1), range={-3,-1}
  %w = f32[64] parameter(2)
  ROOT %t = (f32[64], s32[64], f32[64]) tuple(%v, %n, %w)
}
)";

TEST_CASE("argument range: text and protobuf round trips") {
  auto m = ParseModule(kText);
  const auto params = m->entry()->parameters();
  REQUIRE(params[0]->argument_range.has_value());
  CHECK(params[0]->argument_range->first == 0.5);
  CHECK(params[0]->argument_range->second == 2);
  CHECK_FALSE(params[2]->argument_range.has_value());
  const std::string printed = PrintModule(*m);
  CHECK(printed.find("parameter(0), range={0.5,2}") != std::string::npos);
  CHECK(PrintModule(*ParseModule(printed)) == printed);
  CHECK(PrintModule(*ModuleFromProtoBytes(ModuleToProtoBytes(*m))) == printed);
}

TEST_CASE("argument range: random arguments are drawn from it") {
  auto m = ParseModule(kText);
  const std::vector<Literal> args = RandomArguments(*m, 3);
  double lo = 10, hi = -10;
  for (double v : args[0].values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo >= 0.5);
  CHECK(hi < 2);
  CHECK(hi - lo > 1);  // 64 uniform draws spread over most of the 1.5-wide interval
  for (double v : args[1].values) CHECK((v == -3 || v == -2));  // the integers of [-3, -1)
  bool negative = false;
  for (double v : args[2].values) negative = negative || v < 0;
  CHECK(negative);  // no range: [-1, 1) as before
}

TEST_CASE("argument range: the verifier rejects an empty range") {
  std::string bad = kText;
  bad.replace(bad.find("range={0.5,2}"), 13, "range={2,0.5}");
  CHECK_THROWS_WITH_AS(ParseModule(bad), doctest::Contains("finite low < high"), Error);
}

}  // namespace
}  // namespace podsim::ir
