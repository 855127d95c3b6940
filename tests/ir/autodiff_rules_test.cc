// Reverse-mode autodiff, rule by rule: every rule against central finite differences of the
// interpreted forward program (tolerance in tests/ir/autodiff_test_util.h), plus hand-derived
// gradients where rounding or ties make differences useless, and bad requests.

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

TEST_CASE("elementwise rules match finite differences") {
  const std::vector<int64_t> d{2, 3};
  auto m = Program({d, d}, [&](Builder& b, std::vector<Instruction*>& p) {
    Instruction* x = p[0];
    Instruction* y = p[1];
    Instruction* pos = b.Add(b.Mul(x, x), Full(b, d, 1.0));  // > 0
    Instruction* terms[] = {
        b.Tanh(b.Mul(x, y)),
        b.Div(b.Exp(x), b.Add(y, Full(b, d, 3.0))),
        b.Neg(b.Log(pos)),
        b.Sqrt(b.Add(b.Mul(y, y), Full(b, d, 1.0))),
        b.Rsqrt(b.Add(pos, Full(b, d, 1.0))),
        b.Abs(b.Sub(x, Full(b, d, 0.05))),
        b.Max(x, y),
        b.Min(x, b.Mul(y, Full(b, d, 0.5))),
        b.Pow(pos, y),
    };
    Instruction* acc = terms[0];
    for (size_t k = 1; k < std::size(terms); ++k) acc = b.Add(acc, terms[k]);
    return Weighted(b, acc);
  });
  CheckGradients(*m, {0, 1});
}

TEST_CASE("a softmax is differentiated as one op, reading its output alone") {
  auto compares = [](const Module& g) {
    int n = 0;
    for (const auto& c : g.computations()) {
      for (const auto& i : c->instructions()) n += i->opcode == Opcode::kCompare ? 1 : 0;
    }
    return n;
  };
  // Over the last dim and over a middle one: dx = p * (g - sum_d(g * p)), and nothing flows
  // through the max, so the gradient program has none of the max rule's tie compares.
  for (int64_t d : {2, 1}) {
    CAPTURE(d);
    auto m = Program({{2, 3, 4}}, [&](Builder& b, std::vector<Instruction*>& p) {
      return Weighted(b, Softmax(b, b.Mul(p[0], Full(b, {2, 3, 4}, 3.0)), d));
    });
    CheckGradients(*m, {0});
    CHECK(compares(*Differentiate(*m, {"p0"})) == 0);
  }
  // The exponentials also read elsewhere: that reader's gradient still flows through exp, the
  // shift and the max (whose rule compares), and the whole matches finite differences.
  auto m = Program({{2, 3, 4}}, [&](Builder& b, std::vector<Instruction*>& p) {
    Instruction* e = nullptr;
    Instruction* s = Softmax(b, b.Mul(p[0], Full(b, {2, 3, 4}, 3.0)), 2, &e);
    return b.Add(Weighted(b, s), Weighted(b, b.Mul(e, Full(b, {2, 3, 4}, 0.1))));
  });
  CheckGradients(*m, {0});
  CHECK(compares(*Differentiate(*m, {"p0"})) > 0);
}

TEST_CASE("data movement rules match finite differences") {
  auto m = Program({{2, 3, 4}, {3}}, [&](Builder& b, std::vector<Instruction*>& p) {
    Instruction* x = p[0];
    Instruction* t = b.Transpose(x, {2, 0, 1});                     // [4,2,3]
    Instruction* r = b.Reshape(t, {8, 3});
    Instruction* s = b.Slice(r, {1, 0}, {8, 3}, {3, 2});            // [3,2]
    Instruction* pad = b.Pad(s, b.ConstantScalar(DType::kF32, 0.5), {{1, -1, 1}, {0, 2, 0}});  // [5,4]
    Instruction* rev = b.Reverse(pad, {0});
    Instruction* bc = b.Broadcast(p[1], {3, 4}, {0});                // y along rows
    Instruction* cat = b.Concatenate({rev, bc}, 0);                 // [8,4]
    Instruction* ds = b.DynamicSlice(cat, {b.ConstantScalar(DType::kS32, 2), b.ConstantScalar(DType::kS32, 1)}, {4, 3});
    Instruction* upd = b.DynamicUpdateSlice(r, b.Mul(ds, ds), {b.ConstantScalar(DType::kS32, 3), b.ConstantScalar(DType::kS32, 0)});
    Instruction* sel = b.Select(b.Compare(upd, Full(b, {8, 3}, 0.0), Comparison::kGt), upd, b.Mul(upd, Full(b, {8, 3}, 3.0)));
    return Weighted(b, sel);
  });
  CheckGradients(*m, {0, 1});
}

TEST_CASE("rules on random shapes match finite differences") {
  // Shapes, permutations, slice bounds, paddings, the concatenated dim and the dot's dim order
  // drawn from a fixed-seed generator: rank 1-3, sizes 1-4 (size-1 dims included).
  std::mt19937_64 rng(2026);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 16; ++trial) {
    CAPTURE(trial);
    const int64_t rank = pick(1, 3);
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int64_t& d : dims) d = pick(1, 4);
    std::vector<int64_t> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const int64_t cat_dim = pick(0, rank - 1);
    std::vector<int64_t> other = dims;
    other[static_cast<size_t>(cat_dim)] = pick(1, 3);
    // Dot operands of rank 3: a batch, a free and a contracting dim on each side, in random
    // orders.
    const int64_t nb = pick(1, 3), nc = pick(1, 3), nf1 = pick(1, 3), nf2 = pick(1, 3);
    std::vector<int> lhs_roles = {0, 1, 2}, rhs_roles = {0, 1, 2};  // 0 batch, 1 free, 2 contracting
    std::shuffle(lhs_roles.begin(), lhs_roles.end(), rng);
    std::shuffle(rhs_roles.begin(), rhs_roles.end(), rng);
    std::vector<int64_t> lhs(3), rhs(3);
    DotDims dd;
    for (int64_t k = 0; k < 3; ++k) {
      const int lr = lhs_roles[static_cast<size_t>(k)], rr = rhs_roles[static_cast<size_t>(k)];
      lhs[static_cast<size_t>(k)] = lr == 0 ? nb : lr == 1 ? nf1 : nc;
      rhs[static_cast<size_t>(k)] = rr == 0 ? nb : rr == 1 ? nf2 : nc;
      if (lr == 0) dd.lhs_batch.push_back(k);
      if (lr == 2) dd.lhs_contracting.push_back(k);
      if (rr == 0) dd.rhs_batch.push_back(k);
      if (rr == 2) dd.rhs_contracting.push_back(k);
    }
    std::vector<int64_t> starts, limits, strides;
    std::vector<PadDim> pads;
    std::vector<int64_t> permuted(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) permuted[d] = dims[static_cast<size_t>(perm[d])];
    for (int64_t n : permuted) {
      starts.push_back(pick(0, n - 1));
      limits.push_back(pick(starts.back() + 1, n));
      strides.push_back(pick(1, 2));
      const int64_t len = (limits.back() - starts.back() + strides.back() - 1) / strides.back();
      PadDim pd{pick(-1, 2), pick(-1, 2), pick(0, 1)};
      if (len + pd.low + pd.high + pd.interior * (len - 1) < 1) pd.low = pd.high = 0;
      pads.push_back(pd);
    }
    const int64_t reduce_dim = pick(0, rank - 1);
    auto m = Program({dims, other, lhs, rhs}, [&](Builder& b, std::vector<Instruction*>& p) {
      Instruction* x = p[0];
      Instruction* y = b.Add(b.Tanh(b.Mul(x, x)), b.Exp(b.Mul(x, Full(b, dims, 0.5))));
      Instruction* t = b.Transpose(y, perm);
      Instruction* sl = b.Slice(t, starts, limits, strides);
      Instruction* pd = b.Pad(sl, b.ConstantScalar(DType::kF32, 0.25), pads);
      Instruction* r = b.Reduce(pd, {reduce_dim}, ReduceKind::kAdd);
      Instruction* flat = b.Reshape(r, {r->shape.NumElements()});
      Instruction* cat = b.Concatenate({x, b.Mul(p[1], p[1])}, cat_dim);
      Instruction* dot = b.Dot(p[2], b.Tanh(p[3]), dd);
      return b.Add(b.Add(Weighted(b, flat), Weighted(b, cat)), Weighted(b, dot));
    });
    CheckGradients(*m, {0, 1, 2, 3}, static_cast<uint64_t>(trial) + 1);
  }
}

TEST_CASE("dynamic-slices of one operand accumulate into its adjoint's windows") {
  // Three overlapping windows of x [6,4], the last start clamped (5 + 3 > 6 -> start 3), and
  // x also used whole: the slices' adjoints after the first are added into the adjoint in place.
  auto m = Program({{6, 4}}, [&](Builder& b, std::vector<Instruction*>& p) {
    auto at = [&](int64_t row) {
      return b.DynamicSlice(p[0], {b.ConstantScalar(DType::kS32, static_cast<double>(row)),
                                   b.ConstantScalar(DType::kS32, 1)},
                            {3, 2});
    };
    Instruction* a = at(0);
    Instruction* c = at(2);
    Instruction* d = at(5);
    Instruction* sum = b.Add(b.Mul(a, c), b.Tanh(d));
    return b.Add(Weighted(b, sum), Weighted(b, b.Mul(p[0], p[0])));
  });
  CheckGradients(*m, {0});
  // Hand check of the window sums: with the loss sum(ds(x, 0) + ds(x, 2) + ds(x, 5 -> 3)),
  // dL/dx[r, c] counts the windows covering (r, c): rows 0-1 one, row 2 two, rows 3-4 two, row
  // 5 one, in columns 1-2 only.
  auto n = Program({{6, 4}}, [&](Builder& b, std::vector<Instruction*>& p) {
    Instruction* total = nullptr;
    for (int64_t row : {0, 2, 5}) {
      Instruction* w = b.DynamicSlice(p[0], {b.ConstantScalar(DType::kS32, static_cast<double>(row)),
                                             b.ConstantScalar(DType::kS32, 1)},
                                      {3, 2});
      total = total == nullptr ? w : b.Add(total, w);
    }
    return SumAll(b, total);
  });
  auto grad = Differentiate(*n, {"p0"});
  const Literal g = Interpret(*grad, RandomArguments(*n, 2)).elements.at(1);
  const std::vector<double> rows = {1, 1, 2, 2, 2, 1};
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      CHECK(g.values[static_cast<size_t>(r * 4 + c)] == ((c == 1 || c == 2) ? rows[r] : 0.0));
    }
  }
}

TEST_CASE("dot rules match finite differences, with batch and contracting dims anywhere") {
  // out[b, i, k] = sum_j x[j, b, i] * w[k, b, j]: lhs contracting first, rhs batch in the middle.
  auto m = Program({{3, 2, 4}, {5, 2, 3}}, [&](Builder& b, std::vector<Instruction*>& p) {
    DotDims dd{{1}, {1}, {0}, {2}};
    return Weighted(b, b.Tanh(b.Dot(p[0], p[1], dd)));
  });
  CheckGradients(*m, {0, 1});
  auto e = Program({{4, 3}, {3, 5}}, [&](Builder& b, std::vector<Instruction*>& p) {
    return Weighted(b, b.Einsum("ij,jk->ki", p[0], p[1]));
  });
  CheckGradients(*e, {0, 1});
}

TEST_CASE("convolution: input and filter gradients match finite differences") {
  // 2D, b01f / 01io -> b01f. Dim 0: window 2, stride 2, padding 1 and 1 (7 padded rows leave one
  // unread past the last window: the filter gradient's convolution runs past the kernel and is
  // cut). Dim 1: window 3 with window dilation 2 over an input with base dilation 2, padded high.
  auto m = Program({{2, 5, 6, 3}, {2, 3, 3, 4}}, [&](Builder& b, std::vector<Instruction*>& p) {
    ConvDims cd;
    cd.input_batch = 0, cd.input_feature = 3, cd.input_spatial = {1, 2};
    cd.kernel_input_feature = 2, cd.kernel_output_feature = 3, cd.kernel_spatial = {0, 1};
    cd.output_batch = 0, cd.output_feature = 3, cd.output_spatial = {1, 2};
    std::vector<WindowDim> w = {{2, 2, 1, 1, 1, 1}, {3, 1, 0, 1, 2, 2}};
    return Weighted(b, b.Tanh(b.Convolution(p[0], p[1], cd, w)));
  });
  CheckGradients(*m, {0, 1});
  // 1D with every role somewhere else: input fb0 [2,3,7], kernel o0i [4,3,2], output 0fb;
  // stride 3, negative low padding (a cropped input), window dilation 2.
  auto n = Program({{2, 3, 7}, {4, 3, 2}}, [&](Builder& b, std::vector<Instruction*>& p) {
    ConvDims cd;
    cd.input_batch = 1, cd.input_feature = 0, cd.input_spatial = {2};
    cd.kernel_input_feature = 2, cd.kernel_output_feature = 0, cd.kernel_spatial = {1};
    cd.output_batch = 2, cd.output_feature = 1, cd.output_spatial = {0};
    std::vector<WindowDim> w = {{3, 3, -1, 2, 1, 2}};
    return Weighted(b, b.Convolution(p[0], p[1], cd, w));
  });
  CheckGradients(*n, {0, 1});
}

TEST_CASE("reductions, scans and windows match finite differences") {
  auto m = Program({{3, 5}}, [&](Builder& b, std::vector<Instruction*>& p) {
    Instruction* x = p[0];
    Instruction* mx = b.Reduce(x, {1}, ReduceKind::kMax);
    Instruction* mn = b.Reduce(x, {0}, ReduceKind::kMin);
    Instruction* inc = b.Cumsum(x, 1);
    Instruction* exc = b.Cumsum(b.Mul(x, x), 0, /*exclusive=*/true);
    std::vector<WindowDim> w(2);
    w[0] = {2, 1, 1, 0, 1, 1};
    w[1] = {2, 2, 0, 1, 2, 1};  // stride 2, base dilation 2, padded high
    Instruction* win = b.ReduceWindow(b.Tanh(x), w, ReduceKind::kAdd);
    std::vector<WindowDim> dil(2);
    dil[1] = {2, 1, 0, 0, 1, 3};  // window dilation 3
    Instruction* wd = b.ReduceWindow(x, dil, ReduceKind::kAdd);
    return b.Add(b.Add(b.Add(Weighted(b, mx), Weighted(b, mn)), b.Add(Weighted(b, inc), Weighted(b, exc))),
                 b.Add(Weighted(b, win), Weighted(b, wd)));
  });
  CheckGradients(*m, {0});
}

TEST_CASE("max and min windows (pooling) match finite differences") {
  // Random arguments have no ties, and a +-1e-2 step moves no element past another in a window
  // unless two lie within 1e-2: the rule's mask is then what a difference sees.
  auto m = Program({{5, 7}}, [&](Builder& b, std::vector<Instruction*>& p) {
    std::vector<WindowDim> pool = {{2, 2, 0, 1, 1, 1}, {3, 2, 1, 1, 1, 1}};  // 2x3 max pool, stride 2
    std::vector<WindowDim> dil = {{2, 1, 0, 0, 2, 1}, {2, 1, 0, 0, 1, 2}};  // base and window dilation
    std::vector<WindowDim> crop = {{2, 1, 0, 0, 1, 1}, {3, 2, -1, 0, 1, 1}};  // negative padding
    return b.Add(b.Add(Weighted(b, b.ReduceWindow(p[0], pool, ReduceKind::kMax)),
                       Weighted(b, b.ReduceWindow(b.Tanh(p[0]), dil, ReduceKind::kMin))),
                 Weighted(b, b.ReduceWindow(b.Exp(p[0]), crop, ReduceKind::kMax)));
  });
  CheckGradients(*m, {0}, 4);
  // Ties split equally: stride-1 windows of 2 over [1, 1, 1] (y = [1, 1], loss y0 + y1) give
  // each window's adjoint 1/2 to each of its two elements: dx = [1/2, 1/2 + 1/2, 1/2].
  auto t = Program({{3}}, [&](Builder& b, std::vector<Instruction*>& p) {
    return SumAll(b, b.ReduceWindow(p[0], {WindowDim{2, 1, 0, 0, 1, 1}}, ReduceKind::kMax));
  });
  const Literal g =
      Interpret(*Differentiate(*t, {"p0"}), {Literal(Shape(DType::kF32, {3}), {1, 1, 1})});
  CHECK(g.elements[1].values == std::vector<double>{0.5, 1, 0.5});
}

TEST_CASE("softmax cross-entropy and top-k match finite differences") {
  auto m = Program({{4, 6}, {6, 5}}, [&](Builder& b, std::vector<Instruction*>& p) {
    Instruction* logits = b.Dot(p[0], p[1], DotDims{{}, {}, {1}, {0}});  // [4,5]
    Instruction* shifted = b.Sub(logits, b.Broadcast(b.Reduce(logits, {1}, ReduceKind::kMax), {4, 5}, {0}));
    Instruction* e = b.Exp(shifted);
    Instruction* lsm = b.Sub(shifted, b.Broadcast(b.Log(b.Reduce(e, {1}, ReduceKind::kAdd)), {4, 5}, {0}));
    std::vector<double> labels{1, 4, 0, 2};
    Instruction* hot = b.Convert(b.Compare(b.Broadcast(b.Constant(testing::S32({4}, labels)), {4, 5}, {0}),
                                           b.Iota(Shape(DType::kS32, {4, 5}), 1), Comparison::kEq),
                                 DType::kF32);
    Instruction* xent = b.Neg(SumAll(b, b.Mul(hot, lsm)));
    Instruction* top = b.TopK(logits, 2);
    return b.Add(xent, Weighted(b, b.GetTupleElement(top, 0)));
  });
  CheckGradients(*m, {0, 1});
}

TEST_CASE("hand-derived gradients: gather, convert, relu, unused parameters, shardings") {
  using testing::S32;
  // loss = sum_r sum_c gather(x, idx)[r, c] * w[r, c]: dx[j, c] = sum over r with idx[r] == j
  // of w[r, c]; indices clamp, so 7 reads row 2 and -1 row 0.
  Module m("hand");
  Builder b(m.AddComputation("main", /*is_entry=*/true));
  Instruction* x = b.Parameter(0, Shape(DType::kF32, {3, 2}), "x");
  Instruction* unused = b.Parameter(1, Shape(DType::kF32, {4}), "unused");
  (void)unused;
  Instruction* idx = b.Constant(S32({4}, {2, 0, 7, -1}));
  const std::vector<double> w{1, 2, 3, 4, 5, 6, 7, 8};
  Instruction* g = b.Gather(x, idx, 0);  // [4, 2]
  Instruction* gw = SumAll(b, b.Mul(g, b.Constant(F32({4, 2}, w))));
  // relu through compare + select: d/dx sum(relu(x) * 10) = 10 where x > 0.
  Instruction* relu = b.Select(b.Compare(x, Full(b, {3, 2}, 0.0), Comparison::kGt), x, Full(b, {3, 2}, 0.0));
  Instruction* r = b.Mul(SumAll(b, relu), b.ConstantScalar(DType::kF32, 10.0));
  // convert through bf16: the adjoint of a bf16 -> f32 convert is the f32 adjoint in bf16.
  Instruction* v = b.Convert(b.Convert(x, DType::kBF16), DType::kF32);
  Instruction* cv = SumAll(b, b.Mul(v, b.Constant(F32({3, 2}, {1.00390625, 1, 1, 1, 1, 1}))));
  m.entry()->set_root(b.Add(b.Add(gw, r), cv));
  x->sharding = Sharding::TiledIota({2, 1});

  const std::unique_ptr<Module> grad = Differentiate(m, {"x", "unused"});
  Verify(*grad);
  const std::vector<double> xs{0.5, -0.25, -1, 0.75, 0.125, -0.5};
  const Literal out = Interpret(*grad, {F32({3, 2}, xs), F32({4}, {1, 2, 3, 4})});
  // Rows: x row 0 gets w rows 1 and 3, row 1 none, row 2 rows 0 and 2. 1.00390625 rounds to
  // 1 in bf16 (8 bits of mantissa), so the convert adds 1 to every element.
  std::vector<double> expect{3 + 7, 4 + 8, 0, 0, 1 + 5, 2 + 6};
  for (size_t k = 0; k < expect.size(); ++k) expect[k] += (xs[k] > 0 ? 10 : 0) + 1;
  CHECK(out.elements[1].values == expect);
  CHECK(out.elements[2].values == std::vector<double>{0, 0, 0, 0});
  // The gradient of a sharded parameter carries its sharding.
  const Instruction* root = grad->entry()->root();
  REQUIRE(root->operand(1)->sharding.has_value());
  CHECK(*root->operand(1)->sharding == *x->sharding);
}

TEST_CASE("bad requests name what is wrong") {
  auto m = Program({{2}, {2}}, [&](Builder& b, std::vector<Instruction*>& p) {
    return SumAll(b, b.Sort(b.Mul(p[0], p[1]), 0));
  });
  CHECK_THROWS_WITH_AS(Differentiate(*m, {"nope"}),
                       doctest::Contains("wrt 'nope' names no parameter of the entry computation (parameters: p0, p1)"),
                       Error);
  CHECK_THROWS_WITH_AS(Differentiate(*m, {"p0", "p0"}), doctest::Contains("named twice"), Error);
  CHECK_THROWS_WITH_AS(Differentiate(*m, {"p0"}), doctest::Contains("no gradient rule for %sort"), Error);
  auto grouped = Program({{1, 4, 5}, {2, 2, 4}}, [&](Builder& b, std::vector<Instruction*>& p) {
    ConvDims cd;  // bf0 / io0 -> bf0, two feature groups
    cd.input_batch = 0, cd.input_feature = 1, cd.input_spatial = {2};
    cd.kernel_input_feature = 0, cd.kernel_output_feature = 1, cd.kernel_spatial = {2};
    cd.output_batch = 0, cd.output_feature = 1, cd.output_spatial = {2};
    return SumAll(b, b.Convolution(p[0], p[1], cd, {WindowDim{4, 1, 0, 0, 1, 1}}, 2));
  });
  CHECK_THROWS_WITH_AS(Differentiate(*grouped, {"p1"}),
                       doctest::Contains("(convolution): feature_group_count > 1"), Error);
  CHECK_THROWS_WITH_AS(Differentiate(*m, {"p0"}, "multiply"),
                       doctest::Contains("is f32[2], not an f32 or bf16 scalar"), Error);
  CHECK_THROWS_WITH_AS(Differentiate(*m, {"p0"}, "zzz"), doctest::Contains("loss 'zzz' names no instruction"),
                       Error);
  // A loss that does not depend on the parameter has a zero gradient, not an error.
  auto c = Program({{2}}, [&](Builder& b, std::vector<Instruction*>&) { return b.ConstantScalar(DType::kF32, 3); });
  const Literal out = Interpret(*Differentiate(*c, {"p0"}), {F32({2}, {1, 2})});
  CHECK(out.elements[1].values == std::vector<double>{0, 0});
}

}  // namespace
}  // namespace podsim::ir
