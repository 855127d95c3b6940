// Network model speed. The targets (issue 3): flow model, direct AllToAll of 8 MiB per partition
// on a 16x16 torus with 1 core per chip (256 x 255 flows) under 0.1 s; on the 32x32 TPU v3 pod
// with 2 cores per chip (2048 partitions, ~4.2 M flows) under 2 s and 2 GiB.
// Each iteration builds a fresh model, starts every transfer at t = 0 and runs to completion;
// the topology is built once outside the timed loop. peak_rss_MiB is the process's peak resident
// memory: run one benchmark per process (--benchmark_filter) to read it per case.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "sim/network/analytic_network.h"
#include "sim/network/flow_network.h"
#include "sim/network/packet_network.h"
#include "sim/network/symmetric_flow.h"
#include "topologies/torus.h"

namespace podsim::sim {
namespace {

std::unique_ptr<topo::TorusTopology> Torus(int64_t x, int64_t y, int64_t cores_per_chip) {
  topo::TopologyConfig config;
  config.dims = {x, y};
  config.cores_per_chip = cores_per_chip;
  config.link_bandwidth = 1e11;  // TPU v3 ICI, B/s per link per direction
  config.hop_latency_us = 1.0;
  return std::make_unique<topo::TorusTopology>(config);
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Starts a direct AllToAll (every partition sends bytes_per_partition / n to every other) and
// runs the model until idle; returns the completion time.
Time RunAllToAll(NetworkModel& net, int64_t n, int64_t bytes_per_partition) {
  const Bytes chunk{bytes_per_partition / n};
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t d = 0; d < n; ++d) {
      if (s != d) net.Start(s * n + d, s, d, chunk, Time());
    }
  }
  Time last;
  int64_t done = 0;
  for (Time t = net.NextEventTime(); t != Time::Max(); t = net.NextEventTime()) {
    done += static_cast<int64_t>(net.Advance(t).size());
    last = t;
  }
  if (done != n * (n - 1)) throw std::runtime_error("AllToAll lost transfers");
  return last;
}

void BM_FlowAllToAll(benchmark::State& state) {
  const auto torus = Torus(state.range(0), state.range(1), state.range(2));
  const int64_t n = torus->num_cores();
  Time t;
  FlowNetwork::Stats stats;
  for (auto _ : state) {
    FlowNetwork net(*torus, FlowOptions{.aggregate = state.range(3) != 0});
    t = RunAllToAll(net, n, int64_t{8} << 20);
    stats = net.stats();
  }
  state.counters["flows"] = static_cast<double>(stats.flows);
  state.counters["classes"] = static_cast<double>(stats.classes);
  state.counters["fillings"] = static_cast<double>(stats.full_fillings + stats.partial_fillings);
  state.counters["classes_filled"] = static_cast<double>(stats.classes_filled);
  state.counters["rounds"] = static_cast<double>(stats.filling_rounds);
  state.counters["heap_fillings"] = static_cast<double>(stats.heap_fillings);
  state.counters["sim_time_us"] = t.micros();
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}
// Args: torus x, torus y, cores per chip, aggregate flows (1/0).
BENCHMARK(BM_FlowAllToAll)->Args({16, 16, 1, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlowAllToAll)->Args({16, 16, 1, 0})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlowAllToAll)->Args({16, 16, 2, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlowAllToAll)->Args({32, 32, 2, 1})->Unit(benchmark::kMillisecond)->Iterations(3);

// The same AllToAll solved on chip 0's flows (sim/network/symmetric_flow.h): sim_time_us must
// equal BM_FlowAllToAll's for the same torus (to a picosecond or so).
void BM_SymmetricAllToAll(benchmark::State& state) {
  const auto torus = Torus(state.range(0), state.range(1), state.range(2));
  const int64_t n = torus->num_cores();
  std::vector<RepresentativeTransfer> reps;
  for (int64_t s = 0; s < torus->cores_per_chip(); ++s) {
    for (int64_t d = 0; d < n; ++d) {
      if (s != d) reps.push_back({s, d, (int64_t{8} << 20) / n, std::nullopt});
    }
  }
  Time t;
  int64_t classes = 0;
  for (auto _ : state) {
    const std::optional<SymmetricFlowResult> r = SolveSymmetricFlow(*torus, reps, Time());
    if (!r) throw std::runtime_error("not symmetric");
    t = *std::max_element(r->done.begin(), r->done.end());
    classes = r->classes;
  }
  state.counters["classes"] = static_cast<double>(classes);
  state.counters["sim_time_us"] = t.micros();
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}
// Args: torus x, torus y, cores per chip.
BENCHMARK(BM_SymmetricAllToAll)->Args({16, 16, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SymmetricAllToAll)->Args({32, 32, 2})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SymmetricAllToAll)->Args({64, 64, 2})->Unit(benchmark::kMillisecond);

// Many events, partial refills and the heap filling: 16x16 torus, every core sends 16 transfers
// of random sizes (1 KiB .. 1 MiB, fixed seed) to random cores, in 4 waves 5 us apart.
void BM_FlowRandomWaves(benchmark::State& state) {
  const auto torus = Torus(16, 16, 1);
  const int64_t n = torus->num_cores();
  FlowNetwork::Stats stats;
  int64_t events = 0;
  for (auto _ : state) {
    FlowNetwork net(*torus);
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int64_t> core(0, n - 1), size(1 << 10, 1 << 20);
    TransferId id = 0;
    events = 0;
    for (int wave = 0; wave < 4; ++wave) {
      const Time at = Time::FromMicros(5.0 * wave);
      while (net.NextEventTime() < at) {
        net.Advance(net.NextEventTime());
        ++events;
      }
      for (int64_t s = 0; s < n; ++s) {
        for (int k = 0; k < 4; ++k) net.Start(id++, s, core(rng), Bytes{size(rng)}, at);
      }
    }
    for (Time t = net.NextEventTime(); t != Time::Max(); t = net.NextEventTime(), ++events) net.Advance(t);
    stats = net.stats();
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["flows"] = static_cast<double>(stats.flows);
  state.counters["fillings"] = static_cast<double>(stats.full_fillings + stats.partial_fillings);
  state.counters["classes_filled"] = static_cast<double>(stats.classes_filled);
  state.counters["heap_fillings"] = static_cast<double>(stats.heap_fillings);
}
BENCHMARK(BM_FlowRandomWaves)->Unit(benchmark::kMillisecond);

void BM_AnalyticAllToAll(benchmark::State& state) {
  const auto torus = Torus(state.range(0), state.range(1), state.range(2));
  Time t;
  for (auto _ : state) {
    AnalyticNetwork net(*torus);
    t = RunAllToAll(net, torus->num_cores(), int64_t{8} << 20);
  }
  state.counters["sim_time_us"] = t.micros();
}
BENCHMARK(BM_AnalyticAllToAll)->Args({16, 16, 1})->Unit(benchmark::kMillisecond);

void BM_PacketAllToAll(benchmark::State& state) {
  const auto torus = Torus(state.range(0), state.range(1), 1);
  Time t;
  int64_t events = 0;
  for (auto _ : state) {
    PacketNetwork net(*torus, PacketOptions{.packet_bytes = state.range(2)});
    t = RunAllToAll(net, torus->num_cores(), int64_t{8} << 20);
    events = net.events_processed();
  }
  state.counters["sim_time_us"] = t.micros();
  state.counters["packet_hop_events"] = static_cast<double>(events);
}
// Args: torus x, torus y, packet bytes.
BENCHMARK(BM_PacketAllToAll)->Args({4, 4, 65536})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PacketAllToAll)->Args({8, 8, 65536})->Unit(benchmark::kMillisecond);
// Issue 13's target: 8 MiB direct AllToAll on a 32x32 torus with 4 KiB packets (2 per pair,
// ~35 M packet-hop events) under 5 s.
BENCHMARK(BM_PacketAllToAll)->Args({32, 32, 4096})->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace podsim::sim

BENCHMARK_MAIN();
