#pragma once
// Helpers of the autodiff tests (tests/ir/autodiff_*_test.cc): gradients checked against central
// finite differences of the interpreted forward program, and small programs to differentiate.
//
// Tolerance of the finite-difference checks. The interpreter rounds every f32 result, so a loss
// L of a few dozen ops over inputs in [-1, 1) carries a relative error of about 50 * 2^-24 ~ 3e-6;
// a central difference with step h = 1e-2 divides the difference of two such values by 2h,
// adding ~3e-6 |L| / 2e-2 ~ 2e-4 |L|, and truncation adds h^2 / 6 |L'''| ~ 2e-5 |L'''|. With
// |L| and |L'''| below ~5 on these small programs, |fd - grad| < 2e-3 (1 + |grad|) holds with
// margin, while a wrong rule (a missing factor, a sign, a transposed layout) is off by O(1).

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/autodiff.h"
#include "tests/ir/interpreter_test_util.h"

namespace podsim::ir {

// Interprets `module` with args and returns its value (the loss).
inline double LossOf(const Module& module, const std::vector<Literal>& args) {
  return Interpret(module, args).values.at(0);
}

// Differentiates `module` with respect to the parameters numbered `wrt`, checks the verifier,
// the loss, and every gradient element against a central finite difference.
inline std::vector<Literal> CheckGradients(const Module& module, const std::vector<int64_t>& wrt,
                                           uint64_t seed = 1) {
  Verify(module);
  const std::vector<Instruction*> params = module.entry()->parameters();
  std::vector<std::string> names;
  for (int64_t k : wrt) names.push_back(params[static_cast<size_t>(k)]->name);
  const std::unique_ptr<Module> grad = Differentiate(module, names);
  Verify(*grad);
  const std::vector<Literal> args = RandomArguments(module, seed);
  const Literal out = Interpret(*grad, args);
  REQUIRE(out.elements.size() == wrt.size() + 1);
  CHECK(out.elements[0].values[0] == doctest::Approx(LossOf(module, args)).epsilon(1e-12));
  for (size_t w = 0; w < wrt.size(); ++w) {
    const size_t p = static_cast<size_t>(wrt[w]);
    const Literal& g = out.elements[w + 1];
    REQUIRE(g.shape == args[p].shape);
    for (int64_t j = 0; j < g.NumElements(); ++j) {
      std::vector<Literal> plus = args, minus = args;
      const DType t = args[p].shape.dtype;
      double& xp = plus[p].values[static_cast<size_t>(j)];
      double& xm = minus[p].values[static_cast<size_t>(j)];
      xp = RoundToDType(xp + 1e-2, t);
      xm = RoundToDType(xm - 1e-2, t);
      const double fd = (LossOf(module, plus) - LossOf(module, minus)) / (xp - xm);
      const double got = g.values[static_cast<size_t>(j)];
      INFO("parameter ", params[p]->name, " element ", j, ": gradient ", got, ", difference ", fd);
      CHECK(std::abs(fd - got) < 2e-3 * (1 + std::abs(got)));
    }
  }
  return out.elements;
}

// A module "main" with f32 parameters of the given shapes; `loss` builds the scalar loss.
inline std::unique_ptr<Module> Program(const std::vector<std::vector<int64_t>>& shapes,
                                       const std::function<Instruction*(Builder&, std::vector<Instruction*>&)>& loss) {
  auto m = std::make_unique<Module>("test");
  Builder b(m->AddComputation("main", /*is_entry=*/true));
  std::vector<Instruction*> p;
  for (size_t k = 0; k < shapes.size(); ++k) {
    p.push_back(b.Parameter(static_cast<int64_t>(k), Shape(DType::kF32, shapes[k]), "p" + std::to_string(k)));
  }
  Instruction* l = loss(b, p);
  m->entry()->set_root(l);
  return m;
}

inline Instruction* SumAll(Builder& b, Instruction* x) {
  std::vector<int64_t> dims(static_cast<size_t>(x->shape.rank()));
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
  return b.Reduce(x, dims, ReduceKind::kAdd);
}

// sum(x * w) with w a fixed pseudo-random weight, so each element's gradient differs.
inline Instruction* Weighted(Builder& b, Instruction* x) {
  std::vector<double> w(static_cast<size_t>(x->shape.NumElements()));
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.25 + 0.5 * std::sin(1.7 * static_cast<double>(k) + 0.3);
  for (double& v : w) v = RoundToDType(v, x->shape.dtype);
  return SumAll(b, b.Mul(x, b.Constant(Literal(x->shape, w))));
}

inline Instruction* Full(Builder& b, const std::vector<int64_t>& dims, double v) {
  return b.BroadcastScalar(b.ConstantScalar(DType::kF32, v), dims);
}

// softmax over dim d written as primitives (models' AddSoftmaxLastDim).
inline Instruction* Softmax(Builder& b, Instruction* x, int64_t d, Instruction** exp_out = nullptr) {
  const std::vector<int64_t> dims = x->shape.dims;
  std::vector<int64_t> keep;
  for (int64_t k = 0; k < x->shape.rank(); ++k) {
    if (k != d) keep.push_back(k);
  }
  Instruction* max = b.Broadcast(b.Reduce(x, {d}, ReduceKind::kMax), dims, keep);
  Instruction* e = b.Exp(b.Sub(x, max));
  if (exp_out != nullptr) *exp_out = e;
  return b.Div(e, b.Broadcast(b.Reduce(e, {d}, ReduceKind::kAdd), dims, keep));
}

}  // namespace podsim::ir
