// Speed of the collective algorithms: building schedules on the 2048-partition TPU v3 pod
// (32x32 chips x 2 cores), and the timing run of an all-to-all on a 16x16 torus with the flow
// model (65,536 transfers).
//
//   ninja -C build collectives_bench && build/tests/collectives_bench
//
// BM_Build/<algorithm>: BuildSchedule for an 8 MiB-per-partition collective on tpu-v3-2048
// (direct all-to-all: 4.2 million transfers; torus all-reduce: 518,144 transfers).
// BM_TimingAllToAll16x16: BuildSchedule + RunTiming of the direct all-to-all on FlowNetwork.
// BM_CollectiveCommandAllToAllPod: experiments::RunCollective, the path of `podsim collective
// --op all-to-all --bytes 8MiB --topology tpu-v3-2048` (load the preset, build the 4.2 million
// transfer schedule, time it on the flow model, the analytic cross-check). Peak memory: run it
// alone under /usr/bin/time -v (--benchmark_filter=Pod).
// BM_CollectiveCommandAllReduce16k: the same path for `podsim collective --op all-reduce --bytes
// 8MiB --topology tpu-v4-8192 --set topology.cores_per_chip=4 --algorithm torus` (16,384
// partitions, 9.4 million transfers, timed by symmetry on chip 0's 2,304).

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "experiments/collective_run.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/timing.h"
#include "sim/network/flow_network.h"
#include "topologies/config.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

constexpr int64_t kEightMiBOfFloats = (8 << 20) / 4;

void Build(benchmark::State& state, CollectiveKind kind, const std::string& algorithm) {
  const auto pod = topo::LoadTopology("tpu-v3-2048");
  CollectiveSpec spec;
  spec.kind = kind;
  spec.elements = kEightMiBOfFloats;
  AlgorithmOptions options;
  options.algorithm = algorithm;
  int64_t transfers = 0;
  for (auto _ : state) {
    const Schedule s = BuildSchedule(spec, *pod, options);
    transfers = static_cast<int64_t>(s.transfers.size());
    benchmark::DoNotOptimize(transfers);
  }
  state.counters["transfers"] = static_cast<double>(transfers);
}

void BM_BuildAllToAllDirect(benchmark::State& state) {
  Build(state, CollectiveKind::kAllToAll, "direct");
}
void BM_BuildAllToAllStaged(benchmark::State& state) {
  Build(state, CollectiveKind::kAllToAll, "dim-staged");
}
void BM_BuildAllReduceTorus(benchmark::State& state) {
  Build(state, CollectiveKind::kAllReduce, "torus");
}
void BM_BuildAllReduceRingBidir(benchmark::State& state) {
  Build(state, CollectiveKind::kAllReduce, "ring-bidir");
}
BENCHMARK(BM_BuildAllToAllDirect)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildAllToAllStaged)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildAllReduceTorus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildAllReduceRingBidir)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_TimingAllToAll16x16(benchmark::State& state) {
  topo::TopologyConfig config;
  config.dims = {16, 16};
  const auto torus = topo::MakeTopology(config);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllToAll;
  spec.elements = kEightMiBOfFloats;
  double micros = 0;
  for (auto _ : state) {
    const Schedule s = BuildSchedule(spec, *torus);
    FlowNetwork flow(*torus);
    micros = RunTiming(s, *torus, flow).total.micros();
    benchmark::DoNotOptimize(micros);
  }
  state.counters["simulated_us"] = micros;
}
BENCHMARK(BM_TimingAllToAll16x16)->Unit(benchmark::kMillisecond);

void BM_CollectiveCommandAllToAllPod(benchmark::State& state) {
  experiments::CollectiveRunConfig config;
  config.topology = topo::ExpandTopologyConfig("tpu-v3-2048", "topology");
  config.kind = CollectiveKind::kAllToAll;
  config.bytes = int64_t{8} << 20;
  int64_t transfers = 0;
  for (auto _ : state) {
    const experiments::CollectiveRunResult r = experiments::RunCollective(config);
    transfers = r.timing.network_transfers;
    benchmark::DoNotOptimize(transfers);
  }
  state.counters["transfers"] = static_cast<double>(transfers);
}
BENCHMARK(BM_CollectiveCommandAllToAllPod)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_CollectiveCommandAllReduce16k(benchmark::State& state) {
  experiments::CollectiveRunConfig config;
  config.topology = topo::ExpandTopologyConfig("tpu-v4-8192", "topology");
  config.topology["cores_per_chip"] = 4;
  config.kind = CollectiveKind::kAllReduce;
  config.bytes = int64_t{8} << 20;
  config.algorithm = "torus";
  double micros = 0;
  for (auto _ : state) {
    const experiments::CollectiveRunResult r = experiments::RunCollective(config);
    benchmark::DoNotOptimize(&r);
    micros = r.time_us;
  }
  state.counters["simulated_us"] = micros;
}
BENCHMARK(BM_CollectiveCommandAllReduce16k)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace podsim::sim

BENCHMARK_MAIN();
