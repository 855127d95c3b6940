// Top-2 gating (GShard Algorithm 1) and the MoE layer of Algorithm 2, checked numerically with
// the reference interpreter: against a sequential transcription of Algorithm 1 (two passes over
// the tokens with per-expert counters, as the paper writes it), against its invariants, against
// a direct per-token evaluation of the experts, and on a hand-derived 4-token, 2-expert case.

#include "models/top2_gating.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/literal.h"
#include "models/moe_transformer.h"
#include "tests/models/models_test_util.h"

namespace podsim::models {
namespace {

using ir::DType;
using ir::Literal;
using ir::Shape;

struct Dims {
  int64_t g, s, e, c;
  int64_t Index(int64_t gi, int64_t si, int64_t ei, int64_t ci) const {
    return ((gi * s + si) * e + ei) * c + ci;
  }
};

// Algorithm 1 as the paper writes it, from the interpreter's gates [G,S,E] and uniform draws
// [G,S]: first pass, each token's top-1 expert takes the next free slot if it has one; second
// pass, its top-2 expert does the same when 2 * w2 > uniform. Weights g_k / (g1 + g2), in f32.
// Returns combine weights [G,S,E,C].
std::vector<double> ReferenceCombine(const Literal& gates, const Literal& uniform, int64_t cap) {
  const Dims d{gates.shape.dims[0], gates.shape.dims[1], gates.shape.dims[2], cap};
  std::vector<double> combine(d.g * d.s * d.e * d.c, 0.0);
  for (int64_t g = 0; g < d.g; ++g) {
    std::vector<int64_t> count(d.e, 0), e1(d.s), e2(d.s);
    std::vector<float> w1(d.s), w2(d.s);
    for (int64_t s = 0; s < d.s; ++s) {
      auto gate = [&](int64_t e) { return static_cast<float>(gates.At({g, s, e})); };
      e1[s] = 0;
      for (int64_t e = 1; e < d.e; ++e) {
        if (gate(e) > gate(e1[s])) e1[s] = e;
      }
      e2[s] = e1[s] == 0 ? 1 : 0;
      for (int64_t e = 0; e < d.e; ++e) {
        if (e != e1[s] && gate(e) > gate(e2[s])) e2[s] = e;
      }
      const float denom = gate(e1[s]) + gate(e2[s]);
      w1[s] = gate(e1[s]) / denom;
      w2[s] = gate(e2[s]) / denom;
      if (count[e1[s]] < cap) combine[d.Index(g, s, e1[s], count[e1[s]]++)] = w1[s];
    }
    for (int64_t s = 0; s < d.s; ++s) {
      const bool sampled = 2.0f * w2[s] > static_cast<float>(uniform.At({g, s}));
      if (sampled && count[e2[s]] < cap) combine[d.Index(g, s, e2[s], count[e2[s]]++)] = w2[s];
    }
  }
  return combine;
}

// expert e applied to token (g, s): relu(x wi[e]) wo[e], [M].
std::vector<double> Expert(const Literal& x, const Literal& wi, const Literal& wo, int64_t g,
                           int64_t s, int64_t e) {
  const int64_t m = x.shape.dims[2], h = wi.shape.dims[2];
  std::vector<double> hidden(h, 0.0), out(m, 0.0);
  for (int64_t j = 0; j < h; ++j) {
    for (int64_t i = 0; i < m; ++i) hidden[j] += x.At({g, s, i}) * wi.At({e, i, j});
    hidden[j] = std::max(hidden[j], 0.0);
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < h; ++j) out[i] += hidden[j] * wo.At({e, j, i});
  }
  return out;
}

struct MoeRun {
  Literal gates, uniform, combine, dispatch, outputs;
};

// Runs Algorithm 2 (BuildMoeLayer, unannotated) on `args`, or on random arguments from
// `arg_seed` when `args` is empty; fills `args`.
MoeRun Run(const MoeLayerConfig& config, std::vector<Literal>& args, uint64_t arg_seed = 0) {
  std::unique_ptr<ir::Module> m = BuildMoeLayer(config);
  if (args.empty()) args = ir::RandomArguments(*m, arg_seed);
  std::vector<Literal> v = testing::Evaluate(
      *m, {"gates", "second_expert_uniform", "combine_weights", "dispatch_mask", "moe_outputs"},
      args);
  return {v[0], v[1], v[2], v[3], v[4]};
}

MoeLayerConfig Unannotated(MoeLayerConfig c) {
  c.annotate = false;
  return c;
}

TEST_CASE("top-2 gating equals Algorithm 1 and keeps its invariants") {
  struct Case {
    int64_t experts, capacity;
    uint64_t seed;
  };
  // Default C = 2S/E = 4 with 4 experts; tight capacities that drop tokens; 8 experts (C = 2).
  for (const Case& k :
       {Case{4, 0, 1}, Case{4, 1, 2}, Case{4, 2, 3}, Case{8, 0, 4}, Case{8, 1, 5}, Case{2, 3, 6}}) {
    CAPTURE(k.experts);
    CAPTURE(k.capacity);
    MoeLayerConfig c = Unannotated(ToyMoeConfig());
    c.num_experts = k.experts;
    c.capacity = k.capacity;
    c.seed = k.seed;
    const int64_t cap = ExpertCapacity(c);
    std::vector<Literal> args;
    MoeRun r = Run(c, args, /*arg_seed=*/k.seed + 100);
    const Dims d{c.num_groups, c.tokens_per_group, c.num_experts, cap};
    REQUIRE(r.combine.shape.dims == std::vector<int64_t>{d.g, d.s, d.e, d.c});

    const std::vector<double> expected = ReferenceCombine(r.gates, r.uniform, cap);
    for (int64_t n = 0; n < r.combine.NumElements(); ++n) {
      CHECK(r.combine.values[n] == doctest::Approx(expected[n]).epsilon(1e-6));
      CHECK(r.dispatch.values[n] == (expected[n] > 0 ? 1.0 : 0.0));
    }

    int64_t dropped = 0;
    for (int64_t g = 0; g < d.g; ++g) {
      for (int64_t s = 0; s < d.s; ++s) {
        int64_t experts = 0;
        double weight = 0;
        for (int64_t e = 0; e < d.e; ++e) {
          int64_t slots = 0;
          for (int64_t ci = 0; ci < d.c; ++ci) {
            slots += static_cast<int64_t>(r.dispatch.At({g, s, e, ci}));
            weight += r.combine.At({g, s, e, ci});
          }
          CHECK(slots <= 1);  // one slot per chosen expert
          experts += slots;
        }
        CHECK(experts <= 2);          // at most 2 experts per token
        CHECK(weight <= 1.0 + 1e-6);  // combine weights sum to <= 1
        if (experts == 0) ++dropped;
      }
      for (int64_t e = 0; e < d.e; ++e) {
        // Each slot holds at most one token, so an expert gets at most C tokens per group; the
        // used slots are 0..n-1 (positions are an exclusive cumsum: no gaps).
        bool gap = false;
        for (int64_t ci = 0; ci < d.c; ++ci) {
          int64_t tokens = 0;
          for (int64_t s = 0; s < d.s; ++s)
            tokens += static_cast<int64_t>(r.dispatch.At({g, s, e, ci}));
          CHECK(tokens <= 1);
          if (tokens == 0) gap = true;
          if (tokens == 1) CHECK_FALSE(gap);
        }
      }
    }
    if (k.capacity == 1) CHECK(dropped > 0);  // 8 tokens, E slots: some must be dropped
  }
}

TEST_CASE("MoE outputs: the combine-weighted sum of the chosen experts; dropped tokens get 0") {
  for (int64_t capacity : {0, 1}) {
    CAPTURE(capacity);
    MoeLayerConfig c = Unannotated(ToyMoeConfig());
    c.capacity = capacity;
    std::vector<Literal> args;
    MoeRun r = Run(c, args, /*arg_seed=*/9);
    const Literal &x = args[0], &wi = args[2], &wo = args[3];
    const int64_t cap = ExpertCapacity(c);
    for (int64_t g = 0; g < c.num_groups; ++g) {
      for (int64_t s = 0; s < c.tokens_per_group; ++s) {
        std::vector<double> want(c.d_model, 0.0);
        double weight = 0;
        for (int64_t e = 0; e < c.num_experts; ++e) {
          for (int64_t ci = 0; ci < cap; ++ci) {
            const double w = r.combine.At({g, s, e, ci});
            if (w == 0) continue;
            weight += w;
            const std::vector<double> y = Expert(x, wi, wo, g, s, e);
            for (int64_t i = 0; i < c.d_model; ++i) want[i] += w * y[i];
          }
        }
        for (int64_t i = 0; i < c.d_model; ++i) {
          const double got = r.outputs.At({g, s, i});
          if (weight == 0) {
            CHECK(got == 0.0);  // dropped by both experts: exactly zero
          } else {
            CHECK(got == doctest::Approx(want[i]).epsilon(1e-4).scale(1.0));
          }
        }
      }
    }
  }
}

TEST_CASE("hand-derived: 1 group, 4 tokens, 2 experts, capacity 2") {
  // wg = identity, so the gating logits are the token itself; expert 0 is relu(x), expert 1 is
  // 2 relu(x) (wi[1] = 2I, wo = I).
  //   token  x         gates            e1  e2 (w2)      top-1 slot     top-2 slot
  //   s0     (1, 1)    (.5, .5)         0   1 (.5)       e0 slot 0      e1 slot 1
  //   s1     (40, -1)  (1, ~1.6e-18)    0   1 (~1e-18)   e0 slot 1      not sampled (2 w2 < u)
  //   s2     (3, 3)    (.5, .5)         0   1 (.5)       e0 full (2)    e1 full (slot 2)
  //   s3     (-1, 40)  (~1e-18, 1)      1   0 (~1e-18)   e1 slot 0      not sampled
  // Ties go to the first expert (argmax), 2 * 0.5 = 1 > any uniform draw in [0, 1). Expert 1's
  // top-2 slots start after its one top-1 token (s3), so s0 gets slot 1 and s2 slot 2 >= C.
  // outputs: s0 = .5 relu(1,1) + .5 * 2 relu(1,1) = (1.5, 1.5); s1 = relu(40,-1) = (40, 0);
  // s2 dropped = (0, 0); s3 = 2 relu(-1, 40) = (0, 80).
  MoeLayerConfig c = Unannotated(ToyMoeConfig());
  c.num_groups = 1;
  c.tokens_per_group = 4;
  c.d_model = 2;
  c.d_ff = 2;
  c.num_experts = 2;
  c.capacity = 2;
  std::vector<Literal> args = {Literal(Shape(DType::kF32, {1, 4, 2}), {1, 1, 40, -1, 3, 3, -1, 40}),
                               Literal(Shape(DType::kF32, {2, 2}), {1, 0, 0, 1}),
                               Literal(Shape(DType::kF32, {2, 2, 2}), {1, 0, 0, 1, 2, 0, 0, 2}),
                               Literal(Shape(DType::kF32, {2, 2, 2}), {1, 0, 0, 1, 1, 0, 0, 1})};
  MoeRun r = Run(c, args);
  // The policy's draws for s1 and s3 must exceed 2 w2 ~ 3e-18 for the table above to hold.
  REQUIRE(r.uniform.At({0, 1}) > 1e-12);
  REQUIRE(r.uniform.At({0, 3}) > 1e-12);
  // combine [1,4,2,2] in (s, e, c) order.
  CHECK(r.combine.values == std::vector<double>{0.5, 0, 0, 0.5,  // s0
                                                0, 1, 0, 0,      // s1
                                                0, 0, 0, 0,      // s2
                                                0, 0, 1, 0});    // s3
  CHECK(r.dispatch.values == std::vector<double>{1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0});
  CHECK(r.outputs.values == std::vector<double>{1.5, 1.5, 40, 0, 0, 0, 0, 80});
}

TEST_CASE("the second-expert draws come from the config's seed") {
  MoeLayerConfig c = Unannotated(ToyMoeConfig());
  std::vector<Literal> args;
  const Literal a = Run(c, args, 1).uniform;
  const Literal again = Run(c, args).uniform;
  c.seed = 12345;
  const Literal b = Run(c, args).uniform;
  CHECK(a.values == again.values);
  CHECK(a.values != b.values);
  for (double u : a.values) {
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
}

}  // namespace
}  // namespace podsim::models
