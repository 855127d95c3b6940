// Reverse-mode autodiff of counted loops: differentiated once (never unrolled), checked against
// finite differences, and what each save policy stacks or recomputes.

#include "ir/autodiff.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "base/error.h"
#include "ir/text.h"
#include "tests/ir/autodiff_test_util.h"
#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {
namespace {

using testing::F32;

TEST_CASE("a counted loop is differentiated once and matches finite differences") {
  // h_{t+1} = tanh(h_t * w + x) * t-dependent scale, 3 iterations; w and x passed through.
  auto m = std::make_unique<Module>("loop");
  Computation* body = m->AddComputation("body");
  {
    Builder b(body);
    Instruction* it = b.Parameter(0, Shape(DType::kS32, {}), "it");
    Instruction* h = b.Parameter(1, Shape(DType::kF32, {2, 3}), "h");
    Instruction* w = b.Parameter(2, Shape(DType::kF32, {3, 3}), "w");
    Instruction* x = b.Parameter(3, Shape(DType::kF32, {2, 3}), "x");
    Instruction* scale = b.BroadcastScalar(
        b.Add(b.ConstantScalar(DType::kF32, 1.0), b.Convert(it, DType::kF32)), {2, 3});
    Instruction* next = b.Mul(b.Tanh(b.Add(b.Dot(h, w, DotDims{{}, {}, {1}, {0}}), x)), scale);
    body->set_root(b.Tuple({next, w, x}));
  }
  Builder b(m->AddComputation("main", /*is_entry=*/true));
  Instruction* h0 = b.Parameter(0, Shape(DType::kF32, {2, 3}), "h0");
  Instruction* w = b.Parameter(1, Shape(DType::kF32, {3, 3}), "w");
  Instruction* x = b.Parameter(2, Shape(DType::kF32, {2, 3}), "x");
  Instruction* loop = b.Loop({h0, w, x}, body, 3);
  Instruction* h = b.GetTupleElement(loop, 0);
  m->entry()->set_root(Weighted(b, b.Mul(h, h)));
  CheckGradients(*m, {0, 1, 2});

  const std::unique_ptr<Module> grad = Differentiate(*m, {w->name});
  int loops = 0, stacks = 0;
  for (const auto& c : grad->computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode == Opcode::kLoop) {
        ++loops;
        CHECK(i->trip_count == 3);
      }
      if (i->opcode == Opcode::kDynamicUpdateSlice && c->name() == "body.save") ++stacks;
    }
  }
  CHECK(loops == 2);   // the forward loop (saving) and one backward loop: never unrolled
  CHECK(stacks == 1);  // only h is stacked: w and x pass through unchanged
  // The text form round-trips: the loop bodies print before the computations that call them.
  const std::unique_ptr<Module> again = ParseModule(PrintModule(*grad));
  Verify(*again);
  CHECK(PrintModule(*again) == PrintModule(*grad));

  // The other save policies give the same gradients and trade recomputation for stacks. The
  // body's values that depend on h: dot, add, tanh, multiply (scale depends only on the counter:
  // recomputed, never saved).
  //   per-layer (kIterationInputs): stacks h; the backward body recomputes the dot: 2 dots for
  //     the adjoints of its operands + 1 = 3
  //   selective (kDots): stacks h and the dot's output; no dot recomputed: 2
  //   none (kAll): stacks h and every value a gradient rule reads: tanh's value (its rule reads
  //     y); the dot's rule reads h and w (an iteration input and a passed-through value), the
  //     multiply's reads scale (the counter's alone), add's nothing: 2 stacks; the dot's output
  //     is read by no rule, so it is not recomputed either: 2 dots
  const std::vector<Literal> args = RandomArguments(*m, 1);
  const Literal reference = Interpret(*grad, args);
  auto count = [](const Module& g, const std::string& comp, Opcode op) {
    int n = 0;
    for (const auto& c : g.computations()) {
      if (c->name() != comp) continue;
      for (const auto& i : c->instructions()) n += i->opcode == op ? 1 : 0;
    }
    return n;
  };
  CHECK(count(*grad, "body.grad", Opcode::kDot) == 3);
  for (LoopRemat remat : {LoopRemat::kDots, LoopRemat::kAll}) {
    CAPTURE(std::string(LoopRematName(remat)));
    const std::unique_ptr<Module> g = Differentiate(*m, {w->name}, "", remat);
    Verify(*g);
    const Literal got = Interpret(*g, args);
    REQUIRE(got.elements.size() == 2);
    CHECK(got.elements[0].values == reference.elements[0].values);
    for (size_t k = 0; k < got.elements[1].values.size(); ++k) {
      CHECK(got.elements[1].values[k] == doctest::Approx(reference.elements[1].values[k]).epsilon(1e-6));
    }
    CHECK(count(*g, "body.grad", Opcode::kDot) == 2);
    CHECK(count(*g, "body.save", Opcode::kDynamicUpdateSlice) == 2);
  }
  CHECK(ParseLoopRemat("selective") == LoopRemat::kDots);
  CHECK_THROWS_WITH_AS(ParseLoopRemat("some"), doctest::Contains("not one of none, selective, per-layer"), Error);
}

// Differentiates the one-parameter, one-loop module `m` without remat: checks that the saving
// loop's stacks have the `expected` shapes ([trips, value dims], any order) and that the
// gradient equals the one recomputing each iteration (per-layer).
void CheckNoRematStacks(const Module& m, std::vector<std::vector<int64_t>> expected) {
  const std::string wrt = m.entry()->parameters().at(0)->name;
  const std::vector<Literal> args = RandomArguments(m, 1);
  const Literal reference = Interpret(*Differentiate(m, {wrt}), args);
  const std::unique_ptr<Module> g = Differentiate(m, {wrt}, "", LoopRemat::kAll);
  Verify(*g);
  std::vector<std::vector<int64_t>> stacks;
  for (const auto& c : g->computations()) {
    if (c->name() != "body.save") continue;
    for (const auto& i : c->instructions()) {
      if (i->opcode == Opcode::kDynamicUpdateSlice) stacks.push_back(i->shape.dims);
    }
  }
  std::sort(stacks.begin(), stacks.end());
  std::sort(expected.begin(), expected.end());
  CHECK(stacks == expected);
  const Literal got = Interpret(*g, args);
  REQUIRE(got.elements.size() == 2);
  for (size_t k = 0; k < got.elements[1].values.size(); ++k) {
    CHECK(got.elements[1].values[k] == doctest::Approx(reference.elements[1].values[k]).epsilon(1e-6));
  }
}

// A module whose entry runs `body_of` (h -> next h, over `dims`) 3 times and weights the result.
std::unique_ptr<Module> LoopOf(const std::vector<int64_t>& dims,
                               const std::function<Instruction*(Builder&, Instruction*)>& body_of) {
  auto m = std::make_unique<Module>("loop");
  Computation* body = m->AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "it");
    Instruction* h = b.Parameter(1, Shape(DType::kF32, dims), "h");
    body->set_root(b.Tuple({body_of(b, h)}));
  }
  Builder b(m->AddComputation("main", /*is_entry=*/true));
  Instruction* h0 = b.Parameter(0, Shape(DType::kF32, dims), "h0");
  m->entry()->set_root(Weighted(b, b.GetTupleElement(b.Loop({h0}, body, 3), 0)));
  return m;
}

TEST_CASE("without remat a loop saves what the rules read, and a view as the value it views") {
  // h_{t+1} = exp(h_t) * broadcast(sum_j h_t[:, j]) over [2, 3], 3 iterations. The rules read:
  // exp its output e; the product the other factor of each operand (both carry gradients):
  // e, and the broadcast, which is a view of the sum s (saved as s, f32[2]); the sum and the
  // broadcast nothing. So `none` stacks h, e and s: 3 stacks, of f32[3,2,3] twice and f32[3,2]
  // once. Saving every operand and output of each differentiable op would stack h, e, s, the
  // broadcast and the product: 5.
  const auto m = LoopOf({2, 3}, [](Builder& b, Instruction* h) {
    return b.Mul(b.Exp(h), b.Broadcast(b.Reduce(h, {1}, ReduceKind::kAdd), {2, 3}, {0}));
  });
  CheckNoRematStacks(*m, {{3, 2}, {3, 2, 3}, {3, 2, 3}});
}

TEST_CASE("without remat a loop saves a softmax's output alone") {
  // h_{t+1} = softmax(3 h_t) over [2, 4]: the softmax's rule reads p; the scaling's reads the
  // constant 3. So `none` stacks h and p (2 stacks); saving each primitive's reads would add the
  // logits (for the max), the max and the exponentials.
  const auto m = LoopOf({2, 4}, [](Builder& b, Instruction* h) {
    return Softmax(b, b.Mul(h, Full(b, {2, 4}, 3.0)), 1);
  });
  CheckGradients(*m, {0});
  CheckNoRematStacks(*m, {{3, 2, 4}, {3, 2, 4}});
}

TEST_CASE("nested loops match finite differences") {
  auto m = std::make_unique<Module>("nested");
  Computation* inner = m->AddComputation("inner");
  {
    Builder b(inner);
    b.Parameter(0, Shape(DType::kS32, {}), "j");
    Instruction* h = b.Parameter(1, Shape(DType::kF32, {3}), "h");
    Instruction* w = b.Parameter(2, Shape(DType::kF32, {3}), "w");
    inner->set_root(b.Tuple({b.Tanh(b.Mul(h, w)), w}));
  }
  Computation* outer = m->AddComputation("outer");
  {
    Builder b(outer);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    Instruction* h = b.Parameter(1, Shape(DType::kF32, {3}), "h");
    Instruction* w = b.Parameter(2, Shape(DType::kF32, {3}), "w");
    Instruction* l = b.Loop({b.Add(h, w), w}, inner, 2);
    outer->set_root(b.Tuple({b.GetTupleElement(l, 0), b.Mul(w, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0.9), {3}))}));
  }
  Builder b(m->AddComputation("main", /*is_entry=*/true));
  Instruction* h0 = b.Parameter(0, Shape(DType::kF32, {3}), "h0");
  Instruction* w = b.Parameter(1, Shape(DType::kF32, {3}), "w");
  Instruction* loop = b.Loop({h0, w}, outer, 3);
  m->entry()->set_root(Weighted(b, b.Exp(b.GetTupleElement(loop, 0))));
  CheckGradients(*m, {0, 1});
}

}  // namespace
}  // namespace podsim::ir
