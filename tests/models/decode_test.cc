// Inference programs (models/decode.h): prefill and the flat-beam decode step partition to SPMD
// programs that compute what the unpartitioned ones do; the beam update, the cache write and
// the cache sizes checked by hand.

#include "models/decode.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/interpreter.h"
#include "partitioner/equivalence.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::models {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Literal;

// The toy model (2 layers, one decoder layer, MoE; G = E = D = 4, M = 16, 2 heads of 8, target
// vocabulary 12, f32) decoding 6 sentences (2 per group after padding to 8) with 2 beams,
// 4 source tokens and 3 target positions.
DecodeConfig Toy() {
  DecodeConfig c;
  c.model = ToyModelConfig(4);
  c.batch = 6;
  c.beam = 2;
  c.source_len = 4;
  c.max_len = 3;
  return c;
}

const Instruction* Param(const ir::Module& m, const std::string& name) {
  for (const Instruction* p : m.entry()->parameters()) {
    if (p->name == name) return p;
  }
  FAIL("no parameter " << name);
  return nullptr;
}

const Instruction* FindInAnyComputation(const ir::Module& m, const std::string& name) {
  for (const auto& comp : m.computations()) {
    for (const auto& i : comp->instructions()) {
      if (i->name == name) return i.get();
    }
  }
  FAIL("no instruction " << name);
  return nullptr;
}

TEST_CASE("prefill and the decode step partition into programs that compute the same numbers") {
  const DecodeConfig c = Toy();
  partitioner::PartitionOptions options;
  options.num_partitions = 4;
  for (const auto& module : {BuildPrefill(c), BuildDecodeStep(c)}) {
    CAPTURE(module->name());
    partitioner::PropagateShardings(*module, 4);
    const partitioner::EquivalenceReport report =
        partitioner::CheckEquivalence(*module, options, /*seed=*/3);
    INFO(report.ToString());
    CHECK(report.ok());
  }
  // The step's collectives: the MoE layer's two AllToAlls (dispatch, combine), inside the layer
  // loop; the beam update and the caches stay within each group.
  const auto global = BuildDecodeStep(c);
  const auto result = partitioner::PropagateAndPartition(*global, 4);
  INFO(partitioner::ExplainProvenance(result));
  const auto& spmd = result.module;
  std::map<ir::Opcode, int64_t> collectives;
  for (const auto& comp : spmd->computations()) {
    for (const auto& i : comp->instructions()) {
      if (ir::IsCollective(i->opcode)) ++collectives[i->opcode];
    }
  }
  CHECK(collectives[ir::Opcode::kAllToAll] == 2);
  CHECK(collectives.size() == 1);
}

TEST_CASE("the caches' shapes and bytes per partition, by hand") {
  const DecodeConfig c = Toy();
  CHECK(c.SentencesPerGroup() == 2);  // ceil(6 / 4)
  CHECK(c.HypothesesPerGroup() == 4);
  // Per position: keys and values, N x K = 16 f32 each, one decoder layer: 2 x 16 x 4 = 128 B.
  // Self: 2 sentences x W x T = 2 x 2 x 3 = 12 positions; cross: 2 x Ls = 8 positions.
  const KvCacheBytes kv = KvCacheBytesPerPartition(c);
  CHECK(kv.self == 12 * 128);
  CHECK(kv.cross == 8 * 128);
  const auto step = BuildDecodeStep(c);
  // [R, G, b, W x T, N, K]: R = 1 iteration, G = 4 groups.
  CHECK(Param(*step, "decoder.l0.self_key")->shape.dims == std::vector<int64_t>{1, 4, 2, 6, 2, 8});
  CHECK(Param(*step, "decoder.l0.cross_value")->shape.dims ==
        std::vector<int64_t>{1, 4, 2, 4, 2, 8});
  // Each partition's share of a cache stack is its group: the global bytes over D.
  CHECK(Param(*step, "decoder.l0.self_key")->shape.ByteSize() / 4 == kv.self / 2);
  const auto prefill = BuildPrefill(c);
  CHECK(prefill->entry()->root()->shape.tuple_shapes.size() == 2);  // cross key and value
  CHECK(prefill->entry()->root()->shape.tuple_shapes[0].dims ==
        std::vector<int64_t>{1, 4, 2, 4, 2, 8});
  // Self caches are donated: written in place.
  CHECK(step->output_aliases().size() == 2);
}

TEST_CASE("an MoE layer at decode batch sizes: capacity from the step's few tokens") {
  // S = b x W = 4 tokens per group, E = 4: C = ceil(2 x 4 / 4) = 2 slots per expert and group,
  // so the dispatched inputs are [E, G, C, M] = [4, 4, 2, 16] whatever the batch's real size.
  const auto step = BuildDecodeStep(Toy());
  CHECK(FindInAnyComputation(*step, "dispatched_expert_inputs")->shape.dims ==
        std::vector<int64_t>{4, 4, 2, 16});
  // One sentence on 128 experts' partitions: padded to one per group, C = ceil(2 x W / E) = 1.
  DecodeConfig big = Toy();
  big.model.layer.num_devices = 8;
  big.model.layer.num_experts = 8;
  big.batch = 1;
  CHECK(big.SentencesPerGroup() == 1);
  CHECK(DefaultCapacity(big.HypothesesPerGroup(), 8) == 1);
}

TEST_CASE("the beam update keeps the W best candidates of each sentence, with parent and token") {
  // With a zero target embedding every logit is 0, so every log-probability is -log V (V = 12):
  // a candidate's score is its hypothesis's score - log 12. Scores (0, -1) per sentence: the 12
  // candidates of hypothesis 0 tie for best, and top-k takes the lowest indices first, so the
  // new beams are hypothesis 0's tokens 0 and 1, both scored -log 12.
  const DecodeConfig c = Toy();
  const auto step = BuildDecodeStep(c);
  std::vector<Literal> args = ir::RandomArguments(*step, 5);
  const int64_t table = Param(*step, "target_embedding")->parameter_number;
  args[static_cast<size_t>(table)] = Literal::Zeros(args[static_cast<size_t>(table)].shape);
  Literal& scores = args[static_cast<size_t>(Param(*step, "scores")->parameter_number)];
  for (size_t i = 0; i < scores.values.size(); ++i) scores.values[i] = i % 2 == 0 ? 0.0 : -1.0;
  const Literal out = ir::Interpret(*step, args);
  const float expected = 0.0f - static_cast<float>(std::log(12.0f));
  const Literal& new_scores = out.elements[0];
  const Literal& parents = out.elements[1];
  const Literal& tokens = out.elements[2];
  REQUIRE(new_scores.values.size() == 4 * 2 * 2);
  for (size_t i = 0; i < new_scores.values.size(); ++i) {
    CAPTURE(i);
    CHECK(new_scores.values[i] == doctest::Approx(expected).epsilon(1e-6));
    CHECK(parents.values[i] == 0);
    CHECK(tokens.values[i] == static_cast<double>(i % 2));
  }
}

TEST_CASE("the step writes its W keys and values at flat positions t x W .. t x W + W - 1") {
  // Position t = 1, W = 2: flat positions 2 and 3 of every sentence's cache change; the other
  // four of the six keep the cache's values.
  const DecodeConfig c = Toy();
  const auto step = BuildDecodeStep(c);
  std::vector<Literal> args = ir::RandomArguments(*step, 9);
  args[static_cast<size_t>(Param(*step, "position")->parameter_number)].values = {1};
  const int64_t key = Param(*step, "decoder.l0.self_key")->parameter_number;
  const Literal before = args[static_cast<size_t>(key)];
  const Literal out = ir::Interpret(*step, args);
  const Literal& after = out.elements[3];  // the first updated cache: l0.self_key
  REQUIRE(after.shape == before.shape);
  // [1, G, b, 6, N, K] row-major: the flat position is dim 3, N x K = 16 elements each.
  int64_t written = 0, kept = 0;
  for (size_t i = 0; i < before.values.size(); ++i) {
    const int64_t flat = static_cast<int64_t>(i / 16) % 6;
    if (flat == 2 || flat == 3) {
      written += after.values[i] != before.values[i];
    } else {
      kept += after.values[i] == before.values[i];
    }
  }
  // 4 groups x 2 sentences x 2 positions x 16 written, 4 x 2 x 4 x 16 kept.
  CHECK(written == 256);
  CHECK(kept == 512);
}

TEST_CASE("bad inference sizes are errors naming the field") {
  DecodeConfig c = Toy();
  c.beam = 0;
  CHECK_THROWS_WITH_AS(BuildDecodeStep(c), doctest::Contains("inference.beam"), Error);
  c = Toy();
  c.max_len = 0;
  CHECK_THROWS_WITH_AS(BuildPrefill(c), doctest::Contains("inference.max_len"), Error);
  // 2^30 tokens per group (1,024 sentences of 2^20 positions) on 4 partitions, 64 layers of
  // 1,024 heads of 1,024: 2^30 x 4 x (2 x 2^20 x 4 B x 64) = 2^61 bytes of caches.
  c = Toy();
  c.batch = 4096;
  c.beam = 1;
  c.max_len = 1 << 20;
  c.source_len = 1;
  c.model.layer.num_heads = 1024;
  c.model.layer.head_dim = 1024;
  c.model.num_layers = 64;
  CHECK_THROWS_WITH_AS(BuildDecodeStep(c), doctest::Contains("2^60 bytes"), Error);
  CHECK_THROWS_WITH_AS(DecodeConfig::FromJson(nlohmann::json{{"beams", 4}}, "inference", Toy()),
                       doctest::Contains("inference.beams"), ConfigError);
  CHECK_THROWS_WITH_AS(DecodeConfig::FromJson(nlohmann::json{{"batch", 0}}, "inference", Toy()),
                       doctest::Contains("inference.batch"), ConfigError);
}

}  // namespace
}  // namespace podsim::models
