// Partition time of the 24-layer MoE Transformer forward stack (models/moe_stack.h, the
// paper's sizes with G = E = D) at D = 16 ... 65536 partitions: SPMD (sharding propagation plus
// lowering to one program) and the MPMD baseline (one program per device, partitioner/mpmd.h).
// GShard section 3.3: the SPMD time and program size do not depend on D; MPMD grows with it
// (benchmarked up to D = 256 here; experiments/spmd_vs_mpmd.json sweeps further under a time
// budget).
//
//   ninja -C build partition_bench && build/tests/partition_bench
//
// BM_TrainingStep: the training step of the whole MoE(E = D, 36L) model at the paper's sizes
// (models/gshard_model.h: encoder-decoder, layer loops over stacked weights, cross-entropy plus
// auxiliary loss; Adafactor), built by propagating the annotations, differentiating and adding
// the update (models::BuildTrainingStep), then partitioned: the whole cost of getting a training
// step's SPMD program, which must also not depend on D.
//
// Counters: instructions = instructions of the partitioned program(s).

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "models/gshard_model.h"
#include "models/moe_stack.h"
#include "models/training_step.h"
#include "models/moe_transformer.h"
#include "partitioner/mpmd.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::experiments {
namespace {

constexpr int64_t kLayerPairs = 12;

std::unique_ptr<ir::Module> Stack(int64_t d) {
  return models::BuildMoeStack(models::PaperMoeConfig(d), kLayerPairs);
}

void BM_SpmdPartition(benchmark::State& state) {
  const int64_t d = state.range(0);
  const std::unique_ptr<ir::Module> stack = Stack(d);
  int64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<ir::Module> m = stack->Clone();
    state.ResumeTiming();
    partitioner::PropagateShardings(*m, d);
    partitioner::PartitionOptions options;
    options.num_partitions = d;
    partitioner::PartitionResult r = partitioner::PartitionSpmd(*m, options);
    instructions = r.module->InstructionCount();
    benchmark::DoNotOptimize(r.module.get());
  }
  state.counters["instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_SpmdPartition)->RangeMultiplier(4)->Range(16, 65536)->Unit(benchmark::kMillisecond);

void BM_MpmdPartition(benchmark::State& state) {
  const int64_t d = state.range(0);
  const std::unique_ptr<ir::Module> stack = Stack(d);
  int64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<ir::Module> m = stack->Clone();
    state.ResumeTiming();
    partitioner::PropagateShardings(*m, d);
    partitioner::MpmdOptions options;
    options.num_partitions = d;
    instructions = partitioner::PartitionMpmd(*m, options).instructions;
  }
  state.counters["instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_MpmdPartition)->RangeMultiplier(4)->Range(16, 256)->Unit(benchmark::kMillisecond);

void BM_TrainingStep(benchmark::State& state) {
  const int64_t d = state.range(0);
  std::set<std::string> stacked;
  const std::unique_ptr<ir::Module> loss =
      models::BuildGShardModelLoss(models::PaperModelConfig(d, 36), &stacked);
  int64_t instructions = 0;
  for (auto _ : state) {
    models::TrainingStepOptions options;
    options.num_partitions = d;
    options.layer_stacked = stacked;
    options.return_gradients = false;
    models::TrainingStep step = models::BuildTrainingStep(
        *loss, models::FloatParameters(*loss), models::OptimizerConfig{}, options);
    partitioner::PartitionResult r = partitioner::PropagateAndPartition(*step.module, d);
    instructions = r.module->InstructionCount();
    benchmark::DoNotOptimize(r.module.get());
  }
  state.counters["instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_TrainingStep)->RangeMultiplier(16)->Range(16, 65536)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace podsim::experiments

BENCHMARK_MAIN();
