// podsim plan's search (experiments/plan.h): the candidates it enumerates, counted by hand; the
// weight bytes and the bound it gives each; that the finalists are the best estimates and the
// best is the fastest of them; the memory limit; the winner's small-mesh module.

#include "experiments/plan.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "partitioner/equivalence.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::experiments {
namespace {

// 8 experts, 4 heads, d_ff 32, a batch of 64 tokens in groups of 8, 2 layers (1 + 1, both MoE).
nlohmann::json PlanToyModel() {
  return {{"experts", 8},   {"batch_tokens", 64}, {"num_layers", 2},
          {"moe_every", 1}, {"d_model", 16},      {"d_ff", 32},
          {"num_heads", 4}, {"head_dim", 4},      {"tokens_per_group", 8},
          {"seq_len", 4},   {"source_vocab", 16}, {"target_vocab", 12}};
}

PlanSpec ToySpec() {
  PlanSpec spec;
  spec.model = PlanToyModel();
  spec.topologies = {"tpu-v3-8"};
  spec.finalists = 3;
  spec.jobs = 1;
  return spec;
}

const PlanCandidate& Find(const PlanResult& p, int64_t data, int64_t expert, int64_t model,
                          int64_t s, int64_t micro_batches = 1) {
  for (const PlanCandidate& c : p.candidates) {
    if (c.data == data && c.expert == expert && c.model == model && c.tokens_per_group == s &&
        c.micro_batches == micro_batches) {
      return c;
    }
  }
  FAIL("no candidate " << data << "x" << expert << "x" << model << " S " << s << " micro "
                       << micro_batches);
  return p.candidates.front();
}

// The candidate's layout at toy size (SmallMeshModule) on `mesh` equals the unpartitioned step.
void CheckSmallMesh(const PlanCandidate& c, const std::string& want_mesh) {
  int64_t devices = 0;
  std::string mesh;
  const auto module = SmallMeshModule(c, &devices, &mesh);
  CHECK(mesh == want_mesh);
  partitioner::PartitionOptions options;
  options.num_partitions = devices;
  const partitioner::EquivalenceReport report =
      partitioner::CheckEquivalence(*module, options, /*seed=*/5);
  CAPTURE(report.ToString());
  CHECK(report.ok());
}

TEST_CASE(
    "plan: every mesh, group size and micro-batch count the model takes on 8 cores, ranked with "
    "the fastest first") {
  const PlanResult plan = RunPlan(ToySpec());
  // model in {1, 2, 4} (divides 8 cores, 4 heads and d_ff 32); expert divides 8 / model and the
  // 8 experts: 4, 3 and 2 choices. S in {4, 8, 16} (seq_len 4 divides it, S0/4 = 2 is below
  // seq_len), G = 64 / S = 16, 8, 4 groups; micro-batches k in {1, 2, 4, 8} such that each
  // micro-batch's G / k groups split over data x expert = 8 / model devices, i.e. k divides
  // G x model / 8:
  //   model 1: S 4 -> 2 (k 1, 2), S 8 -> 1, S 16 -> none: 3 per expert choice, x 4 = 12
  //   model 2: S 4 -> 4 (k 1, 2, 4), S 8 -> 2, S 16 -> 1: 6, x 3 = 18
  //   model 4: S 4 -> 8 (k 1, 2, 4, 8), S 8 -> 4, S 16 -> 2: 9, x 2 = 18;   12 + 18 + 18 = 48.
  REQUIRE(plan.candidates.size() == 48);
  CHECK(plan.simulated == 3);
  int best = 0, simulated = 0;
  for (const PlanCandidate& c : plan.candidates) {
    CAPTURE(c.data);
    CAPTURE(c.expert);
    CAPTURE(c.model);
    CAPTURE(c.tokens_per_group);
    CHECK(c.data * c.expert * c.model == 8);
    CHECK(c.groups * c.tokens_per_group == 64);
    best += c.status == PlanStatus::kBest;
    simulated += c.simulated;
    if (c.simulated && c.status != PlanStatus::kOom && c.status != PlanStatus::kFailed) {
      // The bound is a lower bound of the simulated step; the weights of the peak memory.
      CHECK(c.compute_bound_s <= c.step_s);
      CHECK(c.weights_bytes <= c.peak_bytes);
    }
  }
  CHECK(best == 1);
  CHECK(simulated == 3);
  const PlanCandidate& first = plan.candidates.front();
  REQUIRE(first.status == PlanStatus::kBest);
  // The best is the fastest simulated; the finalists are the best estimates.
  double worst_finalist_estimate = 0;
  for (const PlanCandidate& c : plan.candidates) {
    if (!c.simulated) continue;
    CHECK(first.step_s <= c.step_s);
    worst_finalist_estimate = std::max(worst_finalist_estimate, c.estimate_s);
    if (&c != &first) CHECK(c.reason.find("step time") != std::string::npos);
  }
  for (const PlanCandidate& c : plan.candidates) {
    if (c.simulated) continue;
    CHECK(c.estimate_s >= worst_finalist_estimate);
    CHECK((c.status == PlanStatus::kUnsimulated || c.status == PlanStatus::kBound));
  }
  // Weights per core: the expert weights (2 layers x wi, wo: 2 x 2 x 8 x 16 x 32 = 16384 f32)
  // split 4 ways instead of 8 take 16384 x 4 B x (1/4 - 1/8) = 8192 B more; the rest is the
  // same (replicated on both meshes).
  CHECK(Find(plan, 2, 4, 1, 8).weights_bytes - Find(plan, 1, 8, 1, 8).weights_bytes == 8192);
  // A model axis of 2 runs the gating einsums on twice the groups per core. Per group (S 8,
  // M 16, E 8, C = 2S/E = 2): logits 2SME = 2048 FLOPs forward + 2 x backward, dispatch 2SECM
  // = 4096 forward + 1 x backward (the mask has no gradient), combine 4096 + 2 x: 6144 +
  // 8192 + 12288 = 26624; x 8 groups x 2 MoE layers = 425984. Over 4 cores instead of 8:
  // 425984 / 8 = 53248 FLOPs more per core, at the v3 core's 61.5 TFLOP/s.
  CHECK((Find(plan, 1, 4, 2, 8).compute_bound_s - Find(plan, 1, 8, 1, 8).compute_bound_s) *
            61.5e12 ==
        doctest::Approx(53248));
  // The table and CSV have a line per candidate and the header.
  const std::string table = PlanTable(plan);
  CHECK(std::count(table.begin(), table.end(), '\n') == 49);
  CHECK(table.find("best") != std::string::npos);
  const nlohmann::json json = PlanJson(plan);
  CHECK(json["candidates"].size() == 48);
  CHECK(json["candidates"][0]["status"] == "best");
  CHECK(json["candidates"][0]["model"]["model_parallel"] == first.model);
}

TEST_CASE(
    "plan: micro-batches hold the gradient sums, reduce the gradients once each, and add "
    "their sums' traffic") {
  const PlanResult plan = RunPlan(ToySpec());
  const PlanCandidate& one = Find(plan, 1, 8, 1, 4, 1);
  const PlanCandidate& two = Find(plan, 1, 8, 1, 4, 2);
  CHECK(two.weights_bytes == one.weights_bytes);
  CHECK(one.memory_floor_bytes == one.weights_bytes);
  CHECK(two.memory_floor_bytes == 2 * one.weights_bytes);  // f32 sums beside f32 weights
  REQUIRE(one.remat_expected == two.remat_expected);       // the toy fits either way
  CHECK_FALSE(one.remat_expected);
  // Compute: 2 micro-batches x (read the sums and the gradients, write the sums) at the v3
  // core's 900 GB/s / 2 = 450 GB/s of HBM.
  CHECK((two.compute_estimate_s - one.compute_estimate_s) * 450e9 ==
        doctest::Approx(2.0 * 3.0 * static_cast<double>(one.weights_bytes)));
  // Communication: the gradients are AllReduced once per micro-batch, the AllToAlls and the
  // model axis's AllReduces carry the same tokens however they are cut: the estimate grows by
  // one gradient reduction per micro-batch, k = 1, 2, 4 evenly spaced.
  const double c1 = Find(plan, 1, 4, 2, 4, 1).comm_estimate_s;
  const double c2 = Find(plan, 1, 4, 2, 4, 2).comm_estimate_s;
  const double c4 = Find(plan, 1, 4, 2, 4, 4).comm_estimate_s;
  CHECK(c2 > c1);
  CHECK(c4 - c2 == doctest::Approx(2 * (c2 - c1)));
  CHECK(two.model_json["micro_batches"] == 2);
  // Its layout at toy size: 2 micro-batches on the 1x2x1 mesh.
  CheckSmallMesh(two, "1x2x1");
}

TEST_CASE("plan: a memory limit below a layout's weights makes it oom before any simulation") {
  PlanSpec spec = ToySpec();
  const PlanResult full = RunPlan(spec);
  // The weights of the layout with every expert on every core (expert 1, model 1) are the
  // largest; a limit just below them rules out that layout alone among the model-1 meshes.
  const int64_t most = Find(full, 8, 1, 1, 8).weights_bytes;
  spec.memory_limit = static_cast<double>(most - 1);
  spec.finalists = 1;
  const PlanResult plan = RunPlan(spec);
  const PlanCandidate& c = Find(plan, 8, 1, 1, 8);
  CHECK(c.status == PlanStatus::kOom);
  CHECK_FALSE(c.simulated);
  CHECK(c.reason.find("weights alone") != std::string::npos);
  CHECK(Find(plan, 4, 2, 1, 8).status != PlanStatus::kOom);
}

TEST_CASE("plan: bad specs name what is wrong") {
  PlanSpec spec = ToySpec();
  spec.objective_cost = true;  // no price
  CHECK_THROWS_WITH_AS(RunPlan(spec), doctest::Contains("price_per_chip_hour"), ConfigError);
  spec = ToySpec();
  spec.finalists = 0;
  CHECK_THROWS_WITH_AS(RunPlan(spec), doctest::Contains("finalists"), ConfigError);
  spec = ToySpec();
  spec.topologies = {"tpu-v9-1"};
  CHECK_THROWS_AS(RunPlan(spec), ConfigError);
  spec = ToySpec();
  spec.model["expertz"] = 4;
  CHECK_THROWS_WITH_AS(RunPlan(spec), doctest::Contains("expertz"), ConfigError);
}

TEST_CASE("plan: the winner's layout at toy size on a small mesh equals the unpartitioned step") {
  PlanCandidate c;
  c.data = 4;
  c.expert = 16;
  c.model = 2;
  CheckSmallMesh(c, "2x2x2");
}

}  // namespace
}  // namespace podsim::experiments
