// Physical laws that relate runs to each other, checked on random small topologies, payloads and
// algorithms under every network model: more bytes never make a collective faster, faster links
// or lower latency never make it slower, relabelling a grid's dimensions does not change a ring's
// or the torus algorithm's time, and an all-reduce takes no longer than its reduce-scatter and
// all-gather back to back, a reduce-scatter no longer than the all-reduce. A regression in any
// model or algorithm that breaks one of them fails here.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

using testing::Grid;

struct Pod {
  std::vector<int64_t> dims;
  std::vector<bool> wrap;
  int64_t cores = 1;
  double bandwidth = 1e11;
  double latency_us = 1.0;

  std::unique_ptr<topo::Topology> Make() const {
    return Grid(dims, wrap, cores, bandwidth, latency_us);
  }
  int64_t Partitions() const {
    int64_t n = cores;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

// 2D or 3D grids of 2..5 chips per axis, each axis wrapped or not, 1 or 2 cores per chip, at
// most 48 partitions (the packet model stays quick).
Pod RandomLawsPod(std::mt19937_64& rng) {
  Pod pod;
  std::uniform_int_distribution<int> ndims(2, 3), size(2, 5), coin(0, 1);
  do {
    pod.dims.assign(static_cast<size_t>(ndims(rng)), 0);
    pod.wrap.clear();
    for (int64_t& d : pod.dims) {
      d = size(rng);
      pod.wrap.push_back(coin(rng) == 1);
    }
    pod.cores = coin(rng) + 1;
  } while (pod.Partitions() > 48);
  return pod;
}

double Micros(const topo::Topology& pod, CollectiveKind kind, int64_t elements,
              const std::string& algorithm, const std::string& model) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.element_bytes = 4;
  spec.elements = elements;
  AlgorithmOptions options;
  options.algorithm = algorithm;
  const Schedule schedule = BuildSchedule(spec, pod, options);
  auto network = MakeNetworkModel(model, pod, NetworkOptions{});
  return RunTiming(schedule, pod, *network).total.micros();
}

const std::vector<std::string> kModels = {"analytic", "flow", "packet"};

std::vector<std::string> AlgorithmsFor(CollectiveKind kind) {
  if (kind == CollectiveKind::kAllToAll) return {"direct"};
  return {"ring", "ring-bidir", "torus", "direct"};
}

// Relative slack for "never faster / never slower": float rounding in the network models.
constexpr double kSlack = 1e-6;

// How much faster more data may make a run. Pieces are whole elements, so moving the data by
// one element can move a piece's boundary (each of at most 2G steps' pieces by one 4-byte
// element on the critical path). The analytic and packet models serve a link's transfers in the
// order they start: transfers whose starts move a few picoseconds apart can swap places, which
// shifts a finish by up to one piece's serialisation (at most a partition's n elements over one
// link); the packet model also reorders arrivals by up to two packets (8 KiB each) when
// transfers' last packets change size.
double RoundingUs(const Pod& pod, const std::string& model, int64_t n) {
  const double element = 2.0 * static_cast<double>(pod.Partitions()) * 4 / pod.bandwidth * 1e6;
  if (model == "flow") return element;
  const double reorder = static_cast<double>(n) * 4 / pod.bandwidth * 1e6;
  return element + reorder + (model == "packet" ? 2 * 8192 / pod.bandwidth * 1e6 : 0.0);
}

TEST_CASE("monotone: more bytes never faster, faster links never slower") {
  std::mt19937_64 rng(20261201);
  std::uniform_int_distribution<int64_t> elements(256, 8192);
  for (int trial = 0; trial < 12; ++trial) {
    const Pod pod = RandomLawsPod(rng);
    const auto base = pod.Make();
    Pod fast = pod;
    fast.bandwidth *= 2;
    const auto faster = fast.Make();
    Pod near = pod;
    near.latency_us /= 10;
    const auto nearer = near.Make();
    const int64_t n = elements(rng) * pod.Partitions() / 16 + pod.Partitions();
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
      for (const std::string& algorithm : AlgorithmsFor(kind)) {
        for (const std::string& model : kModels) {
          CAPTURE(base->name());
          CAPTURE(pod.cores);
          CAPTURE(CollectiveKindName(kind));
          CAPTURE(std::string(algorithm));
          CAPTURE(model);
          CAPTURE(n);
          const double t = Micros(*base, kind, n, algorithm, model);
          // One more element per partition, and a quarter more.
          CHECK(Micros(*base, kind, n + 1, algorithm, model) >=
                t * (1 - kSlack) - RoundingUs(pod, model, n));
          CHECK(Micros(*base, kind, n + n / 4, algorithm, model) >=
                t * (1 - kSlack) - RoundingUs(pod, model, n));
          CHECK(Micros(*faster, kind, n, algorithm, model) <= t * (1 + kSlack));
          CHECK(Micros(*nearer, kind, n, algorithm, model) <= t * (1 + kSlack));
        }
      }
    }
  }
}

TEST_CASE("a ring with one slow edge: its send queues keep it at the slow edge's pace") {
  // A 4-chip line 0 - 1 - 2 - 3, edge 0-1 at 1e10 B/s, the others at b, 1 us per hop. The ring
  // 0 -> 1 -> 2 -> 3 -> 0 closes over 3 -> 2 -> 1 -> 0, through the slow edge's other direction.
  // 8 MiB all-reduce: 6 steps of P = 2 MiB; T = P / 1e10 on a slow link, L = 1 us.
  // Messages: A_s (0 -> 1), B_s (3 -> 0, 3 hops), C_s, D_s (fast). A_s waits for A_(s-1) to be
  // sent and B_(s-1) to be delivered: A_0 sent at T, B_0 delivered at T + 3L, so A_1 is sent at
  // 2T + 3L; B_s waits only for B_(s-1) sent (D_(s-1) arrives long before), so B_s is delivered
  // at (s + 1) T + 3L, never after A_s is sent: A_s is sent at (s + 1) T + 3L for s >= 1 and the
  // last, A_5, delivered at 6T + 4L, whatever b. Without send queues, steps whose inputs came
  // early shared the slow link with the step the ring waits for: faster fast edges made it
  // slower (1,759.8, 1,980.0, 2,090.1 us at b = 1e11, 2e11, 4e11 on the flow model).
  const double T = 2.0 * 1024 * 1024 / 1e10 * 1e6, L = 1.0;
  for (double b : {1e11, 2e11, 4e11}) {
    const auto line =
        topo::LoadTopology(nlohmann::json{{"kind", "custom"},
                                          {"num_chips", 4},
                                          {"edges",
                                           {{{"chips", {0, 1}}, {"link_bandwidth", 1e10}},
                                            {{"chips", {1, 2}}, {"link_bandwidth", b}},
                                            {{"chips", {2, 3}}, {"link_bandwidth", b}}}}},
                           "topology");
    for (const std::string& model : kModels) {
      CAPTURE(b);
      CAPTURE(model);
      CHECK(Micros(*line, CollectiveKind::kAllReduce, 2 * 1024 * 1024, "ring", model) ==
            doctest::Approx(6 * T + 4 * L).epsilon(1e-6));
    }
  }
}

TEST_CASE("symmetric: relabelling a grid's dimensions does not change ring or torus times") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 10; ++trial) {
    const Pod pod = RandomLawsPod(rng);
    Pod mirrored = pod;
    std::reverse(mirrored.dims.begin(), mirrored.dims.end());
    std::reverse(mirrored.wrap.begin(), mirrored.wrap.end());
    const auto a = pod.Make();
    const auto b = mirrored.Make();
    for (const char* algorithm : {"ring", "ring-bidir", "torus"}) {
      for (const std::string& model : kModels) {
        CAPTURE(a->name());
        CAPTURE(b->name());
        CAPTURE(pod.cores);
        CAPTURE(std::string(algorithm));
        CAPTURE(model);
        const double ta = Micros(*a, CollectiveKind::kAllReduce, 4096, algorithm, model);
        const double tb = Micros(*b, CollectiveKind::kAllReduce, 4096, algorithm, model);
        CHECK(ta == doctest::Approx(tb).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("composition: all-reduce <= reduce-scatter + all-gather; reduce-scatter <= all-reduce") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const Pod pod = RandomLawsPod(rng);
    const auto t = pod.Make();
    const int64_t g = pod.Partitions();
    const int64_t n = 1024 * g;  // reduce-scatter leaves n / g per member to gather
    for (const char* algorithm : {"ring", "ring-bidir", "torus"}) {
      for (const std::string& model : kModels) {
        CAPTURE(t->name());
        CAPTURE(pod.cores);
        CAPTURE(std::string(algorithm));
        CAPTURE(model);
        const double ar = Micros(*t, CollectiveKind::kAllReduce, n, algorithm, model);
        const double rs = Micros(*t, CollectiveKind::kReduceScatter, n, algorithm, model);
        const double ag = Micros(*t, CollectiveKind::kAllGather, n / g, algorithm, model);
        // The torus all-reduce is its own schedule (its phase order and slot layout differ from
        // the reduce-scatter's), within 0.5% of the two back to back; rings are exactly both.
        // Without the barrier between them, a member's all-gather pieces leave as soon as its
        // own reduce-scatter is done and can share a link with a late reduce-scatter piece on
        // the critical path (flow: each at half the rate; analytic and packet: served in the
        // order they start, one ahead of the other), delaying it by up to one member's block
        // (n / g elements) over the link, once per ring direction or torus rotation (each runs
        // its own pieces); the packet model also reorders arrivals by up to two packets.
        const bool torus = std::string(algorithm) == "torus";
        const double slack = torus ? 5e-3 : kSlack;
        const double block_us = static_cast<double>(n / g) * 4 / pod.bandwidth * 1e6;
        const double reorder_us = block_us * (torus ? static_cast<double>(pod.dims.size()) : 2.0) +
                                  (model == "packet" ? 2 * 8192 / pod.bandwidth * 1e6 : 0.0);
        CHECK(ar <= (rs + ag) * (1 + slack) + reorder_us);
        CHECK(rs <= ar * (1 + kSlack));
      }
    }
  }
}

}  // namespace
}  // namespace podsim::sim
