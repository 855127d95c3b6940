// Speed of the dense baseline's GPipe step (pipeline/gpipe.h): T(96L) on the 2,048-core TPU v3
// pod, 16 stages x 16 micro-batches, 4M tokens per step: its pieces built and simulated on one
// core, the stage transfers and the gradient AllReduces timed on the pod's network, and the
// schedule. Target: under 10 s.
//
//   ninja -C build gpipe_bench && build/tests/gpipe_bench
//
// Counters: step_s (the simulated step), bubble (its pipeline bubble fraction).

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "experiments/training_point.h"
#include "pipeline/gpipe.h"
#include "sim/program/sim_options.h"
#include "topologies/load.h"

namespace podsim::pipeline {
namespace {

void BM_GPipeDenseT96L(benchmark::State& state) {
  // The calibration of experiments/gshard_dense_baseline.json.
  const nlohmann::json t = experiments::PointTopologyJson(
      "tpu-v3-2048", {{"link_bandwidth", 2.8e10}, {"hop_latency_us", 0.25}}, "");
  const auto topology = topo::LoadTopology(t, "topology");
  const sim::SimOptions options = experiments::PointSimOptions(
      {{"network", {{"model", "flow"}}}, {"collective_overhead_us", 25}}, t, "", 2048);
  GPipeOptions g;
  g.stages = state.range(0);
  g.micro_batches = state.range(1);
  GPipeRun run;
  for (auto _ : state) {
    run = RunGPipe(models::DenseTransformerConfig{}, g, {}, *topology, options);
    benchmark::DoNotOptimize(run.schedule.step_time);
  }
  state.counters["step_s"] = run.schedule.step_time.seconds();
  state.counters["bubble"] = run.schedule.bubble_fraction;
}
BENCHMARK(BM_GPipeDenseT96L)->Args({16, 16})->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace podsim::pipeline

BENCHMARK_MAIN();
