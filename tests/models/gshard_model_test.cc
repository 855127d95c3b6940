// The whole encoder-decoder model: its parameters and layer loops, the expert parameter count
// against the paper's formula, gradients of the whole loss against finite differences, and the
// partitioned training step equal to the unpartitioned one on 2, 4 and 8 partitions with the
// collectives of data + expert parallelism.

#include "models/gshard_model.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/autodiff.h"
#include "ir/interpreter.h"
#include "ir/opcode.h"
#include "ir/text.h"
#include "models/layer_mesh.h"
#include "models/training_step.h"
#include "partitioner/equivalence.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::models {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Literal;
using ir::Opcode;

const Instruction* GshardModelParam(const ir::Module& m, const std::string& name) {
  for (const Instruction* p : m.entry()->parameters()) {
    if (p->name == name) return p;
  }
  FAIL("no parameter " << name);
  return nullptr;
}

std::vector<const Instruction*> Loops(const ir::Module& m) {
  std::vector<const Instruction*> loops;
  for (const auto& i : m.entry()->instructions()) {
    if (i->opcode == Opcode::kLoop) loops.push_back(i.get());
  }
  return loops;
}

TEST_CASE("whole model: parameters, layer loops over stacked weights, size independent of L") {
  std::set<std::string> stacked;
  auto toy = BuildGShardModelLoss(ToyModelConfig(4), &stacked);
  // Per side, per layer (moe_every = 1: one MoE layer): LayerNorm scale + bias before each
  // sublayer, 4 attention weights per attention; the MoE FFN's wg, wi, wo.
  //   encoder 2 + 4 + 2 + 3 = 11, decoder 2 + 4 + 2 + 4 + 2 + 3 = 17;
  // plus the two embeddings and the two final LayerNorms (2 each): 34 weights.
  CHECK(FloatParameters(*toy).size() == 34);
  CHECK(stacked.size() == 28);
  CHECK(stacked.count("encoder.l0.wi"));
  CHECK_FALSE(stacked.count("encoder.ln_final_scale"));
  // G = E = 4, S = 8, M = 16, H = 32; one layer per side: stacks of 1.
  CHECK(GshardModelParam(*toy, "encoder.l0.wi")->shape.dims == std::vector<int64_t>{1, 4, 16, 32});
  CHECK(GshardModelParam(*toy, "decoder.l0.cross_wo")->shape.dims ==
        std::vector<int64_t>{1, 2, 8, 16});
  CHECK(GshardModelParam(*toy, "target_embedding")->shape.dims == std::vector<int64_t>{12, 16});
  // The expert stack is split over experts (dim 1), the others replicated.
  REQUIRE(GshardModelParam(*toy, "encoder.l0.wi")->sharding.has_value());
  CHECK(GshardModelParam(*toy, "encoder.l0.wi")->sharding->tile_dims ==
        std::vector<int64_t>{1, 4, 1, 1});
  CHECK(GshardModelParam(*toy, "source_tokens")->argument_range == std::make_pair(0.0, 16.0));

  // L = 4 and L = 36 with an MoE layer every other layer: 1 and 9 iterations per side, the same
  // program.
  GShardModelConfig c = ToyModelConfig(4);
  c.moe_every = 2;
  c.num_layers = 4;
  auto shallow = BuildGShardModelLoss(c);
  c.num_layers = 36;
  auto deep = BuildGShardModelLoss(c);
  CHECK(shallow->InstructionCount() == deep->InstructionCount());
  const auto loops = Loops(*deep);
  REQUIRE(loops.size() == 2);
  CHECK(loops[0]->trip_count == 9);
  CHECK(loops[1]->trip_count == 9);
  CHECK(GshardModelParam(*deep, "decoder.l0.ffn_wi")->shape.dims ==
        std::vector<int64_t>{9, 16, 32});
  CHECK(GshardModelParam(*deep, "decoder.l1.wo")->shape.dims == std::vector<int64_t>{9, 4, 32, 16});
  // Round trip through the text format.
  CHECK(ir::PrintModule(*ir::ParseModule(ir::PrintModule(*deep))) == ir::PrintModule(*deep));
}

TEST_CASE("whole model: expert parameters of MoE(E, L) are E * (L/2) * 2 * d_model * d_ff") {
  // The paper's Table 1 counts (reference file note): L/2 MoE layers, each E experts of two
  // M x H matrices. 128E,12L: 128 * 6 * 2 * 1024 * 8192 = 12,884,901,888 (the paper prints 12.5B,
  // the same count divided by 1.0308).
  for (auto [e, l] : {std::pair<int64_t, int64_t>{128, 12}, {2048, 36}}) {
    CAPTURE(e);
    auto m = BuildGShardModelLoss(PaperModelConfig(e, l));
    double experts = 0;
    for (const Instruction* p : m->entry()->parameters()) {
      const std::string& n = p->name;
      if (n.ends_with(".wi") || n.ends_with(".wo")) experts += static_cast<double>(p->shape.NumElements());
    }
    CHECK(experts == static_cast<double>(e) * static_cast<double>(l / 2) * 2 * 1024 * 8192);
  }
}

// Gradients of the whole toy loss (f32, dropout on) against central differences along one
// random direction per weight: (L(w + h v) - L(w - h v)) / 2h against <dL/dw, v>, h = 1e-3.
// Tolerance: the interpreter rounds every f32 result; L ~ 2.5 has an ulp of 2.4e-7 and the
// reductions feeding it add a few, so |error(L)| < ~1e-6, which over 2h = 2e-3 is 5e-4;
// truncation adds h^2/6 |L'''| ~ 2e-7 per unit of third derivative. 5e-3 (1 + |<g, v>|) leaves
// margin for both, while a wrong rule, a missing path (LayerNorm, dropout, cross-attention, the
// loop's weight accumulation) or a wrong factor moves the derivative by O(|<g, v>|).
// Gating decisions (top-2 choice, capacity, the random second-expert policy) are piecewise
// constant: where one lies within h of its threshold the loss jumps and the difference is off
// by O(jump / h) (argument seed 5 has one within 1e-3). Seed 4 has none; its worst error is
// 3e-4.
TEST_CASE("whole model: gradients of the loss match finite differences") {
  auto loss = BuildGShardModelLoss(ToyModelConfig(2));
  const std::vector<std::string> weights = FloatParameters(*loss);
  auto grad = ir::Differentiate(*loss, weights);
  std::vector<Literal> args = ir::RandomArguments(*loss, 4);
  const auto params = loss->entry()->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->shape.dtype != DType::kF32) continue;
    for (double& v : args[k].values) v *= 0.5;
  }
  const Literal g = ir::Interpret(*grad, args);
  REQUIRE(g.elements.size() == weights.size() + 1);
  const double h = 1e-3;
  int checked = 0;
  for (size_t w = 0; w < weights.size(); ++w) {
    const size_t p = static_cast<size_t>(GshardModelParam(*loss, weights[w])->parameter_number);
    const std::vector<Literal> direction = ir::RandomArguments(*loss, 100 + w);
    std::vector<Literal> plus = args, minus = args;
    double dot = 0;
    for (size_t j = 0; j < args[p].values.size(); ++j) {
      const double v = direction[p].values[j];
      plus[p].values[j] = static_cast<float>(args[p].values[j] + h * v);
      minus[p].values[j] = static_cast<float>(args[p].values[j] - h * v);
      dot += g.elements[w + 1].values[j] * v;
    }
    const double fd = (ir::Interpret(*loss, plus).values[0] - ir::Interpret(*loss, minus).values[0]) / (2 * h);
    INFO(weights[w], ": <gradient, v> = ", dot, ", difference = ", fd);
    CHECK(std::abs(fd - dot) < 5e-3 * (1 + std::abs(dot)));
    if (std::abs(dot) > 1e-3) ++checked;
  }
  // The check is not vacuous: most weights move the loss.
  CHECK(checked >= 30);
}

// Arguments of a training step: random inputs, weights scaled by 1/2, non-negative optimizer
// state, step 2 (t = 3).
std::vector<Literal> StepArguments(const TrainingStep& s, uint64_t seed) {
  std::vector<Literal> args = ir::RandomArguments(*s.module, seed);
  const auto params = s.module->entry()->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    for (double& v : args[k].values) {
      if (params[k]->name == "step") {
        v = 2;
      } else if (static_cast<int64_t>(k) >= s.num_model_parameters) {
        v = std::fabs(v) * 0.01;
      } else if (params[k]->shape.dtype == DType::kF32) {
        v = static_cast<float>(v * 0.5);
      }
    }
  }
  return args;
}

TEST_CASE("whole model: the partitioned training step equals the unpartitioned one") {
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    std::set<std::string> stacked;
    auto loss = BuildGShardModelLoss(ToyModelConfig(d), &stacked);
    TrainingStep s =
        BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{},
                          StepOptions(d, stacked));
    const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, d);
    const partitioner::EquivalenceReport report =
        partitioner::CompareSpmd(*s.module, spmd, StepArguments(s, 9));
    CAPTURE(report.ToString());
    CHECK(report.ok());
    // loss, 34 gradients, 34 updated weights and their state: Adafactor keeps two statistics
    // for each of the 20 weights whose layer slice is a matrix or more (2 embeddings; per side
    // the attention projections, 4 in the encoder and 8 in the decoder, and wg, wi, wo) and one
    // for the 14 vectors (LayerNorm scales and biases: 4 + 6 stacked, 4 final).
    CHECK(report.outputs.size() == 1 + 34 + 34 + 2 * 20 + 14);
  }
}

// GshardModelCollectives of the SPMD program, by opcode, where (entry, or a loop body: "save" the
// forward, "grad" the backward) and scope.
std::map<std::string, int> GshardModelCollectives(const ir::Module& m) {
  std::map<std::string, int> n;
  for (const auto& c : m.computations()) {
    const std::string& name = c->name();
    const std::string where = name.ends_with(".grad") ? "grad" : name.ends_with(".save") ? "save" : name;
    for (const auto& i : c->instructions()) {
      if (ir::IsCollective(i->opcode)) {
        ++n[std::string(ir::OpcodeName(i->opcode)) + " " + where + " " + i->scope];
      }
    }
  }
  return n;
}

TEST_CASE("whole model: the SPMD training step has the collectives of data + expert parallelism") {
  std::set<std::string> stacked;
  auto loss = BuildGShardModelLoss(ToyModelConfig(4), &stacked);
  TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{},
                                     StepOptions(4, stacked));
  const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, 4);
  // Forward (the layer loops, "save"): per side the MoE layer's dispatch and combine AllToAlls
  // and the scalar AllReduce of its auxiliary loss (a mean over the split groups, computed with
  // the gating's masks: "gate_cumsum"); the mean cross-entropy's AllReduce in the entry.
  // Backward loops ("grad"): each iteration recomputes its forward (2 AllToAlls again, scoped
  // "recompute/"; the auxiliary loss's value is not needed) and mirrors it (2 more); one AllReduce per replicated
  // weight's gradient: per attention sublayer its 4 projections and the LayerNorm's scale and
  // bias ("projections"), per MoE sublayer wg and the LayerNorm ("gate_einsums"). The encoder has
  // one attention sublayer, the decoder two (self and cross). None for the expert weights.
  // Entry backward: the two embeddings' lookups ("embedding"), the target embedding as the
  // softmax weights and the two final LayerNorms' scale and bias ("softmax").
  // Optimizer: the two RMS sums of each expert-split weight (wi, wo per side).
  const std::map<std::string, int> want = {
      {"all-to-all save dispatch_combine", 4},
      {"all-reduce save gate_cumsum", 2},
      {"all-reduce main softmax", 1},
      {"all-to-all grad recompute/dispatch_combine", 4},
      {"all-to-all grad backward/dispatch_combine", 4},
      {"all-reduce grad backward/projections", 6 + 12},
      {"all-reduce grad backward/gate_einsums", 3 + 3},
      {"all-reduce main backward/embedding", 2},
      {"all-reduce main backward/softmax", 1 + 4},
      {"all-reduce main optimizer/encoder.l0.wi", 2},
      {"all-reduce main optimizer/encoder.l0.wo", 2},
      {"all-reduce main optimizer/decoder.l0.wi", 2},
      {"all-reduce main optimizer/decoder.l0.wo", 2}};
  CHECK(GshardModelCollectives(*spmd.module) == want);
  // Every update keeps its parameter's sharding, so every donation carries over to the SPMD
  // program (34 weights, 54 state tensors).
  CHECK(s.module->output_aliases().size() == 34 + 54);
  CHECK(spmd.module->output_aliases() == s.module->output_aliases());
}

TEST_CASE("whole model: a stacked weight's gradient is accumulated one layer slice at a time") {
  // In the backward layer loops, the adjoint of a stacked weight [R, ...] is carried and each
  // iteration adds its layer's gradient into its row in place (dynamic-update-slice), so no
  // full-stack add, broadcast or multiply runs per iteration (each would cost R x the layer's
  // weight bytes of HBM traffic).
  GShardModelConfig c = ToyModelConfig(2);
  c.num_layers = 8;  // 4 layers per side, R = 4
  std::set<std::string> stacked;
  auto loss = BuildGShardModelLoss(c, &stacked);
  TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{},
                                     StepOptions(0, stacked));
  std::set<std::vector<int64_t>> stack_shapes;
  for (const std::string& name : stacked)
    stack_shapes.insert(GshardModelParam(*s.module, name)->shape.dims);
  int updates = 0;
  for (const auto& comp : s.module->computations()) {
    if (!comp->name().ends_with(".grad")) continue;
    for (const auto& i : comp->instructions()) {
      if (!stack_shapes.count(i->shape.dims) || i->shape.is_tuple) continue;
      CAPTURE(i->name);
      CHECK((i->opcode == Opcode::kDynamicUpdateSlice || i->opcode == Opcode::kParameter ||
             i->opcode == Opcode::kTuple));
      if (i->opcode == Opcode::kDynamicUpdateSlice) ++updates;
    }
  }
  CHECK(updates >= static_cast<int>(stacked.size()));
}

TEST_CASE("whole model: every remat policy computes the same step; selective and none save more") {
  // Four layers per side (R = 2 iterations of a dense and an MoE layer). The policies differ in
  // what the forward loops save and the backward loops recompute, not in the values: the loss,
  // gradients and updates agree to f32 rounding (the interpreter runs the same ops on the same
  // values; only reads from saved stacks replace recomputations), and the partitioned
  // selective step still equals its unpartitioned self.
  GShardModelConfig c = ToyModelConfig(4);
  c.num_layers = 8;
  c.moe_every = 2;
  std::set<std::string> stacked;
  auto loss = BuildGShardModelLoss(c, &stacked);
  auto step = [&](ir::LoopRemat remat) {
    TrainingStepOptions o = StepOptions(4, stacked);
    o.remat = remat;
    return BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, o);
  };
  TrainingStep per_layer = step(ir::LoopRemat::kIterationInputs);
  const std::vector<Literal> args = StepArguments(per_layer, 3);
  const Literal want = ir::Interpret(*per_layer.module, args);
  // Stack bytes the forward loops carry besides the layer inputs.
  auto saved_bytes = [](const ir::Module& m) {
    int64_t bytes = 0;
    for (const auto& comp : m.computations()) {
      if (!comp->name().ends_with(".save")) continue;
      for (const ir::Instruction* p : comp->parameters()) {
        if (p->name.starts_with("saved")) bytes += p->shape.ByteSize();
      }
    }
    return bytes;
  };
  CHECK(saved_bytes(*per_layer.module) == 0);
  int64_t previous = 0;
  for (ir::LoopRemat remat : {ir::LoopRemat::kDots, ir::LoopRemat::kAll}) {
    CAPTURE(std::string(ir::LoopRematName(remat)));
    TrainingStep s = step(remat);
    const Literal got = ir::Interpret(*s.module, args);
    REQUIRE(got.elements.size() == want.elements.size());
    for (size_t k = 0; k < got.elements.size(); ++k) {
      CAPTURE(k);
      const std::vector<double>& a = got.elements[k].values;
      const std::vector<double>& b = want.elements[k].values;
      REQUIRE(a.size() == b.size());
      double err = 0, scale = 0;
      for (size_t j = 0; j < a.size(); ++j) {
        err = std::max(err, std::abs(a[j] - b[j]));
        scale = std::max(scale, std::abs(b[j]));
      }
      CHECK(err <= 1e-5 * (1 + scale));
    }
    const int64_t bytes = saved_bytes(*s.module);
    CHECK(bytes > previous);  // none saves a superset of selective's
    previous = bytes;
    if (remat == ir::LoopRemat::kDots) {
      const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*s.module, 4);
      const partitioner::EquivalenceReport report = partitioner::CompareSpmd(*s.module, spmd, args);
      CAPTURE(report.ToString());
      CHECK(report.ok());
    }
  }
}

TEST_CASE("whole model: saved stacks are sharded like their values, so saving moves no bytes") {
  // A saved value of the MoE layer (an expert einsum's output split over E) is written into and
  // read from a stack [R, ...] split the same way; every collective of the SPMD step is then
  // one of the model's own (scoped), and the forward loops have exactly the per-layer step's
  // dispatch and combine AllToAlls. Only what is recomputed differs: "none" recomputes nothing.
  GShardModelConfig c = ToyModelConfig(4);
  std::set<std::string> stacked;
  auto loss = BuildGShardModelLoss(c, &stacked);
  for (ir::LoopRemat remat : {ir::LoopRemat::kIterationInputs, ir::LoopRemat::kDots, ir::LoopRemat::kAll}) {
    CAPTURE(std::string(ir::LoopRematName(remat)));
    TrainingStepOptions o = StepOptions(4, stacked);
    o.remat = remat;
    TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, o);
    const std::map<std::string, int> got =
        GshardModelCollectives(*partitioner::PropagateAndPartition(*s.module, 4).module);
    int recomputed = 0;
    for (const auto& [key, count] : got) {
      CAPTURE(key);
      CHECK(key.back() != ' ');  // an unscoped collective: a reshard the model did not ask for
      if (key.find(" recompute/") != std::string::npos) recomputed += count;
    }
    CHECK(got.at("all-to-all save dispatch_combine") == 4);
    CHECK(got.at("all-to-all grad backward/dispatch_combine") == 4);
    if (remat == ir::LoopRemat::kAll) {
      CHECK(recomputed == 0);
    } else {
      CHECK(recomputed > 0);
    }
  }
}

TEST_CASE("whole model: the training step keeps Adafactor state per layer of a stack") {
  // (tests/models/optimizer_test.cc checks the per-layer update itself.)
  GShardModelConfig c = ToyModelConfig(2);
  c.num_layers = 4;  // 2 layers per side
  std::set<std::string> stacked;
  auto loss = BuildGShardModelLoss(c, &stacked);
  TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{},
                                     StepOptions(0, stacked));
  // A vector stack [2, M] keeps one unfactored statistic per element, like two vectors.
  bool found = false;
  for (const OptimizerSlot& slot : s.state) {
    if (slot.name == "encoder.l0.ln_ffn_scale.adafactor_v") {
      found = true;
      CHECK(slot.shape.dims == std::vector<int64_t>{2, 16});
    }
    CHECK(slot.name.find("ln_ffn_scale.adafactor_row") == std::string::npos);
  }
  CHECK(found);
}

TEST_CASE(
    "whole model: micro-batches: the loss holds one, the step stacks the inputs, and the "
    "partitioned accumulated step equals the unpartitioned one") {
  GShardModelConfig c = ToyModelConfig(4);
  c.layer.num_groups = 8;
  c.micro_batches = 2;
  const int64_t s = c.layer.tokens_per_group;
  std::set<std::string> stacked;
  auto loss = BuildGShardModelLoss(c, &stacked);
  CHECK(GshardModelParam(*loss, "source_tokens")->shape.dims == std::vector<int64_t>{4, s});
  TrainingStepOptions o = StepOptions(4, stacked);
  o.micro_batches = c.micro_batches;
  TrainingStep step = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{}, o);
  for (const char* input : {"source_tokens", "target_inputs", "targets"}) {
    CAPTURE(input);
    CHECK(GshardModelParam(*step.module, input)->shape.dims == std::vector<int64_t>{2, 4, s});
  }
  // The entry's one loop is the accumulation; the layer loops run inside it.
  REQUIRE(Loops(*step.module).size() == 1);
  CHECK(Loops(*step.module)[0]->trip_count == 2);
  const partitioner::PartitionResult spmd = partitioner::PropagateAndPartition(*step.module, 4);
  const partitioner::EquivalenceReport report =
      partitioner::CompareSpmd(*step.module, spmd, StepArguments(step, 9));
  CAPTURE(report.ToString());
  CHECK(report.ok());

  c.micro_batches = 3;  // does not divide 8 groups
  CHECK_THROWS_WITH_AS(
      BuildGShardModelLoss(c),
      doctest::Contains("model.micro_batches: must be >= 1 and divide the 8 groups"), Error);
  c.micro_batches = 4;  // 2 groups a micro-batch cannot split over 4 devices
  CHECK_THROWS_WITH_AS(
      BuildGShardModelLoss(c),
      doctest::Contains("model.micro_batches: 4 micro-batches of 2 groups: moe.num_devices"),
      Error);
  CHECK_THROWS_WITH_AS(
      GShardModelConfig::FromJson(nlohmann::json{{"micro_batches", 0}}, "model", ToyModelConfig(2)),
      doctest::Contains("model.micro_batches"), ConfigError);
  CHECK(
      GShardModelConfig::FromJson(nlohmann::json{{"micro_batches", 2}}, "model", ToyModelConfig(2))
          .micro_batches == 2);
}

TEST_CASE("whole model: bad configs name the field") {
  GShardModelConfig c = ToyModelConfig(2);
  c.num_layers = 3;
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("model.num_layers"), Error);
  c = PaperModelConfig(128, 12);
  c.moe_every = 4;  // does not divide 6
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("model.moe_every"), Error);
  c = ToyModelConfig(2);
  c.dropout = 1;
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("model.dropout"), Error);
  c = ToyModelConfig(8);
  c.layer.num_groups = 4;  // 8 devices cannot split 4 groups
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("moe.num_devices"), Error);
  // JSON: the model's and the layer's keys in one object; unknown keys name their path.
  const GShardModelConfig j = GShardModelConfig::FromJson(
      nlohmann::json{{"num_layers", 36}, {"d_model", 32}, {"weight_dtype", "bf16"}}, "model",
      ToyModelConfig(2));
  CHECK(j.num_layers == 36);
  CHECK(j.layer.d_model == 32);
  CHECK(j.layer.weight_dtype == DType::kBF16);
  CHECK_THROWS_WITH_AS(
      GShardModelConfig::FromJson(nlohmann::json{{"layers", 36}}, "model", ToyModelConfig(2)),
      doctest::Contains("model.layers"), ConfigError);
  CHECK_THROWS_WITH_AS(
      GShardModelConfig::FromJson(nlohmann::json{{"dropout", 1.5}}, "model", ToyModelConfig(2)),
      doctest::Contains("model.dropout"), ConfigError);
}

TEST_CASE("layer mesh: device (i, j, k) = (i x expert + j) x model + k; axes of size 1 vanish") {
  const LayerMesh mesh{2, 2, 2};  // data, expert, model
  // An expert weight [E, M, H]: E over expert, H over model, replicated over data. Tile
  // (j, 0, k) replica i is device (i * 2 + j) * 2 + k.
  const ir::Sharding w = MeshSharding(mesh, 3, {{0, {MeshAxis::kExpert}}, {2, {MeshAxis::kModel}}});
  CHECK(w.tile_dims == std::vector<int64_t>{2, 1, 2, 2});
  CHECK(w.last_tile_dim_replicate);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t k = 0; k < 2; ++k) CHECK(w.DeviceAt({j, 0, k, i}) == (i * 2 + j) * 2 + k);
    }
  }
  // Activations [G, S, M]: G over data x expert (tile i * 2 + j), replicated over model.
  const ir::Sharding x = MeshSharding(mesh, 3, {{0, {MeshAxis::kData, MeshAxis::kExpert}}});
  CHECK(x.tile_dims == std::vector<int64_t>{4, 1, 1, 2});
  for (int64_t t = 0; t < 4; ++t) {
    for (int64_t k = 0; k < 2; ++k) CHECK(x.DeviceAt({t, 0, 0, k}) == t * 2 + k);
  }
  // The paper's layout (every device on the expert axis) is Split(x, 0, D) exactly, so its
  // programs do not change; a tensor split over size-1 axes only is replicated.
  const LayerMesh paper{1, 8, 1};
  CHECK(MeshSharding(paper, 3, {{0, {MeshAxis::kData, MeshAxis::kExpert}}}) ==
        ir::Sharding::TiledIota({8, 1, 1}));
  CHECK(MeshSharding(paper, 2, {{1, {MeshAxis::kModel}}}) == ir::Sharding::Replicated());
}

TEST_CASE("layer mesh: a mesh the model cannot take names the field") {
  GShardModelConfig c = ToyModelConfig(8);
  c.layer.num_heads = 4;
  c.layer.model_parallel = 3;  // does not divide 8
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("moe.model_parallel"), Error);
  c.layer.model_parallel = 8;  // divides 8 devices, not the 4 heads
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("num_heads = 4"), Error);
  c.layer.model_parallel = 2;
  c.layer.expert_parallel = 3;  // does not divide 8 / 2
  CHECK_THROWS_WITH_AS(BuildGShardModelLoss(c), doctest::Contains("moe.expert_parallel"), Error);
  c.layer.expert_parallel = 1;
  c.layer.num_groups = 2;  // data 4 x expert 1 cannot split 2 groups
  CHECK_THROWS_WITH_AS(
      BuildGShardModelLoss(c),
      doctest::Contains("4 data x expert devices (mesh data 4 x expert 1 x model 2)"), Error);
  // From JSON, with the model's other keys.
  const GShardModelConfig j = GShardModelConfig::FromJson(
      nlohmann::json{{"model_parallel", 2}, {"expert_parallel", 4}}, "model", ToyModelConfig(8));
  CHECK(j.layer.model_parallel == 2);
  CHECK(j.layer.expert_parallel == 4);
  CHECK_THROWS_WITH_AS(GShardModelConfig::FromJson(nlohmann::json{{"model_parallel", 0}}, "model",
                                                   ToyModelConfig(2)),
                       doctest::Contains("model.model_parallel"), ConfigError);
}

TEST_CASE(
    "whole model: the training step on a data x expert x model mesh equals the unpartitioned one") {
  // D = data x expert x model (models/layer_mesh.h); expert 0 means D / model.
  struct Mesh {
    int64_t devices, model, expert;
  };
  for (Mesh mesh : {Mesh{8, 2, 2}, Mesh{4, 2, 0}, Mesh{4, 1, 2}, Mesh{8, 1, 2}, Mesh{4, 4, 1}}) {
    CAPTURE(mesh.devices);
    CAPTURE(mesh.model);
    CAPTURE(mesh.expert);
    GShardModelConfig c = ToyModelConfig(mesh.devices);
    c.layer.num_heads = 4;  // the model axis splits heads
    c.layer.head_dim = 4;
    c.layer.model_parallel = mesh.model;
    c.layer.expert_parallel = mesh.expert;
    const int64_t expert = mesh.expert == 0 ? mesh.devices / mesh.model : mesh.expert;
    std::set<std::string> stacked;
    auto loss = BuildGShardModelLoss(c, &stacked);
    TrainingStep s = BuildTrainingStep(*loss, FloatParameters(*loss), OptimizerConfig{},
                                       StepOptions(mesh.devices, stacked));
    const partitioner::PartitionResult spmd =
        partitioner::PropagateAndPartition(*s.module, mesh.devices);
    const partitioner::EquivalenceReport report =
        partitioner::CompareSpmd(*s.module, spmd, StepArguments(s, 9));
    CAPTURE(report.ToString());
    CHECK(report.ok());
    // The layout moves are the MoE layers' AllToAlls alone, within groups of `expert` devices:
    // 2 per MoE layer (one per side) forward, recomputed and mirrored backward, 12 in all as on
    // the paper's layout (none when the experts are not split). The model axis adds AllReduces
    // of partial sums, never a gather or a permute.
    std::map<std::string, int> n;
    for (const auto& comp : spmd.module->computations()) {
      for (const auto& i : comp->instructions()) {
        if (!ir::IsCollective(i->opcode)) continue;
        ++n[std::string(ir::OpcodeName(i->opcode))];
        if (i->opcode == ir::Opcode::kAllToAll) {
          CHECK(ir::ReplicaGroupSizeOf(*i) == expert);
        }
      }
    }
    CHECK(n["all-to-all"] == (expert > 1 ? 12 : 0));
    CHECK(n.count("all-gather") == 0);
    CHECK(n.count("collective-permute") == 0);
  }
}

}  // namespace
}  // namespace podsim::models
