// Speed of a timing-mode program simulation: one GShard MoE layer plus its adjacent Transformer
// layer (forward), as the SPMD program each core runs, on TPU v3 slices up to the full
// 2048-core pod. Target: 2048 cores under 5 s and 4 GiB.
//
//   ninja -C build simulate_bench && build/tests/simulate_bench
//
// The module is written here by hand per partition (the models/ builder and the partitioner
// produce the real one; this one has the same shapes and collectives): 2048 tokens per core,
// d_model 1024, 16 heads of 128, d_ff 8192, E = D experts, capacity C = 2S/E, one group per
// core; dispatch and combine are all-to-alls of E x C x M bf16 values per partition (8 MiB at
// 2048 experts). BM_SimulateGShardFig8 runs the real program instead (the models/ builder, the
// partitioner). Counters: step_us (simulated step time), peak_rss_mib (process high-water mark).

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <memory>
#include <string>

#include "experiments/plan.h"
#include "ir/builder.h"
#include "models/gshard_model.h"
#include "models/moe_transformer.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_partitioner.h"
#include "pipeline/training.h"
#include "sim/program/simulate.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::Shape;

ir::DotDims Contract(std::vector<int64_t> lhs, std::vector<int64_t> rhs,
                     std::vector<int64_t> lhs_batch = {}, std::vector<int64_t> rhs_batch = {}) {
  ir::DotDims d;
  d.lhs_contracting = std::move(lhs);
  d.rhs_contracting = std::move(rhs);
  d.lhs_batch = std::move(lhs_batch);
  d.rhs_batch = std::move(rhs_batch);
  return d;
}

// x - mean, scaled by rsqrt(var + eps), times gamma plus beta, over the last dim of [S, M].
Instruction* LayerNorm(Builder& b, Instruction* x, Instruction* gamma, Instruction* beta) {
  const auto dims = x->shape.dims;
  const double m = static_cast<double>(dims[1]);
  auto* inv_m = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1.0 / m), {dims[0]});
  auto* xf = b.Convert(x, DType::kF32);
  auto* mean = b.Mul(b.Reduce(xf, {1}, ir::ReduceKind::kAdd), inv_m);
  auto* centered = b.Sub(xf, b.Broadcast(mean, dims, {0}));
  auto* var = b.Mul(b.Reduce(b.Mul(centered, centered), {1}, ir::ReduceKind::kAdd), inv_m);
  auto* eps = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1e-6), {dims[0]});
  auto* scale = b.Rsqrt(b.Add(var, eps));
  auto* normed = b.Mul(centered, b.Broadcast(scale, dims, {0}));
  auto* out = b.Add(b.Mul(normed, b.Broadcast(gamma, dims, {1})), b.Broadcast(beta, dims, {1}));
  return b.Convert(out, DType::kBF16);
}

// Softmax over dim `d` of x (f32).
Instruction* Softmax(Builder& b, Instruction* x, int64_t d) {
  std::vector<int64_t> keep;
  for (int64_t k = 0; k < x->shape.rank(); ++k) {
    if (k != d) keep.push_back(k);
  }
  auto* mx = b.Broadcast(b.Reduce(x, {d}, ir::ReduceKind::kMax), x->shape.dims, keep);
  auto* e = b.Exp(b.Sub(x, mx));
  auto* sum = b.Broadcast(b.Reduce(e, {d}, ir::ReduceKind::kAdd), x->shape.dims, keep);
  return b.Div(e, sum);
}

std::unique_ptr<ir::Module> BuildMoeLayerPair(int64_t partitions) {
  const int64_t S = 2048, M = 1024, H = 16, Dh = 128, F = 8192, E = partitions;
  const int64_t C = std::max<int64_t>(1, 2 * S / E);
  auto module = std::make_unique<ir::Module>("moe_layer_pair_" + std::to_string(partitions));
  Builder b(module->AddComputation("main", /*is_entry=*/true));
  int64_t param = 0;
  auto weight = [&](std::vector<int64_t> dims, const std::string& name) {
    return b.Parameter(param++, Shape(DType::kBF16, std::move(dims)), name);
  };
  auto vec = [&](int64_t n, const std::string& name) {
    return b.Parameter(param++, Shape(DType::kF32, {n}), name);
  };
  Instruction* x = weight({S, M}, "x");
  // --- Transformer layer: attention ---
  {
    Builder::ScopeGuard scope(b, "projections");
    auto* xn = LayerNorm(b, x, vec(M, "ln1_g"), vec(M, "ln1_b"));
    auto* q = b.Dot(xn, weight({M, H * Dh}, "wq"), Contract({1}, {0}));
    auto* k = b.Dot(xn, weight({M, H * Dh}, "wk"), Contract({1}, {0}));
    auto* v = b.Dot(xn, weight({M, H * Dh}, "wv"), Contract({1}, {0}));
    auto heads = [&](Instruction* t) { return b.Transpose(b.Reshape(t, {S, H, Dh}), {1, 0, 2}); };
    Instruction* ctx;
    {
      Builder::ScopeGuard attn(b, "attention");
      auto* scores = b.Dot(heads(q), heads(k), Contract({2}, {2}, {0}, {0}));  // [H, S, S]
      auto* scaled = b.Mul(b.Convert(scores, DType::kF32),
                           b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1.0 / 11.3137), {H, S, S}));
      auto* probs = b.Convert(Softmax(b, scaled, 2), DType::kBF16);
      ctx = b.Dot(probs, heads(v), Contract({2}, {1}, {0}, {0}));  // [H, S, Dh]
    }
    auto* merged = b.Reshape(b.Transpose(ctx, {1, 0, 2}), {S, H * Dh});
    auto* out = b.Dot(merged, weight({H * Dh, M}, "wo"), Contract({1}, {0}));
    x = b.Add(x, out);
  }
  // --- Transformer layer: dense FFN ---
  {
    Builder::ScopeGuard scope(b, "transformer_ffn");
    auto* xn = LayerNorm(b, x, vec(M, "ln2_g"), vec(M, "ln2_b"));
    auto* h = b.Dot(xn, weight({M, F}, "w1"), Contract({1}, {0}));
    auto* relu = b.Max(h, b.BroadcastScalar(b.ConstantScalar(DType::kBF16, 0), {S, F}));
    x = b.Add(x, b.Dot(relu, weight({F, M}, "w2"), Contract({1}, {0})));
  }
  // --- MoE layer: gating ---
  Instruction *combine, *dispatch_mask, *xn;
  {
    Builder::ScopeGuard scope(b, "gate_einsums");
    xn = LayerNorm(b, x, vec(M, "ln3_g"), vec(M, "ln3_b"));
    auto* logits = b.Convert(b.Dot(xn, weight({M, E}, "wg"), Contract({1}, {0})), DType::kF32);
    auto* gates = Softmax(b, logits, 1);  // [S, E]
    auto* iota_e = b.Iota(Shape(DType::kS32, {S, E}), 1);
    auto* top1 = b.Argmax(gates, 1);
    auto* mask1 = b.Convert(b.Compare(iota_e, b.Broadcast(top1, {S, E}, {0}), ir::Comparison::kEq), DType::kF32);
    auto* rest = b.Mul(gates, b.Sub(b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1), {S, E}), mask1));
    auto* top2 = b.Argmax(rest, 1);
    auto* mask2 = b.Convert(b.Compare(iota_e, b.Broadcast(top2, {S, E}, {0}), ir::Comparison::kEq), DType::kF32);
    Instruction *pos1, *pos2;
    {
      Builder::ScopeGuard cumsum(b, "gate_cumsum");
      pos1 = b.Cumsum(mask1, 0, /*exclusive=*/true);
      auto* count1 = b.Broadcast(b.Reduce(mask1, {0}, ir::ReduceKind::kAdd), {S, E}, {1});
      pos2 = b.Add(b.Cumsum(mask2, 0, /*exclusive=*/true), count1);
    }
    auto* cap = b.BroadcastScalar(b.ConstantScalar(DType::kF32, static_cast<double>(C)), {S, E});
    auto* keep1 = b.Mul(mask1, b.Convert(b.Compare(pos1, cap, ir::Comparison::kLt), DType::kF32));
    auto* keep2 = b.Mul(mask2, b.Convert(b.Compare(pos2, cap, ir::Comparison::kLt), DType::kF32));
    auto* g1 = b.Reduce(b.Mul(gates, keep1), {1}, ir::ReduceKind::kAdd);
    auto* g2 = b.Reduce(b.Mul(gates, keep2), {1}, ir::ReduceKind::kAdd);
    auto* norm = b.Add(b.Add(g1, g2), b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1e-9), {S}));
    auto* w1 = b.Div(g1, norm);
    auto* w2 = b.Div(g2, norm);
    auto* iota_c = b.Iota(Shape(DType::kF32, {S, E, C}), 2);
    auto onehot = [&](Instruction* pos, Instruction* keep) {
      auto* hit = b.Convert(b.Compare(iota_c, b.Broadcast(pos, {S, E, C}, {0, 1}), ir::Comparison::kEq),
                            DType::kF32);
      return b.Mul(hit, b.Broadcast(keep, {S, E, C}, {0, 1}));
    };
    auto* c1 = onehot(pos1, keep1);
    auto* c2 = onehot(pos2, keep2);
    combine = b.Add(b.Mul(c1, b.Broadcast(w1, {S, E, C}, {0})), b.Mul(c2, b.Broadcast(w2, {S, E, C}, {0})));
    dispatch_mask = b.Convert(b.Compare(combine, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0), {S, E, C}),
                                        ir::Comparison::kGt), DType::kBF16);
  }
  // --- MoE layer: dispatch, expert FFN, combine ---
  Instruction* expert_in;
  {
    Builder::ScopeGuard scope(b, "dispatch_combine");
    auto* dispatched = b.Dot(dispatch_mask, xn, Contract({0}, {0}));  // [E, C, M]
    expert_in = b.AllToAll(dispatched, 0, 0, {}, partitions);
  }
  Instruction* expert_out;
  {
    Builder::ScopeGuard scope(b, "moe_ffn");
    auto* flat = b.Reshape(expert_in, {E * C, M});
    auto* h = b.Dot(flat, weight({M, F}, "we1"), Contract({1}, {0}));
    auto* relu = b.Max(h, b.BroadcastScalar(b.ConstantScalar(DType::kBF16, 0), {E * C, F}));
    expert_out = b.Reshape(b.Dot(relu, weight({F, M}, "we2"), Contract({1}, {0})), {E, C, M});
  }
  {
    Builder::ScopeGuard scope(b, "dispatch_combine");
    auto* back = b.AllToAll(expert_out, 0, 0, {}, partitions);
    auto* y = b.Dot(b.Convert(combine, DType::kBF16), back, Contract({1, 2}, {0, 1}));  // [S, M]
    x = b.Add(x, y);
  }
  return module;
}

double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void BM_SimulateMoeLayerPair(benchmark::State& state) {
  const int64_t cores = state.range(0);
  const auto topology = topo::LoadTopology("tpu-v3-" + std::to_string(cores));
  const auto module = BuildMoeLayerPair(cores);
  SimOptions options;
  options.device = LoadDeviceSpec("tpu-v3-core");
  RunResult result;
  for (auto _ : state) {
    result = Simulate(*module, *topology, options);
    benchmark::DoNotOptimize(result.step_time);
  }
  state.counters["step_us"] = result.step_time.micros();
  state.counters["instructions"] = static_cast<double>(module->InstructionCount());
  state.counters["peak_rss_mib"] = PeakRssMib();
  state.counters["alltoall_us"] = result.collectives.empty() ? 0.0 : result.collectives[0].mean.micros();
}
BENCHMARK(BM_SimulateMoeLayerPair)->Arg(128)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The real Figure 8 program: models::BuildMoeLayerPair(PaperMoeConfig(E)) propagated and
// partitioned for E = D cores (outside the timed loop), then simulated in timing mode with the
// tpu-v3-core preset and the flow network, as `podsim run experiments/gshard_fig8.json` does.
void BM_SimulateGShardFig8(benchmark::State& state) {
  const int64_t cores = state.range(0);
  const auto topology = topo::LoadTopology("tpu-v3-" + std::to_string(cores));
  std::unique_ptr<ir::Module> global = models::BuildMoeLayerPair(models::PaperMoeConfig(cores));
  partitioner::PropagateShardings(*global, cores);
  partitioner::PartitionOptions popts;
  popts.num_partitions = cores;
  const partitioner::PartitionResult spmd = partitioner::PartitionSpmd(*global, popts);
  SimOptions options;
  options.device = LoadDeviceSpec("tpu-v3-core");
  options.num_partitions = cores;
  RunResult result;
  for (auto _ : state) {
    result = Simulate(*spmd.module, *topology, options);
    benchmark::DoNotOptimize(result.step_time);
  }
  state.counters["step_us"] = result.step_time.micros();
  state.counters["instructions"] = static_cast<double>(spmd.module->InstructionCount());
  state.counters["peak_rss_mib"] = PeakRssMib();
}
BENCHMARK(BM_SimulateGShardFig8)->Arg(128)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The whole training step of a Table 3 configuration on its v3 slice as the training_step
// experiment runs it (pipeline::RunTraining: the step built and partitioned under each remat
// policy until one fits, then simulated), with experiments/gshard_table3.json's network and
// device calibration. Arg: 12 or 36 layers of MoE(2048E).
// Target for 2048E,36L on 2048 cores: under 10 s and 4 GiB.
void BM_TrainingStepOnPod(benchmark::State& state) {
  const std::string name = "2048E," + std::to_string(state.range(0)) + "L";
  models::GShardModelConfig model = models::PresetModelConfig(name);
  model.layer.num_devices = 2048;
  nlohmann::json tc = topo::ExpandTopologyConfig("tpu-v3-2048", "topology");
  tc.merge_patch({{"link_bandwidth", 2.8e10}, {"hop_latency_us", 0.25}});
  const auto topology = topo::LoadTopology(tc, "topology");
  SimOptions options;
  options.device = LoadDeviceSpec("tpu-v3-core");
  options.collective_overhead_us = 25;
  pipeline::TrainingRun run;
  for (auto _ : state) {
    run = pipeline::RunTraining(model, models::OptimizerConfig{}, std::nullopt, *topology, options);
    benchmark::DoNotOptimize(run.result.step_time);
  }
  state.SetLabel(name + " " + ir::LoopRematName(run.remat));
  state.counters["step_us"] = run.result.step_time.micros();
  state.counters["peak_rss_mib"] = PeakRssMib();
}
BENCHMARK(BM_TrainingStepOnPod)->Arg(12)->Arg(36)->Unit(benchmark::kMillisecond)->Iterations(1);

// podsim plan for MoE(2048E, 36L) on the 2,048 cores of a v3 pod with Table 3's calibration
// (experiments/plan.h): every layout enumerated and estimated, the 3 best simulated on 2
// threads. Target: under a minute on a 2-core machine.
void BM_Plan2048E36L(benchmark::State& state) {
  experiments::PlanSpec spec;
  spec.model = {{"preset", "2048E,36L"}};
  spec.topologies = {"tpu-v3-2048"};
  spec.sim = {
      {"device", "tpu-v3-core"}, {"network", {{"model", "flow"}}}, {"collective_overhead_us", 25}};
  spec.topology_overrides = {{"link_bandwidth", 2.8e10}, {"hop_latency_us", 0.25}};
  spec.jobs = 2;
  experiments::PlanResult plan;
  for (auto _ : state) {
    plan = experiments::RunPlan(spec);
    benchmark::DoNotOptimize(plan.candidates.size());
  }
  state.counters["candidates"] = static_cast<double>(plan.candidates.size());
  state.counters["best_step_us"] = plan.candidates.front().step_s * 1e6;
  state.counters["peak_rss_mib"] = PeakRssMib();
}
BENCHMARK(BM_Plan2048E36L)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace podsim::sim

BENCHMARK_MAIN();
