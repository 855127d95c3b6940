// The training step of the MoE layer pair: its structure and scopes, the loss decreasing over a
// few real steps, the update of a weight against the reference Adafactor on the module's own
// gradient, and the partitioned step equal to the unpartitioned one on 2, 4 and 8 partitions.

#include "models/training_step.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "models/moe_loss.h"
#include "ir/opcode.h"
#include "partitioner/equivalence.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::models {
namespace {

using ir::DType;
using ir::Literal;
using ir::Opcode;

// The toy layer pair on `devices` partitions: G = E = max(4, devices), S = 8, M = 16, H = 32.
MoeLayerConfig Toy(int64_t devices) {
  MoeLayerConfig c = ToyMoeConfig();
  c.num_groups = c.num_experts = std::max<int64_t>(4, devices);
  c.num_devices = devices;
  return c;
}

MoeLossConfig ToyLoss() {
  MoeLossConfig l;
  l.vocab_size = 16;
  l.aux_loss_coefficient = 0.1;
  return l;
}

// Arguments of a training step: random model inputs (tokens and targets in [0, 8)), weights
// scaled to keep activations of order 1, non-negative optimizer state, and t = `t` (step t-1).
std::vector<Literal> StepArguments(const TrainingStep& s, uint64_t seed, double t) {
  std::vector<Literal> args = ir::RandomArguments(*s.module, seed);
  const auto params = s.module->entry()->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    const bool state = static_cast<int64_t>(k) >= s.num_model_parameters;
    for (double& v : args[k].values) {
      if (params[k]->name == "step") {
        v = t - 1;
      } else if (state) {
        v = std::fabs(v) * 0.01;
      } else if (params[k]->shape.dtype == DType::kF32) {
        v = static_cast<float>(v * 0.5);
      }
    }
  }
  return args;
}

TEST_CASE("training step: parameters, root and scopes") {
  auto loss = BuildMoeLayerPairLoss(Toy(4), ToyLoss());
  const std::vector<std::string> trainable = FloatParameters(*loss);
  // embedding, 4 attention weights x 2 blocks, ffn wi / wo, wg, wi, wo.
  CHECK(trainable.size() == 14);
  CHECK(trainable.front() == "embedding");
  TrainingStep s = BuildTrainingStep(*loss, trainable, OptimizerConfig{});
  const int64_t n = static_cast<int64_t>(trainable.size());
  // Every weight here has rank >= 2: two Adafactor statistics each.
  CHECK(static_cast<int64_t>(s.state.size()) == 2 * n);
  const auto params = s.module->entry()->parameters();
  CHECK(static_cast<int64_t>(params.size()) == s.num_model_parameters + 2 * n + 1);
  CHECK(s.num_model_parameters == 2 + n);  // tokens, targets, weights
  CHECK(params.back()->name == "step");
  const ir::Instruction* root = s.module->entry()->root();
  REQUIRE(root->opcode == Opcode::kTuple);
  CHECK(static_cast<int64_t>(root->operands.size()) == 1 + 2 * n + 2 * n);
  CHECK(root->operands[s.UpdatedParameterIndex(0)]->shape == params[2]->shape);
  std::set<std::string> prefixes;
  for (const auto& i : s.module->entry()->instructions()) {
    prefixes.insert(i->scope.substr(0, i->scope.find('/')));
  }
  CHECK(prefixes.count("backward"));
  CHECK(prefixes.count("optimizer"));
  CHECK(prefixes.count("moe_ffn"));  // forward scopes unchanged
  // The expert weights' updates keep their split over experts.
  const ir::Instruction* wi = root->operands[s.UpdatedParameterIndex(12)];
  CHECK(trainable[12] == "wi");
  REQUIRE(wi->sharding.has_value());
  CHECK(wi->sharding->tile_dims == std::vector<int64_t>{4, 1, 1});
  // Every updated weight and state tensor is donated: written over its parameter.
  REQUIRE(s.module->output_aliases().size() == static_cast<size_t>(n + 2 * n));
  CHECK(s.module->output_aliases()[0].output == s.UpdatedParameterIndex(0));
  CHECK(s.module->output_aliases()[0].parameter == params[2]->parameter_number);
  CHECK(s.module->output_aliases()[n].output == s.UpdatedStateIndex(0));
  CHECK(s.module->output_aliases()[n].parameter == s.num_model_parameters);
  // Without the gradients the updates follow the loss directly.
  TrainingStepOptions lean;
  lean.return_gradients = false;
  TrainingStep l = BuildTrainingStep(*loss, trainable, OptimizerConfig{}, lean);
  CHECK(l.UpdatedParameterIndex(0) == 1);
  CHECK(l.module->entry()->root()->operands.size() == static_cast<size_t>(1 + n + 2 * n));
  CHECK(l.module->output_aliases().front().output == 1);
  // Round trip through the text format.
  auto reparsed = ir::ParseModule(ir::PrintModule(*s.module));
  CHECK(ir::PrintModule(*reparsed) == ir::PrintModule(*s.module));
}

TEST_CASE("training step: the loss decreases over real steps; wg's update is Adafactor's") {
  MoeLayerConfig c = Toy(4);
  c.annotate = false;
  auto loss = BuildMoeLayerPairLoss(c, ToyLoss());
  OptimizerConfig opt;
  opt.warmup_steps = 1;     // rho_t = lr / sqrt(t) from the first step
  opt.learning_rate = 0.05;
  TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), opt);
  std::vector<Literal> args = StepArguments(s, 5, 1);
  const int64_t n = static_cast<int64_t>(s.trainable.size());
  std::vector<double> losses;
  for (int t = 1; t <= 4; ++t) {
    args.back() = Literal::Scalar(DType::kS32, t - 1);
    const Literal out = ir::Interpret(*s.module, args);
    losses.push_back(out.elements[0].values[0]);
    if (t == 1) {
      // wg [M,E] (trainable 11): its new value from its gradient by the reference formulas
      // (rho = 0.05, beta2 = min(0.99, 1 - 1) = 0, so the statistics are the fresh means).
      CHECK(s.trainable[11] == "wg");
      const int64_t p = 2 + 11;
      const std::vector<double>& x = args[p].values;
      const std::vector<double>& g = out.elements[s.GradientIndex(11)].values;
      const int64_t rows = args[p].shape.dims[0], cols = args[p].shape.dims[1];
      std::vector<double> row(rows, 0), col(cols, 0), u(x.size());
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const double g2 = g[i * cols + j] * g[i * cols + j] + 1e-30;
          row[i] += g2 / cols;
          col[j] += g2 / rows;
        }
      }
      double row_mean = 0, su = 0, sx = 0;
      for (double r : row) row_mean += r / rows;
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          u[i * cols + j] = g[i * cols + j] / std::sqrt(row[i] * col[j] / row_mean);
          su += u[i * cols + j] * u[i * cols + j];
          sx += x[i * cols + j] * x[i * cols + j];
        }
      }
      const double clip = std::max(1.0, std::sqrt(su / u.size()));
      const double alpha = 0.05 * std::max(1e-3, std::sqrt(sx / x.size()));
      const std::vector<double>& got = out.elements[s.UpdatedParameterIndex(11)].values;
      double worst = 0, scale = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double want = x[i] - alpha * u[i] / clip;
        worst = std::max(worst, std::fabs(got[i] - want));
        scale = std::max(scale, std::fabs(want - x[i]));
      }
      CHECK(scale > 1e-3);
      CHECK(worst < 1e-5 * (1 + scale));  // f32 rounding of ~40 ops (optimizer_test.cc)
    }
    // Feed the updated weights and state back.
    for (int64_t k = 0; k < n; ++k) args[2 + k] = out.elements[s.UpdatedParameterIndex(k)];
    for (size_t k = 0; k < s.state.size(); ++k) {
      args[s.num_model_parameters + k] = out.elements[s.UpdatedStateIndex(k)];
    }
  }
  for (size_t t = 1; t < losses.size(); ++t) CHECK(losses[t] < losses[t - 1]);
  CHECK(losses.back() < losses.front() - 1e-3);
}

TEST_CASE("training step: partitioned on 2, 4 and 8 partitions equals the unpartitioned step") {
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    auto loss = BuildMoeLayerPairLoss(Toy(d), ToyLoss());
    TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, StepOptions(d));
    const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, d);
    const partitioner::EquivalenceReport report =
        partitioner::CompareSpmd(*s.module, spmd, StepArguments(s, 9, 3));
    CAPTURE(report.ToString());
    CHECK(report.ok());
    CHECK(report.outputs.size() == 1 + 4 * s.trainable.size());
  }
}

TEST_CASE("training step: with LayerNorm and dropout, partitioned on 4 equals unpartitioned") {
  MoeLayerConfig c = Toy(4);
  c.layer_norm = true;
  c.dropout = 0.25;
  auto loss = BuildMoeLayerPairLoss(c, ToyLoss());
  TrainingStep s =
      BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, StepOptions(4));
  // Four LayerNorms' scales and biases join the 14 weights of the plain pair.
  CHECK(s.trainable.size() == 14 + 8);
  const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, 4);
  const partitioner::EquivalenceReport report =
      partitioner::CompareSpmd(*s.module, spmd, StepArguments(s, 9, 3));
  CAPTURE(report.ToString());
  CHECK(report.ok());
}

// TrainingStepCollectives of the SPMD program by opcode and scope ("all-to-all
// backward/dispatch_combine").
std::map<std::string, int> TrainingStepCollectives(const ir::Module& m) {
  std::map<std::string, int> n;
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (ir::IsCollective(i->opcode)) ++n[std::string(ir::OpcodeName(i->opcode)) + " " + i->scope];
    }
  }
  return n;
}

TEST_CASE("training step: the SPMD program has the collectives of a data + expert parallel step") {
  auto loss = BuildMoeLayerPairLoss(Toy(4), ToyLoss());
  TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, StepOptions(4));
  const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, 4);
  const std::map<std::string, int> got = TrainingStepCollectives(*spmd.module);
  // Forward: the MoE layer's two AllToAlls (dispatch, combine); the two scalar means over the
  // split groups (the cross-entropy and the auxiliary loss, which the gating computes from its
  // masks: "gate_cumsum") are AllReduces.
  // Backward: the two AllToAlls again, mirrored; one AllReduce per replicated weight's gradient
  // (its partial sums over the local groups): 8 attention projections, 2 FFN weights, wg, and
  // the embedding twice (its lookup and the output projection are two contractions over the
  // tokens). None for the expert weights wi / wo (split over experts like their gradients).
  // Optimizer: Adafactor's two RMS (of the parameter and of the update) of the expert-split wi
  // and wo are sums over experts: 2 scalar AllReduces each; replicated weights need none.
  const std::map<std::string, int> want = {
      {"all-to-all dispatch_combine", 2},
      {"all-to-all backward/dispatch_combine", 2},
      {"all-reduce gate_cumsum", 1},
      {"all-reduce softmax", 1},
      {"all-reduce backward/projections", 8},
      {"all-reduce backward/transformer_ffn", 2},
      {"all-reduce backward/gate_einsums", 1},
      {"all-reduce backward/embedding", 1},
      {"all-reduce backward/softmax", 1},
      {"all-reduce optimizer/wi", 2},
      {"all-reduce optimizer/wo", 2}};
  CHECK(got == want);
}

// The step of `loss` accumulated over `k` micro-batches.
TrainingStep MicroBatchedStep(const ir::Module& loss, int64_t k, int64_t partitions) {
  TrainingStepOptions o = StepOptions(partitions);
  o.micro_batches = k;
  return BuildTrainingStep(loss, FloatParameters(loss), OptimizerConfig{}, o);
}

TEST_CASE(
    "training step: k micro-batches give the mean of the micro-batches' losses and gradients") {
  // Reference: the one-micro-batch step (its gradients returned) run on each micro-batch's inputs
  // alone, then averaged by hand. The gating's random second-expert draws depend only on the
  // position in the micro-batch, so both runs see the same ones.
  const int64_t k = 3;
  auto loss = BuildMoeLayerPairLoss(Toy(1), ToyLoss());
  TrainingStep one = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{});
  TrainingStep micro = MicroBatchedStep(*loss, k, 0);
  const auto op = one.module->entry()->parameters();
  const auto mp = micro.module->entry()->parameters();
  REQUIRE(op.size() == mp.size());
  std::vector<size_t> inputs;  // tokens, targets: stacked [k, G, S]
  for (size_t j = 0; j < op.size(); ++j) {
    CAPTURE(op[j]->name);
    if (op[j]->name == "tokens" || op[j]->name == "targets") {
      std::vector<int64_t> stacked = op[j]->shape.dims;
      stacked.insert(stacked.begin(), k);
      CHECK(mp[j]->shape.dims == stacked);
      inputs.push_back(j);
    } else {
      CHECK(mp[j]->shape == op[j]->shape);
    }
  }
  REQUIRE(inputs.size() == 2);
  const std::vector<Literal> args = StepArguments(micro, 5, 2);
  const Literal got = ir::Interpret(*micro.module, args);
  const size_t n = 1 + one.trainable.size();  // the loss, then the gradients
  std::vector<std::vector<double>> mean(n);
  for (int64_t i = 0; i < k; ++i) {
    std::vector<Literal> row = args;
    for (size_t j : inputs) {
      const int64_t size = op[j]->shape.NumElements();
      row[j] = Literal(op[j]->shape, std::vector<double>(args[j].values.begin() + i * size,
                                                         args[j].values.begin() + (i + 1) * size));
    }
    const Literal r = ir::Interpret(*one.module, row);
    for (size_t e = 0; e < n; ++e) {
      mean[e].resize(r.elements[e].values.size());
      for (size_t v = 0; v < mean[e].size(); ++v) mean[e][v] += r.elements[e].values[v] / k;
    }
  }
  for (size_t e = 0; e < n; ++e) {
    CAPTURE(e);
    const std::vector<double>& g = got.elements[e].values;
    REQUIRE(g.size() == mean[e].size());
    double scale = 1e-30, diff = 0;
    for (size_t v = 0; v < g.size(); ++v) {
      scale = std::max(scale, std::fabs(mean[e][v]));
      diff = std::max(diff, std::fabs(g[v] - mean[e][v]));
    }
    CHECK(diff <= 1e-5 * scale);  // f32 sums taken in another order
  }
  // The forward and backward pass run inside one loop of k iterations; the entry keeps the loop,
  // the means and the optimizer, no matmul.
  int loops = 0;
  for (const auto& i : micro.module->entry()->instructions()) {
    if (i->opcode == Opcode::kLoop) {
      ++loops;
      CHECK(i->trip_count == k);
    }
    CHECK(i->opcode != Opcode::kDot);
  }
  CHECK(loops == 1);
}

TEST_CASE(
    "training step: micro-batched and partitioned on 4 equals unpartitioned, with the "
    "gradient AllReduces once per micro-batch") {
  auto loss = BuildMoeLayerPairLoss(Toy(4), ToyLoss());
  TrainingStep s = MicroBatchedStep(*loss, 3, 4);
  const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, 4);
  const partitioner::EquivalenceReport report =
      partitioner::CompareSpmd(*s.module, spmd, StepArguments(s, 9, 3));
  CAPTURE(report.ToString());
  CHECK(report.ok());
  // Inside the loop body: the same collectives as one whole-batch step's forward and backward
  // (the test above this one lists them); the optimizer's stay in the entry, once.
  std::map<std::string, int> body, entry;
  for (const auto& c : spmd.module->computations()) {
    for (const auto& i : c->instructions()) {
      if (!ir::IsCollective(i->opcode)) continue;
      const std::string key = std::string(ir::OpcodeName(i->opcode)) + " " + i->scope;
      ++(c.get() == spmd.module->entry() ? entry : body)[key];
    }
  }
  CHECK(body["all-to-all dispatch_combine"] == 2);
  CHECK(body["all-reduce backward/projections"] == 8);
  CHECK(entry ==
        std::map<std::string, int>{{"all-reduce optimizer/wi", 2}, {"all-reduce optimizer/wo", 2}});
}

TEST_CASE("training step: bad input") {
  auto loss = BuildMoeLayerPairLoss(Toy(4), ToyLoss());
  CHECK_THROWS_WITH_AS(BuildTrainingStep(*loss, {"tokens"}, OptimizerConfig{}),
                       doctest::Contains("only f32 and bf16 arrays have gradients"), Error);
  CHECK_THROWS_WITH_AS(BuildTrainingStep(*loss, {"nope"}, OptimizerConfig{}),
                       doctest::Contains("wrt 'nope' names no parameter"), Error);
  TrainingStepOptions zero;
  zero.micro_batches = 0;
  CHECK_THROWS_WITH_AS(BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, zero),
                       doctest::Contains("micro_batches must be >= 1"), Error);
  MoeLossConfig bad = ToyLoss();
  bad.vocab_size = 0;
  CHECK_THROWS_WITH_AS(BuildMoeLayerPairLoss(Toy(4), bad), doctest::Contains("loss.vocab_size"),
                       Error);
}

}  // namespace
}  // namespace podsim::models
