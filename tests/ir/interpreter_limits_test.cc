// The interpreter estimates a value's memory before allocating it: a shape too large for this
// machine is an error naming the shape, not a std::bad_alloc (f32[1e11] would need 745 GiB as
// doubles).

#include <doctest/doctest.h>

#include "base/error.h"
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "ir/text.h"

namespace podsim::ir {
namespace {

TEST_CASE("a value too large for memory is refused before it is allocated") {
  CHECK_THROWS_WITH_AS(Literal::Zeros(Shape(DType::kF32, {100000000000})),
                       doctest::Contains("a f32[100000000000] value (100000000000 elements held "
                                         "as doubles by the interpreter) needs 745.1 GiB"),
                       Error);
  // Through a module: the broadcast's output is the large value; the parameter is small.
  const auto m = ParseModule(R"(HloModule big
ENTRY %main {
  %x = f32[100000] parameter(0)
  ROOT %b = f32[100000,100000,10] broadcast(%x), dimensions={0}
})");
  CHECK_THROWS_WITH_AS(Interpret(*m, {Literal::Zeros(Shape(DType::kF32, {100000}))}),
                       doctest::Contains("f32[100000,100000,10] value"), Error);
}

}  // namespace
}  // namespace podsim::ir
