// The verifier rejects malformed modules with a message naming the instruction.

#include <doctest/doctest.h>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace {

template <typename F>
void VerifierExpectError(F f, const std::string& needle) {
  try {
    f();
    FAIL("expected an error containing: " << needle);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

struct VerifierFixture {
  std::unique_ptr<Module> m = std::make_unique<Module>("t");
  Computation* c = m->AddComputation("main", true);
  Builder b{c};
};

TEST_CASE("a well-formed module verifies") {
  VerifierFixture f;
  auto* x = f.b.Parameter(0, Shape(DType::kF32, {2, 2}), "x");
  f.b.Add(x, x);
  CHECK_NOTHROW(Verify(*f.m));
}

TEST_CASE("a stored shape that differs from the shape rule is rejected") {
  VerifierFixture f;
  auto* x = f.b.Parameter(0, Shape(DType::kF32, {2, 2}), "x");
  auto* s = f.b.Add(x, x);
  s->shape = Shape(DType::kF32, {4});
  VerifierExpectError([&] { Verify(*f.m); },
                      "instruction %add: shape f32[4] differs from the inferred f32[2,2]");
}

TEST_CASE("an operand defined later or elsewhere is rejected") {
  VerifierFixture f;
  auto* x = f.b.Parameter(0, Shape(DType::kF32, {2}), "x");
  auto* n = f.b.Neg(x);
  auto* e = f.b.Exp(x);
  n->operands[0] = e;  // use before definition
  VerifierExpectError([&] { Verify(*f.m); }, "%negate: operand 0 is not defined earlier");
}

TEST_CASE("parameter numbers must be contiguous and unique") {
  VerifierFixture f;
  f.b.Parameter(0, Shape(DType::kF32, {2}), "a");
  f.b.Parameter(2, Shape(DType::kF32, {2}), "b");
  VerifierExpectError([&] { Verify(*f.m); }, "without gaps");
  VerifierFixture g;
  g.b.Parameter(0, Shape(DType::kF32, {2}), "a");
  g.b.Parameter(0, Shape(DType::kF32, {2}), "b");
  VerifierExpectError([&] { Verify(*g.m); }, "%b: parameter number 0 is used twice");
}

TEST_CASE("negative dims and bad shardings are rejected") {
  VerifierFixture f;
  auto* x = f.b.Parameter(0, Shape(DType::kF32, {-1}), "x");
  VerifierExpectError([&] { Verify(*f.m); }, "%x: shape f32[-1] has a negative dimension");
  x->shape = Shape(DType::kF32, {4, 2});
  x->sharding = Sharding::Tiled({2, 1}, {0, 0});
  VerifierExpectError([&] { Verify(*f.m); }, "names device 0 twice");
  x->sharding = Sharding::Tiled({2}, {0, 1});
  VerifierExpectError([&] { Verify(*f.m); }, "has 1 tile dims, shape f32[4,2] needs 2");
  x->sharding = Sharding::Tiled({2, 2}, {0, 1, 2});
  VerifierExpectError([&] { Verify(*f.m); }, "lists 3 devices, tile dims need 4");
  x->sharding = Sharding::Tiled({2, 1, 2}, {0, 1, 2, 3}, true);
  CHECK_NOTHROW(Verify(*f.m));
}

TEST_CASE("a module without an entry, or a loop calling the entry, is rejected") {
  Module m("empty");
  VerifierExpectError([&] { Verify(m); }, "has no entry computation");
  VerifierFixture f;
  Computation* body = f.m->AddComputation("body");
  Builder bb(body);
  bb.Parameter(0, Shape(DType::kS32, {}));
  auto* v = bb.Parameter(1, Shape(DType::kF32, {2}));
  bb.Tuple({v});
  auto* x = f.b.Parameter(0, Shape(DType::kF32, {2}), "x");
  auto* loop = f.b.Loop({x}, body, 2);
  CHECK_NOTHROW(Verify(*f.m));
  loop->body = f.c;
  VerifierExpectError([&] { Verify(*f.m); }, "entry computation");
}

TEST_CASE("sharding text round trip") {
  for (const char* text : {"{replicated}", "{manual}", "{maximal device=3}",
                           "{devices=[4,1]0,1,2,3}",
                           "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"}) {
    CHECK(Sharding::Parse(text).ToString() == text);
  }
  CHECK(Sharding::Parse("{devices=[2,2]3,2,1,0}").devices.ToVector() ==
        std::vector<int64_t>{3, 2, 1, 0});
  VerifierExpectError([] { Sharding::Parse("{devices=[2]0,1"); }, "expected '}'");
  VerifierExpectError([] { Sharding::Parse("{tiled}"); }, "expected replicated, maximal");
}

TEST_CASE("clone is deep and verifies") {
  VerifierFixture f;
  Computation* body = f.m->AddComputation("body");
  Builder bb(body);
  bb.Parameter(0, Shape(DType::kS32, {}));
  auto* v = bb.Parameter(1, Shape(DType::kF32, {2}));
  bb.Tuple({bb.Neg(v)});
  auto* x = f.b.Parameter(0, Shape(DType::kF32, {2}), "x");
  f.b.Loop({x}, body, 2);
  auto copy = f.m->Clone();
  CHECK_NOTHROW(Verify(*copy));
  CHECK(copy->InstructionCount() == f.m->InstructionCount());
  CHECK(copy->entry()->root()->body == copy->FindComputation("body"));
  CHECK(copy->entry()->root()->body != body);
}

}  // namespace
}  // namespace podsim::ir
