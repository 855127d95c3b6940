// The optimizers in the IR against hand-written reference implementations (plain loops in
// double), state shapes and shardings, and bad input.

#include "models/optimizer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"

namespace podsim::models {
namespace {

using ir::DType;
using ir::Literal;
using ir::Shape;
using ir::Sharding;

std::vector<double> Random(int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  // Values exactly representable in f32, so the reference sees what the interpreter sees.
  for (double& x : v) x = static_cast<float>(u(rng));
  return v;
}

double Rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / static_cast<double>(v.size()));
}

// Adafactor as Shazeer & Stern's Algorithm 4/5 with GShard's settings, written from the paper's
// equations: row / column statistics of the last two dims for rank >= 2, else a full second
// moment. `state` holds (row, col) or (v); updated in place. Returns the new parameter and sets
// *clipped when the update clipping changed the update.
std::vector<double> ReferenceAdafactor(const std::vector<int64_t>& dims,
                                       const std::vector<double>& x, const std::vector<double>& g,
                                       std::vector<std::vector<double>>& state, double t,
                                       const OptimizerConfig& c, bool* clipped) {
  const double beta2 = std::min(c.beta2_cap, 1 - std::pow(t, -c.decay_exponent));
  const double rho = c.learning_rate / std::sqrt(std::max(t, c.warmup_steps));
  const size_t n = x.size();
  std::vector<double> g2(n), v(n), u(n);
  for (size_t i = 0; i < n; ++i) g2[i] = g[i] * g[i] + c.epsilon1;
  if (dims.size() >= 2) {
    const int64_t rows = dims[dims.size() - 2], cols = dims.back();
    const int64_t batch = static_cast<int64_t>(n) / (rows * cols);
    std::vector<double>& row = state[0];
    std::vector<double>& col = state[1];
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        double s = 0;
        for (int64_t j = 0; j < cols; ++j) s += g2[(b * rows + i) * cols + j];
        row[b * rows + i] = beta2 * row[b * rows + i] + (1 - beta2) * s / cols;
      }
      for (int64_t j = 0; j < cols; ++j) {
        double s = 0;
        for (int64_t i = 0; i < rows; ++i) s += g2[(b * rows + i) * cols + j];
        col[b * cols + j] = beta2 * col[b * cols + j] + (1 - beta2) * s / rows;
      }
      double row_mean = 0;
      for (int64_t i = 0; i < rows; ++i) row_mean += row[b * rows + i] / rows;
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          v[(b * rows + i) * cols + j] = row[b * rows + i] * col[b * cols + j] / row_mean;
        }
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      state[0][i] = beta2 * state[0][i] + (1 - beta2) * g2[i];
      v[i] = state[0][i];
    }
  }
  for (size_t i = 0; i < n; ++i) u[i] = g[i] / std::sqrt(v[i]);
  const double scale = std::max(1.0, Rms(u) / c.clipping_threshold);
  *clipped = scale > 1;
  const double alpha = rho * std::max(c.epsilon2, Rms(x));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] - alpha * u[i] / scale;
  return out;
}

// A module computing one update: parameters x, g, the state, step; root tuple(x', state'...).
std::unique_ptr<ir::Module> UpdateModule(const OptimizerConfig& c, const Shape& shape,
                                         const std::optional<Sharding>& sharding = {},
                                         int64_t layer_dims = 0) {
  auto m = std::make_unique<ir::Module>("update");
  ir::Builder b(m->AddComputation("main", true));
  ir::Instruction* x = b.Parameter(0, shape, "w");
  x->sharding = sharding;
  ir::Instruction* g = b.Parameter(1, Shape(DType::kF32, shape.dims), "g");
  std::vector<ir::Instruction*> state;
  int64_t k = 2;
  for (const OptimizerSlot& s : OptimizerSlots(c, "w", shape, sharding, layer_dims)) {
    state.push_back(b.Parameter(k++, s.shape, s.name));
  }
  ir::Instruction* step = b.Parameter(k, Shape(DType::kS32, {}), "step");
  OptimizerUpdate u = AddOptimizerUpdate(b, c, x, g, state, step, layer_dims);
  std::vector<ir::Instruction*> out = {u.parameter};
  out.insert(out.end(), u.state.begin(), u.state.end());
  b.Tuple(out);
  ir::Verify(*m);
  return m;
}

double MaxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// Tolerance: the interpreter rounds every f32 op (unit roundoff 6e-8); the longest chain of the
// update (g^2, two means, the EMA, the normalisation, rsqrt, two RMS reductions of up to 24
// terms, the scaling) is about 40 roundings of values of order 1, so its relative error stays
// below 40 * 6e-8 = 2.4e-6; 1e-5 leaves room and still fails on any wrong formula (a missing
// factor changes values by >= 1e-3).
constexpr double kTol = 1e-5;

void CheckAdafactor(const std::vector<int64_t>& dims, double t, double state_lo, double state_hi,
                    bool expect_clipped) {
  OptimizerConfig c;  // the paper's settings
  const Shape shape(DType::kF32, dims);
  auto m = UpdateModule(c, shape);
  const int64_t n = shape.NumElements();
  const std::vector<double> x = Random(n, 1, -1, 1), g = Random(n, 2, -2, 2);
  std::vector<Literal> args = {Literal(shape, x), Literal(shape, g)};
  std::vector<std::vector<double>> state;
  for (const OptimizerSlot& s : OptimizerSlots(c, "w", shape, {})) {
    state.push_back(Random(s.shape.NumElements(), 3 + state.size(), state_lo, state_hi));
    args.push_back(Literal(s.shape, state.back()));
  }
  args.push_back(Literal::Scalar(DType::kS32, t - 1));
  const Literal got = ir::Interpret(*m, args);
  bool clipped = false;
  const std::vector<double> want = ReferenceAdafactor(dims, x, g, state, t, c, &clipped);
  CHECK(clipped == expect_clipped);
  CHECK(MaxDiff(got.elements[0].values, want) < kTol);
  // The update itself, not only x' (x dominates x' when the step is small).
  std::vector<double> du_got(n), du_want(n);
  for (int64_t i = 0; i < n; ++i) {
    du_got[i] = got.elements[0].values[i] - x[i];
    du_want[i] = want[i] - x[i];
  }
  CHECK(MaxDiff(du_got, du_want) < kTol * (1e-2 + Rms(du_want)));
  CHECK(Rms(du_want) > 0);
  for (size_t k = 0; k < state.size(); ++k) {
    CHECK(MaxDiff(got.elements[1 + k].values, state[k]) < kTol * 4);
  }
}

TEST_CASE("adafactor: factored matrix update equals the reference, with clipping early") {
  // t = 2: beta2 = 1 - 2^-0.8 = 0.43, the fresh g^2 dominates small state, so |U| ~ 1.3 and the
  // RMS clipping acts.
  CheckAdafactor({3, 4}, 2, 0, 0.1, /*expect_clipped=*/true);
  // t = 50,000: beta2 at its 0.99 cap and rho = 1/sqrt(50,000) (past the 10,000-step warmup);
  // large state keeps RMS(U) < 1: no clipping.
  CheckAdafactor({3, 4}, 50000, 50, 60, /*expect_clipped=*/false);
}

// A layer loop's stacked weight [R, ...] (layer_dims = 1): each layer's slice updated as its own
// weight, against the reference run on each slice alone. Layer 1's gradient is 10x layer 0's
// and the layers' weights have different RMS, so whole-stack statistics, RMS or clipping would
// give other values.
void CheckLayerStacked(const std::vector<int64_t>& layer_shape, double t) {
  OptimizerConfig c;
  std::vector<int64_t> dims = layer_shape;
  dims.insert(dims.begin(), 2);
  const Shape shape(DType::kF32, dims);
  auto m = UpdateModule(c, shape, {}, /*layer_dims=*/1);
  const int64_t n = shape.NumElements(), half = n / 2;
  std::vector<double> x = Random(n, 1, -1, 1), g = Random(n, 2, -2, 2);
  for (int64_t i = half; i < n; ++i) {
    g[i] *= 10;
    x[i] = static_cast<float>(x[i] * 0.25);
  }
  std::vector<Literal> args = {Literal(shape, x), Literal(shape, g)};
  std::vector<std::vector<double>> state;
  for (const OptimizerSlot& s : OptimizerSlots(c, "w", shape, {}, 1)) {
    CHECK(s.shape.dims.front() == 2);  // per-layer statistics
    state.push_back(Random(s.shape.NumElements(), 3 + state.size(), 0, 0.1));
    args.push_back(Literal(s.shape, state.back()));
  }
  args.push_back(Literal::Scalar(DType::kS32, t - 1));
  const Literal got = ir::Interpret(*m, args);
  for (int64_t layer = 0; layer < 2; ++layer) {
    CAPTURE(layer);
    auto part = [&](const std::vector<double>& v) {
      const size_t len = v.size() / 2;
      return std::vector<double>(v.begin() + layer * len, v.begin() + (layer + 1) * len);
    };
    std::vector<std::vector<double>> layer_state;
    for (const auto& st : state) layer_state.push_back(part(st));
    bool clipped = false;
    const std::vector<double> xs = part(x);
    const std::vector<double> want =
        ReferenceAdafactor(layer_shape, xs, part(g), layer_state, t, c, &clipped);
    const std::vector<double> have = part(got.elements[0].values);
    std::vector<double> du_got(xs.size()), du_want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      du_got[i] = have[i] - xs[i];
      du_want[i] = want[i] - xs[i];
    }
    CHECK(Rms(du_want) > 0);
    CHECK(MaxDiff(du_got, du_want) < kTol * (1e-2 + Rms(du_want)));
    for (size_t k = 0; k < state.size(); ++k) {
      CHECK(MaxDiff(part(got.elements[1 + k].values), layer_state[k]) < kTol * 4);
    }
  }
}

TEST_CASE("adafactor: a layer-stacked weight updates each layer's slice as its own weight") {
  CheckLayerStacked({3, 4}, 2);  // [R, M, H]: factored per layer
  CheckLayerStacked({5}, 3);     // [R, M] (LayerNorm scales): unfactored, not a matrix
  OptimizerConfig c;
  CHECK(OptimizerSlots(c, "w", Shape(DType::kF32, {2, 5}), {}, 1).size() == 1);
  CHECK(OptimizerSlots(c, "w", Shape(DType::kF32, {2, 5}), {}, 0).size() == 2);
  CHECK_THROWS_WITH_AS(OptimizerSlots(c, "w", Shape(DType::kF32, {2}), {}, 2),
                       doctest::Contains("cannot have 2 layer dims"), Error);
}

TEST_CASE("adafactor: rank-3 (expert) weights keep per-expert statistics; vectors unfactored") {
  CheckAdafactor({2, 3, 4}, 7, 5, 6, false);
  CheckAdafactor({5}, 3, 0, 0.2, true);
  CheckAdafactor({}, 3, 50, 60, false);
}

TEST_CASE("adam and sgd updates equal the textbook formulas") {
  const Shape shape(DType::kF32, {2, 3});
  const std::vector<double> x = Random(6, 11, -1, 1), g = Random(6, 12, -1, 1);
  {
    OptimizerConfig c;
    c.kind = OptimizerKind::kSgd;
    c.learning_rate = 0.25;
    auto m = UpdateModule(c, shape);
    const Literal got = ir::Interpret(
        *m, {Literal(shape, x), Literal(shape, g), Literal::Scalar(DType::kS32, 0)});
    std::vector<double> want(6);
    for (int i = 0; i < 6; ++i) want[i] = x[i] - 0.25 * g[i];
    CHECK(MaxDiff(got.elements[0].values, want) < kTol);
    CHECK(got.elements.size() == 1);
  }
  {
    OptimizerConfig c;
    c.kind = OptimizerKind::kAdam;
    c.learning_rate = 1e-2;
    auto m = UpdateModule(c, shape);
    const std::vector<double> m0 = Random(6, 13, -0.1, 0.1), v0 = Random(6, 14, 0, 0.1);
    const double t = 3;
    const Literal got =
        ir::Interpret(*m, {Literal(shape, x), Literal(shape, g), Literal(shape, m0),
                           Literal(shape, v0), Literal::Scalar(DType::kS32, t - 1)});
    for (int i = 0; i < 6; ++i) {
      const double m1 = 0.9 * m0[i] + 0.1 * g[i];
      const double v1 = 0.999 * v0[i] + 0.001 * g[i] * g[i];
      const double step = 1e-2 * (m1 / (1 - std::pow(0.9, t))) /
                          (std::sqrt(v1 / (1 - std::pow(0.999, t))) + 1e-8);
      CHECK(std::fabs(got.elements[0].values[i] - (x[i] - step)) < kTol);
      CHECK(std::fabs(got.elements[1].values[i] - m1) < kTol);
      CHECK(std::fabs(got.elements[2].values[i] - v1) < kTol);
    }
  }
}

TEST_CASE("optimizer state: shapes, and shardings that follow the parameter") {
  OptimizerConfig c;
  const Sharding experts = Sharding::TiledIota({4, 1, 1});
  auto slots = OptimizerSlots(c, "wi", Shape(DType::kBF16, {4, 8, 16}), experts);
  REQUIRE(slots.size() == 2);
  CHECK(slots[0].name == "wi.adafactor_row");
  CHECK(slots[0].shape == Shape(DType::kF32, {4, 8}));
  CHECK(slots[1].shape == Shape(DType::kF32, {4, 16}));
  // Split over experts, like wi: each device keeps the statistics of its own expert.
  CHECK(slots[0].sharding == Sharding::TiledIota({4, 1}));
  CHECK(slots[1].sharding == Sharding::TiledIota({4, 1}));
  // A weight split along its rows: the row statistics keep the split, the column statistics
  // (reduced over the split dim) are left to propagation.
  slots = OptimizerSlots(c, "w", Shape(DType::kF32, {8, 16}), Sharding::TiledIota({2, 1}));
  CHECK(slots[0].sharding == Sharding::TiledIota({2}));
  CHECK_FALSE(slots[1].sharding.has_value());
  // Replicated stays replicated; vectors keep a full second moment.
  slots = OptimizerSlots(c, "b", Shape(DType::kF32, {8}), Sharding::Replicated());
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].name == "b.adafactor_v");
  CHECK(slots[0].sharding == Sharding::Replicated());
  c.kind = OptimizerKind::kAdam;
  CHECK(OptimizerSlots(c, "w", Shape(DType::kF32, {8, 16}), {}).size() == 2);
  c.kind = OptimizerKind::kSgd;
  CHECK(OptimizerSlots(c, "w", Shape(DType::kF32, {8, 16}), {}).empty());
}

TEST_CASE("a bf16 parameter is updated in f32 and rounded back") {
  OptimizerConfig c;
  c.kind = OptimizerKind::kSgd;
  c.learning_rate = 1.0 / 512;  // 1 + 2^-9 * 1 is below bf16's resolution at 1 (2^-7)
  auto m = UpdateModule(c, Shape(DType::kBF16, {2}));
  const Literal got = ir::Interpret(*m, {Literal(Shape(DType::kBF16, {2}), {1.0, 1.0}),
                                         Literal(Shape(DType::kF32, {2}), {-1.0, -4.0}),
                                         Literal::Scalar(DType::kS32, 0)});
  CHECK(got.elements[0].shape.dtype == DType::kBF16);
  CHECK(got.elements[0].values[0] == 1.0);         // 1 + 1/512 rounds to 1
  CHECK(got.elements[0].values[1] == 1.0078125);   // 1 + 4/512 = 1 + 2^-7, exact in bf16
}

TEST_CASE("optimizer: bad input names what is wrong") {
  OptimizerConfig c;
  ir::Module m("bad");
  ir::Builder b(m.AddComputation("main", true));
  ir::Instruction* w = b.Parameter(0, Shape(DType::kF32, {4, 4}), "w");
  ir::Instruction* g = b.Parameter(1, Shape(DType::kF32, {4, 3}), "g");
  ir::Instruction* step = b.Parameter(2, Shape(DType::kS32, {}), "step");
  CHECK_THROWS_WITH_AS(AddOptimizerUpdate(b, c, w, g, {}, step),
                       doctest::Contains("does not match parameter %w"), Error);
  ir::Instruction* g2 = b.Parameter(3, Shape(DType::kF32, {4, 4}), "g2");
  CHECK_THROWS_WITH_AS(AddOptimizerUpdate(b, c, w, g2, {}, step),
                       doctest::Contains("needs 2 state tensors, got 0"), Error);
  CHECK_THROWS_WITH_AS(
      OptimizerConfig::FromJson(nlohmann::json{{"kind", "adagrad"}}, "optimizer", {}),
      doctest::Contains("optimizer.kind"), ConfigError);
  CHECK_THROWS_WITH_AS(
      OptimizerConfig::FromJson(nlohmann::json{{"learning_rate", -1}}, "optimizer", {}),
      doctest::Contains("optimizer.learning_rate"), ConfigError);
  CHECK(OptimizerConfig::FromJson(nlohmann::json{{"kind", "adam"}}, "o", {}).kind ==
        OptimizerKind::kAdam);
}

}  // namespace
}  // namespace podsim::models
