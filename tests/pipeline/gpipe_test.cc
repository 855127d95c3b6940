// GPipe (pipeline/gpipe.h) and the dense baseline's pieces (models/dense_transformer.h): the
// schedule against hand-derived timelines, the stage balancing against a hand optimum, the
// T(96L) parameter count against the formula, the backward module's accumulation, and a whole
// pipeline run on a small pod against its own stage costs and its errors.

#include "pipeline/gpipe.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/interpreter.h"
#include "sim/program/sim_options.h"
#include "topologies/load.h"

namespace podsim::pipeline {
namespace {

Time Us(double us) { return Time::FromMicros(us); }

TEST_CASE("gpipe: equal stages and free transfers give the (K-1)/(M+K-1) bubble") {
  // K = 4 stages, M = 8 micro-batches, f = 1 us, b = 2 us: the last backward of stage 0 ends at
  // (M + K - 1)(f + b) = 11 x 3 = 33 us; each stage is busy M(f + b) = 24 us of it.
  std::vector<StageCost> stages(4);
  for (StageCost& s : stages) {
    s.forward = Us(1);
    s.backward = Us(2);
  }
  const GPipeSchedule g = ScheduleGPipe(stages, 8);
  CHECK(g.pipeline_time == Us(33));
  CHECK(g.step_time == Us(33));
  CHECK(g.bubble_fraction == doctest::Approx(3.0 / 11.0));
  // 32 forwards, 32 backwards, 3 x 8 sends each way, and one all-reduce and optimizer per stage.
  CHECK(g.events.size() == 32 + 32 + 24 + 24 + 4 + 4);
}

TEST_CASE("gpipe: transfers, all-reduce and optimizer on a two-stage pipeline, by hand") {
  // f = 1, b = 2, sends 0.5 each way, all-reduce 1, optimizer 0.5, M = 2:
  //   stage 0  F0 0-1, F1 1-2;                 B1 6-8 (grad of mb 1 arrives 5.5 + 0.5),
  //            B0 8-10 (arrives 7.5 + 0.5); all-reduce 10-11, optimizer 11-11.5
  //   stage 1  F0 1.5-2.5 (arrives 1 + 0.5), F1 2.5-3.5; B1 3.5-5.5, B0 5.5-7.5;
  //            all-reduce 7.5-8.5, optimizer 8.5-9
  std::vector<StageCost> stages(2);
  for (StageCost& s : stages) {
    s.forward = Us(1);
    s.backward = Us(2);
    s.send_forward = s.send_backward = Us(0.5);
    s.all_reduce = Us(1);
    s.optimizer = Us(0.5);
  }
  const GPipeSchedule g = ScheduleGPipe(stages, 2);
  CHECK(g.pipeline_time == Us(10));
  CHECK(g.step_time == Us(11.5));
  // Idle in the pipeline phase: 10 - 6 on each stage, over the 11.5 us step.
  CHECK(g.bubble_fraction == doctest::Approx(4.0 / 11.5));
  bool saw_b0 = false;
  for (const GPipeEvent& e : g.events) {
    if (e.stage == 0 && e.kind == GPipeEvent::kBackward && e.micro_batch == 0) {
      CHECK(e.start == Us(8));
      saw_b0 = true;
    }
    if (e.stage == 1 && e.kind == GPipeEvent::kForward && e.micro_batch == 0) {
      CHECK(e.start == Us(1.5));
    }
  }
  CHECK(saw_b0);
  CHECK_THROWS_AS(ScheduleGPipe(stages, 0), Error);
  CHECK_THROWS_AS(ScheduleGPipe({}, 2), Error);
}

TEST_CASE("gpipe: stage balancing finds the smallest largest stage") {
  // {1,1,1,1,4} in 2: the 4 alone, the rest together: largest 4.
  CHECK(BalanceStages({1, 1, 1, 1, 4}, 2) == std::vector<int64_t>{0, 4});
  // {3,1,1,1,3,1} in 3: no stage can hold a 3 and stay under 4, so 4 is the optimum; the
  // earliest split reaching it is [3,1][1,1][3,1].
  CHECK(BalanceStages({3, 1, 1, 1, 3, 1}, 3) == std::vector<int64_t>{0, 2, 4});
  // As many stages as pieces: one each.
  CHECK(BalanceStages({5, 0, 2}, 3) == std::vector<int64_t>{0, 1, 2});
  CHECK_THROWS_AS(BalanceStages({1, 2}, 3), Error);
  CHECK_THROWS_AS(BalanceStages({1, 2}, 0), Error);
}

TEST_CASE("dense transformer: T(96L) has 2.35B parameters") {
  // Per encoder layer: 2 LayerNorms (2 x 2M) + q, k, v, o (4 x M x N x K = 4 x 1024 x 1024)
  // + FFN (2 x M x H = 2 x 1024 x 8192) = 4096 + 4,194,304 + 16,777,216 = 20,975,616.
  // Per decoder layer: one more LayerNorm and attention block: 25,171,968.
  // Embeddings 64,000 x 1024 and 32,000 x 1024, the softmax weight 32,000 x 1024, and the two
  // final LayerNorms: 65,536,000 + 32,768,000 + 32,768,000 + 4,096.
  const models::DenseTransformerConfig c;
  const int64_t expected =
      48 * int64_t{20975616} + 48 * int64_t{25171968} + 65536000 + 32768000 + 32768000 + 4096;
  CHECK(models::DenseParameters(c) == expected);
  CHECK(models::PieceParameters(c, models::DensePiece::kEncoderLayer) == 20975616);
  CHECK(models::DensePieces(c).size() == 1 + 48 + 1 + 1 + 48 + 1);
}

models::DenseTransformerConfig Toy() {
  models::DenseTransformerConfig c;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_model = 16;
  c.d_ff = 32;
  c.num_heads = 2;
  c.head_dim = 8;
  c.seq_len = 4;
  c.source_vocab = 20;
  c.target_vocab = 12;
  c.dtype = ir::DType::kF32;
  return c;
}

TEST_CASE("dense transformer: the backward module adds its gradient to the accumulators") {
  // Run the decoder layer's backward twice on the same arguments, with the accumulators at 0
  // and at 1: every accumulator output must differ by exactly 1, and the input gradients not
  // at all (the accumulation is an add of the gradient, nothing else).
  const models::DenseTransformerConfig c = Toy();
  const models::PieceModules m =
      models::BuildDensePiece(c, models::DensePiece::kDecoderLayer, 8, {});
  const auto params = m.backward->entry()->parameters();
  std::vector<ir::Literal> args = ir::RandomArguments(*m.backward, 7);
  std::vector<ir::Literal> ones = args;
  int64_t accumulators = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->name.find(".accumulator") == std::string::npos) continue;
    ++accumulators;
    args[k] = ir::Literal::Zeros(params[k]->shape);
    ones[k] =
        ir::Literal(params[k]->shape, std::vector<double>(params[k]->shape.NumElements(), 1.0));
  }
  // 2 attention blocks of 6 weights and an FFN of 4.
  CHECK(accumulators == 16);
  const ir::Literal a = ir::Interpret(*m.backward, args);
  const ir::Literal b = ir::Interpret(*m.backward, ones);
  const int64_t outputs = static_cast<int64_t>(a.elements.size());
  CHECK(outputs == 2 + accumulators);  // d x, d encoder_output, then the accumulators
  for (int64_t k = 0; k < outputs; ++k) {
    const std::vector<double>& x = a.elements[k].values;
    const std::vector<double>& y = b.elements[k].values;
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(y[i] - x[i] == doctest::Approx(k < 2 ? 0.0 : 1.0).epsilon(1e-5));
    }
  }
}

TEST_CASE("gpipe: a pipeline on a small pod follows its stage costs, and bad shapes are errors") {
  const models::DenseTransformerConfig c = Toy();
  const auto topology = topo::LoadTopology(nlohmann::json("tpu-v3-8"), "topology");
  sim::SimOptions options;
  GPipeOptions g;
  g.stages = 4;
  g.micro_batches = 2;
  g.batch_tokens = 32;  // 8 cores / 4 stages = 2 replicas x 2 micro-batches x 8 tokens
  const GPipeRun run = RunGPipe(c, g, {}, *topology, options);
  CHECK(run.replicas == 2);
  CHECK(run.micro_batch_tokens == 8);
  REQUIRE(run.stages.size() == 4);
  int64_t pieces = 0, parameters = 0;
  for (const GPipeStage& s : run.stages) {
    CHECK(s.pieces >= 1);
    CHECK(s.first_piece == pieces);
    pieces += s.pieces;
    parameters += s.parameters;
    CHECK(s.cost.forward > Time());
    CHECK(s.cost.backward > s.cost.forward);  // recomputation and the VJP
  }
  CHECK(pieces == 2 + 2 + 1 + 2 + 1);
  CHECK(parameters == models::DenseParameters(c));
  CHECK(run.stages[0].cost.send_backward == Time());
  CHECK(run.stages[3].cost.send_forward == Time());
  CHECK(run.stages[1].cost.all_reduce > Time());
  // The schedule is GPipe's over the stage costs.
  std::vector<StageCost> costs;
  for (const GPipeStage& s : run.stages) costs.push_back(s.cost);
  CHECK(ScheduleGPipe(costs, 2).step_time == run.schedule.step_time);
  // The step is at least the slowest stage's compute plus its AllReduce and optimizer.
  for (const GPipeStage& s : run.stages) {
    CHECK(run.schedule.step_time >=
          (s.cost.forward + s.cost.backward) * 2 + s.cost.all_reduce + s.cost.optimizer);
  }
  // The trace: one device per stage, bubbles on every stage but the first.
  const sim::TraceData t = GPipeTrace(run, g);
  CHECK(t.devices.size() == 4);
  bool bubble = false;
  for (const auto& s : t.spans) bubble = bubble || t.names[s.name] == "bubble";
  CHECK(bubble);

  GPipeOptions bad = g;
  bad.stages = 3;  // does not divide 8 cores
  CHECK_THROWS_WITH_AS(RunGPipe(c, bad, {}, *topology, options), doctest::Contains("stages"),
                       Error);
  bad = g;
  bad.micro_batches = 4;
  bad.batch_tokens = 48;  // 48 / 2 replicas / 4 = 6 tokens: not whole 4-token sequences
  CHECK_THROWS_WITH_AS(RunGPipe(c, bad, {}, *topology, options), doctest::Contains("whole number"),
                       Error);
  bad = g;
  bad.micro_batches = int64_t{1} << 62;  // more micro-batches than tokens: an error, no overflow
  CHECK_THROWS_WITH_AS(RunGPipe(c, bad, {}, *topology, options), doctest::Contains("batch_tokens"),
                       Error);
}

}  // namespace
}  // namespace podsim::pipeline
