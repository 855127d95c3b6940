// Donated parameters (ir::OutputAlias, HLO's input_output_alias): printed and parsed in HLO's
// syntax, kept by the protobuf form and Clone, and checked by the verifier.

#include <doctest/doctest.h>

#include "base/error.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace {

constexpr const char* kText = R"(HloModule m, input_output_alias={ {1}: (0, {}, may-alias), {2}: (2, {}, must-alias) }
ENTRY %main {
  %w = f32[4] parameter(0)
  %x = f32[4] parameter(1)
  %s = f32[2] parameter(2)
  %u = f32[4] subtract(%w, %x)
  %n = f32[2] negate(%s)
  ROOT %t = (f32[4], f32[4], f32[2]) tuple(%x, %u, %n)
}
)";

TEST_CASE("output aliases: text, protobuf and clone round trips") {
  auto m = ParseModule(kText);
  REQUIRE(m->output_aliases().size() == 2);
  CHECK(m->output_aliases()[0] == OutputAlias{1, 0});
  CHECK(m->output_aliases()[1] == OutputAlias{2, 2});
  const std::string printed = PrintModule(*m);
  CHECK(printed.rfind("HloModule m, input_output_alias={ {1}: (0, {}, may-alias), {2}: (2, {}, may-alias) }\n", 0) == 0);
  CHECK(PrintModule(*ParseModule(printed)) == printed);
  CHECK(PrintModule(*ModuleFromProtoBytes(ModuleToProtoBytes(*m))) == printed);
  CHECK(m->Clone()->output_aliases() == m->output_aliases());
  // No aliases: the header is the name alone.
  auto plain = ParseModule("HloModule p\nENTRY %main {\n  ROOT %a = f32[2] parameter(0)\n}\n");
  CHECK(PrintModule(*plain).rfind("HloModule p\n", 0) == 0);
}

TEST_CASE("output aliases: the verifier and the parser name what is wrong") {
  auto m = ParseModule(kText);
  m->set_output_aliases({{3, 0}});
  CHECK_THROWS_WITH_AS(Verify(*m), doctest::Contains("the entry root has no tuple element 3"), Error);
  m->set_output_aliases({{1, 7}});
  CHECK_THROWS_WITH_AS(Verify(*m), doctest::Contains("the entry has no parameter 7"), Error);
  m->set_output_aliases({{2, 0}});
  CHECK_THROWS_WITH_AS(Verify(*m), doctest::Contains("output f32[2] cannot reuse %w f32[4]"), Error);
  m->set_output_aliases({{1, 0}, {0, 0}});
  CHECK_THROWS_WITH_AS(Verify(*m), doctest::Contains("parameter donated twice"), Error);
  m->set_output_aliases({{1, 0}, {1, 1}});
  CHECK_THROWS_WITH_AS(Verify(*m), doctest::Contains("output aliased twice"), Error);
  CHECK_THROWS_WITH_AS(ParseModule("HloModule m, entry_layout={}\nENTRY %e {\n  ROOT %a = f32[2] parameter(0)\n}\n"),
                       doctest::Contains("unknown module attribute 'entry_layout'"), Error);
  CHECK_THROWS_WITH_AS(ParseModule("HloModule m, input_output_alias={ {0}: (0, {}, maybe) }\nENTRY %e {\n  %a = f32[2] parameter(0)\n  ROOT %t = (f32[2]) tuple(%a)\n}\n"),
                       doctest::Contains("alias kind must be may-alias or must-alias"), Error);
}

}  // namespace
}  // namespace podsim::ir
