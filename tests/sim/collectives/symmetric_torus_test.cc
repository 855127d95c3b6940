// The torus algorithm timed on chip 0's transfers over the flow model's quotient
// (TimeSymmetricTorus, sim/collectives/symmetric_torus.cc) against the reference implementation:
// the whole schedule BuildSchedule makes, every transfer simulated on the full flow model.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/symmetric_timing.h"
#include "sim/collectives/timing.h"
#include "sim/network/flow_network.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

std::unique_ptr<topo::Topology> LoadTorus(const std::string& json) {
  return topo::LoadTopology(nlohmann::json::parse(json), "topology");
}

CollectiveSpec TorusSpec(CollectiveKind kind, int64_t elements) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.elements = elements;
  return spec;
}

// Within a few picoseconds per event (sums rounded in another order); what is counted, exactly.
void CheckTorusAgainstFullModel(const topo::Topology& topology, CollectiveKind kind,
                                int64_t elements) {
  INFO(topology.name() << ", " << std::string(CollectiveKindName(kind)) << ", " << elements
                       << " elements");
  const int chunks = 1;
  const CollectiveSpec spec = TorusSpec(kind, elements);
  TimingOptions options;
  options.fixed_overhead = Time::FromMicros(3);
  const std::optional<SymmetricTiming> fast_timing =
      TimeSymmetricTorus(spec, topology, "torus", chunks, "flow", options);
  REQUIRE(fast_timing.has_value());
  const TimingResult* fast = &fast_timing->timing;
  CHECK(fast->transfer_end.empty());  // chip 0's transfers' times are not the schedule's
  AlgorithmOptions algo;
  algo.algorithm = "torus";
  algo.chunks = chunks;
  const Schedule schedule = BuildSchedule(spec, topology, algo);
  FlowNetwork flow(topology);
  TimingOptions recorded = options;
  recorded.record_transfers = true;
  const TimingResult full = RunTiming(schedule, topology, flow, recorded);
  const int64_t events = static_cast<int64_t>(full.steps.size()) + 8;
  // Each partition's part ends with its last transfer in or out.
  std::vector<Time> done(static_cast<size_t>(topology.num_cores()), options.fixed_overhead);
  for (size_t i = 0; i < schedule.transfers.size(); ++i) {
    for (const int64_t p : {schedule.transfers[i].src, schedule.transfers[i].dst}) {
      done[static_cast<size_t>(p)] = std::max(done[static_cast<size_t>(p)], full.transfer_end[i]);
    }
  }
  const int64_t cpc = topology.cores_per_chip();
  REQUIRE(fast_timing->done_by_local_core.size() == static_cast<size_t>(cpc));
  for (size_t p = 0; p < done.size(); ++p) {
    INFO("partition " << p);
    const Time mine = fast_timing->done_by_local_core[p % static_cast<size_t>(cpc)];
    CHECK(std::abs(mine.picos() - done[p].picos()) <= 4 * events);
  }
  CHECK(std::abs(fast->total.picos() - full.total.picos()) <= 4 * events);
  CHECK(fast->network_transfers == full.network_transfers);
  CHECK(fast->network_bytes == full.network_bytes);
  CHECK(fast->local_bytes == full.local_bytes);
  REQUIRE(fast->steps.size() == full.steps.size());
  for (size_t s = 0; s < full.steps.size(); ++s) {
    INFO("step " << s);
    CHECK(fast->steps[s].transfers == full.steps[s].transfers);
    CHECK(fast->steps[s].bytes == full.steps[s].bytes);
    CHECK(std::abs(fast->steps[s].end.picos() - full.steps[s].end.picos()) <= 4 * events);
  }
  REQUIRE(fast->link_bytes.size() == full.link_bytes.size());
  for (size_t l = 0; l < full.link_bytes.size(); ++l) {
    INFO("link " << l);
    CHECK(fast->link_bytes[l] == doctest::Approx(full.link_bytes[l]).epsilon(1e-9));
  }
  CHECK(fast->busiest_link_bytes == doctest::Approx(full.busiest_link_bytes).epsilon(1e-9));
}

TEST_CASE("symmetric torus: the same times, bytes and link loads as the whole schedule") {
  // 3D with four cores per chip (three rotations, an on-chip ring first), rings of 3 (odd) and
  // 4, a 2-chip axis without wraparound (one orbit for its two directions), a core axis of 2.
  const auto cube = LoadTorus(R"({"kind": "torus", "dims": [4, 4, 4], "cores_per_chip": 4,
      "link_bandwidth": 4.5e10, "hop_latency_us": 1})");
  const auto odd = LoadTorus(R"({"kind": "torus", "dims": [3, 4], "cores_per_chip": 2,
      "link_bandwidth": 1e11, "hop_latency_us": 0.5})");
  const auto two = LoadTorus(R"({"kind": "torus", "dims": [2, 4], "cores_per_chip": 2,
      "wraparound": [false, true], "link_bandwidth": 2.8e10, "hop_latency_us": 0.25})");
  const auto single = LoadTorus(R"({"kind": "torus", "dims": [4, 4, 2], "cores_per_chip": 1})");
  // Payloads: 8 MiB of floats (24 members: 8 MiB - 8 B), and an odd multiple of the group (odd
  // slots: the parts of a rotation differ by an element per slot).
  for (const topo::Topology* t : {cube.get(), odd.get(), two.get(), single.get()}) {
    const int64_t g = t->num_cores();
    for (const CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather}) {
      CheckTorusAgainstFullModel(*t, kind, (int64_t{2} << 20) / g * g);
      CheckTorusAgainstFullModel(*t, kind, 37 * g);
    }
  }
  // All-gather slots are whole inputs: any size.
  CheckTorusAgainstFullModel(*odd, CollectiveKind::kAllGather, 1001);
}

TEST_CASE("symmetric torus: where the shortcut does not apply, it says so") {
  const auto torus = LoadTorus(R"({"kind": "torus", "dims": [4, 4], "cores_per_chip": 2})");
  const CollectiveSpec spec = TorusSpec(CollectiveKind::kAllReduce, 32 * 64);
  const TimingOptions options;
  CHECK(TimeSymmetricTorus(spec, *torus, "torus", 1, "flow", options).has_value());
  CHECK_FALSE(TimeSymmetricTorus(spec, *torus, "torus", 1, "analytic", options).has_value());
  CHECK_FALSE(TimeSymmetricTorus(spec, *torus, "ring-bidir", 1, "flow", options).has_value());
  TimingOptions recorded;
  recorded.record_transfers = true;
  CHECK_FALSE(TimeSymmetricTorus(spec, *torus, "torus", 1, "flow", recorded).has_value());
  // Slots of different sizes: 2049 elements over 32 members.
  CHECK_FALSE(TimeSymmetricTorus(TorusSpec(CollectiveKind::kAllReduce, 2049), *torus, "torus", 1,
                                 "flow", options)
                  .has_value());
  // Sub-chunks: the chip at position q of a ring receives its next piece from sub-chunk q, which
  // the send queue delays after the others; not the same on every chip.
  CHECK_FALSE(TimeSymmetricTorus(spec, *torus, "torus", 2, "flow", options).has_value());
  // Groups other than every core in order.
  CollectiveSpec halves = spec;
  halves.replica_groups = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                           {16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}};
  CHECK_FALSE(TimeSymmetricTorus(halves, *torus, "torus", 1, "flow", options).has_value());
  // A line of more than 2 chips has ends: no translation symmetry.
  const auto mesh = LoadTorus(R"({"kind": "mesh", "dims": [4, 4]})");
  CHECK_FALSE(TimeSymmetricTorus(spec, *mesh, "torus", 1, "flow", options).has_value());
  // A twisted torus is left to the whole schedule.
  const auto twisted = LoadTorus(R"({"kind": "torus", "dims": [2, 2, 4],
      "twist": {"dim": 0, "offsets": [0, 0, 2]}})");
  CHECK_FALSE(TimeSymmetricTorus(TorusSpec(CollectiveKind::kAllReduce, 16 * 64), *twisted, "torus",
                                 1, "flow", options)
                  .has_value());
}

}  // namespace
}  // namespace podsim::sim
