// The orbit-reduced flow timing of a direct AllToAll (sim/collectives/symmetric_timing.h) against
// the full flow model on the schedule BuildSchedule makes (the reference implementation: every
// flow simulated), and against times derived by hand.

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/schedule_executor.h"
#include "sim/collectives/schedule_index.h"
#include "sim/collectives/symmetric_timing.h"
#include "sim/collectives/timing.h"
#include "sim/network/flow_network.h"
#include "sim/network/symmetric_flow.h"
#include "tests/sim/collectives/collectives_test_util.h"
#include "topologies/load.h"
#include "topologies/torus.h"

namespace podsim::sim {
namespace {

std::unique_ptr<topo::Topology> Load(const std::string& json) {
  return topo::LoadTopology(nlohmann::json::parse(json), "topology");
}

CollectiveSpec AllToAll(int64_t elements) {
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllToAll;
  spec.elements = elements;
  return spec;
}

// Both ways; the times agree within a few picoseconds per event (sums rounded in another order)
// and everything counted agrees exactly.
void CheckAgainstFullModel(const topo::Topology& topology, int64_t elements, const TimingOptions& options) {
  INFO(topology.name() << ", " << elements << " elements");
  const CollectiveSpec spec = AllToAll(elements);
  const std::optional<SymmetricTiming> fast = TimeSymmetricAllToAll(spec, topology, "", "flow", options);
  REQUIRE(fast.has_value());
  AlgorithmOptions algo;
  algo.algorithm = "direct";
  const Schedule schedule = BuildSchedule(spec, topology, algo);
  FlowNetwork flow(topology);
  TimingOptions recorded = options;
  recorded.record_transfers = true;
  const TimingResult full = RunTiming(schedule, topology, flow, recorded);
  const TimingResult& t = fast->timing;

  CHECK(std::abs(t.total.picos() - full.total.picos()) <= 16);
  CHECK(t.network_transfers == full.network_transfers);
  CHECK(t.network_bytes == full.network_bytes);
  CHECK(t.local_bytes == full.local_bytes);
  REQUIRE(full.steps.size() == 1);
  REQUIRE(t.steps.size() == 1);
  CHECK(t.steps[0].start == full.steps[0].start);
  CHECK(std::abs(t.steps[0].end.picos() - full.steps[0].end.picos()) <= 16);
  CHECK(t.steps[0].transfers == full.steps[0].transfers);
  CHECK(t.steps[0].bytes == full.steps[0].bytes);
  REQUIRE(t.link_bytes.size() == full.link_bytes.size());
  for (size_t l = 0; l < t.link_bytes.size(); ++l) {
    CHECK(t.link_bytes[l] == doctest::Approx(full.link_bytes[l]).epsilon(1e-12));
  }
  CHECK(t.busiest_link_bytes == doctest::Approx(full.busiest_link_bytes).epsilon(1e-12));
  // Bytes over time: the times may differ by 16 ps in a total of at least a microsecond.
  CHECK(t.max_link_utilization == doctest::Approx(full.max_link_utilization).epsilon(2e-5));
  // Per core: its last transfer in or out.
  const int64_t cpc = topology.cores_per_chip();
  std::vector<Time> done(static_cast<size_t>(topology.num_cores()), options.fixed_overhead);
  for (size_t i = 0; i < schedule.transfers.size(); ++i) {
    for (int64_t p : {schedule.transfers[i].src, schedule.transfers[i].dst}) {
      done[static_cast<size_t>(p)] = std::max(done[static_cast<size_t>(p)], full.transfer_end[i]);
    }
  }
  for (int64_t p = 0; p < topology.num_cores(); ++p) {
    CHECK(std::abs(fast->done_by_local_core[static_cast<size_t>(p % cpc)].picos() -
                   done[static_cast<size_t>(p)].picos()) <= 16);
  }
}

TEST_CASE("ring of 3: each block crosses one link alone, so B / bandwidth + one hop") {
  // 1 core per chip, 3 chips: chip x sends to x+1 over its + link and to x-1 over its - link;
  // every directed link carries one flow. 3000 elements x 4 B / 3 = 4000 B per block at 1e9 B/s:
  // 4 us + 1 us latency.
  auto ring = testing::Grid({3}, {true}, 1, 1e9, 1.0);
  TimingOptions options;
  const auto fast = TimeSymmetricAllToAll(AllToAll(3000), *ring, "", "flow", options);
  REQUIRE(fast.has_value());
  CHECK(fast->timing.total.picos() == 5'000'000);
  CHECK(fast->timing.network_transfers == 6);
  for (double b : fast->timing.link_bytes) CHECK(b == 4000.0);
  CHECK(fast->timing.busiest_link == 0);  // all tie: the lowest id
  CheckAgainstFullModel(*ring, 3000, options);
}

TEST_CASE("ring of 4 with a split tie: the opposite block halves over both ways") {
  // Chip x sends 4000 B to x+1 (+ link), x-1 (- link) and x+2 (2 hops, split: 2000 B each way).
  // Each + link carries its own +1 block, and the + halves of the +2 blocks of two sources
  // (x and x-1): 3 flows (4000, 2000, 2000 B) at 1e9/3 B/s each; the 2000 B halves end at
  // 6 us (+2 us latency), then the 4000 B one has 2000 B left alone: 2 us more, 8 us + 1 us.
  // The split transfers: 6 us + 2 hops = 8 us. Total 9 us.
  auto ring = testing::Grid({4}, {true}, 1, 1e9, 1.0);
  REQUIRE(dynamic_cast<const topo::TorusTopology*>(ring.get())->config().tie_break ==
          topo::TieBreak::kSplit);
  TimingOptions options;
  const auto fast = TimeSymmetricAllToAll(AllToAll(4000), *ring, "", "flow", options);
  REQUIRE(fast.has_value());
  CHECK(std::abs(fast->timing.total.picos() - 9'000'000) <= 2);
  CheckAgainstFullModel(*ring, 4000, options);
}

TEST_CASE("the reduced solve equals the full flow model on tori of every kind it accepts") {
  TimingOptions options;
  options.fixed_overhead = Time::FromMicros(3);
  CheckAgainstFullModel(*testing::Grid({4, 4}, {true, true}, 1), 4096, options);
  CheckAgainstFullModel(*testing::Grid({3, 5}, {true, true}, 1), 15 * 64, options);
  CheckAgainstFullModel(*testing::Grid({2, 3, 4}, {true, true, true}, 1), 24 * 32, options);
  // 2 cores per chip: on-chip links and two sources per chip.
  CheckAgainstFullModel(*testing::Grid({4, 4}, {true, true}, 2), 32 * 100, options);
  CheckAgainstFullModel(*testing::Grid({3, 3}, {true, true}, 4), 36 * 10, options);
  // A 2-chip line (no wraparound, one link each way) beside a ring, as in tpu-v3-16.
  CheckAgainstFullModel(*testing::Grid({2, 4}, {false, true}, 2), 16 * 256, options);
  // Tie break "positive", parallel links and a different on-chip bandwidth.
  CheckAgainstFullModel(*Load(R"({"kind": "torus", "dims": [4, 6], "tie_break": "positive",
      "links_per_neighbor": 2, "cores_per_chip": 2, "on_chip_bandwidth": 3e10,
      "link_bandwidth": 1e10, "hop_latency_us": 0.5})"), 48 * 20, options);
  // "alternate" with odd rings only (no ties).
  CheckAgainstFullModel(*Load(R"({"kind": "torus", "dims": [3, 5], "tie_break": "alternate"})"),
                        15 * 8, options);
  // Local copies with a bandwidth: the core's own block takes time too.
  TimingOptions copies = options;
  copies.local_copy_bandwidth = 1e9;
  CheckAgainstFullModel(*testing::Grid({2, 2}, {true, true}, 2), 8 * 1000, copies);
}

// Two all-to-alls of different sizes, the second started while the first runs (the overlap the
// program runner solves by symmetry, sim/program/collective_executor.h): the reduced solve with
// per-wave starts against both schedules run on one full flow model.
TEST_CASE("waves with their own starts: the reduced solve equals the full flow model") {
  const auto torus = testing::Grid({4, 4}, {true, true}, 2);
  const int64_t g = torus->num_cores();
  const int64_t elements[2] = {g * 300, g * 100};
  // The second starts 10 ns after the first, while the first's data is still moving.
  const Time starts[2] = {Time::FromMicros(1), Time::FromMicros(1.01)};
  std::vector<RepresentativeTransfer> reps;
  std::vector<size_t> wave_of;
  for (size_t w = 0; w < 2; ++w) {
    auto found = SymmetricAllToAllTransfers(AllToAll(elements[w]), *torus, "");
    REQUIRE(found.has_value());
    for (RepresentativeTransfer x : *found) {
      x.start = starts[w];
      reps.push_back(x);
      wave_of.push_back(w);
    }
  }
  const auto fast = SolveSymmetricFlow(*torus, reps, Time());
  REQUIRE(fast.has_value());
  const int64_t cpc = torus->cores_per_chip();
  std::vector<std::vector<Time>> fast_done(2, std::vector<Time>(static_cast<size_t>(cpc)));
  for (size_t r = 0; r < reps.size(); ++r) {
    for (int64_t core : {reps[r].src_core, reps[r].dst_core % cpc}) {
      Time& d = fast_done[wave_of[r]][static_cast<size_t>(core)];
      d = std::max(d, fast->done[r]);
    }
  }

  AlgorithmOptions algo;
  algo.algorithm = "direct";
  FlowNetwork flow(*torus);
  ScheduleExecutor executor(flow, ScheduleExecutor::Options{});
  std::vector<std::vector<Time>> full_done(2, std::vector<Time>(static_cast<size_t>(g)));
  std::vector<Schedule> schedules;
  std::vector<ScheduleIndex> indices;
  for (size_t w = 0; w < 2; ++w) schedules.push_back(BuildSchedule(AllToAll(elements[w]), *torus, algo));
  for (size_t w = 0; w < 2; ++w) indices.push_back(IndexSchedule(schedules[w]));
  std::vector<int64_t> everyone(static_cast<size_t>(g));
  for (int64_t p = 0; p < g; ++p) everyone[static_cast<size_t>(p)] = p;
  for (size_t w = 0; w < 2; ++w) {
    ScheduleExecutor::Callbacks cb;
    cb.device_done = [&full_done, w](int64_t p, Time t) { full_done[w][static_cast<size_t>(p)] = t; };
    executor.Start(schedules[w], indices[w], nullptr, everyone, starts[w], std::move(cb));
  }
  executor.AdvanceTo(Time::Max());
  // The second wave slows the first: the first alone would end earlier.
  const auto alone = TimeSymmetricAllToAll(AllToAll(elements[0]), *torus, "", "flow", TimingOptions{});
  REQUIRE(alone.has_value());
  CHECK(fast_done[0][0] > starts[0] + alone->timing.total);
  for (size_t w = 0; w < 2; ++w) {
    for (int64_t p = 0; p < g; ++p) {
      INFO("wave " << w << ", core " << p);
      CHECK(std::abs(fast_done[w][static_cast<size_t>(p % cpc)].picos() -
                     full_done[w][static_cast<size_t>(p)].picos()) <= 16);
    }
  }
}

TEST_CASE("a wave that starts when another's data ends: the ending flows leave first") {
  // Ring of 3 as above: each 4000 B block crosses one link alone, data 4 us, then 1 us of
  // latency. A second all-to-all starting at 4 us exactly meets no flow of the first (they end
  // then, and leave before it joins, as in the flow model), so the first is done at 5 us and
  // the second at 4 + 5 = 9 us, to the picosecond.
  auto ring = testing::Grid({3}, {true}, 1, 1e9, 1.0);
  std::vector<RepresentativeTransfer> reps;
  for (const Time start : {Time(), Time::FromMicros(4)}) {
    auto found = SymmetricAllToAllTransfers(AllToAll(3000), *ring, "");
    REQUIRE(found.has_value());
    for (RepresentativeTransfer x : *found) {
      x.start = start;
      reps.push_back(x);
    }
  }
  const auto fast = SolveSymmetricFlow(*ring, reps, Time());
  REQUIRE(fast.has_value());
  REQUIRE(fast->done.size() == 4);
  for (size_t r = 0; r < 4; ++r) CHECK(fast->done[r].picos() == (r < 2 ? 5'000'000 : 9'000'000));
}

TEST_CASE("the TPU v3 presets' Figure 9 slices are symmetric and agree with the full model") {
  TimingOptions options;
  options.fixed_overhead = Time::FromMicros(25);
  for (const char* preset : {"tpu-v3-16", "tpu-v3-32", "tpu-v3-64"}) {
    auto t = topo::LoadTopology(nlohmann::json(preset), "topology");
    CheckAgainstFullModel(*t, 2 << 20, options);
  }
}

TEST_CASE("where translations are not symmetries, the shortcut declines") {
  TimingOptions options;
  const CollectiveSpec spec = AllToAll(4096);
  // A line of 3 has ends; a twisted torus's routes are not translates; "alternate" breaks the
  // ties of an even ring by parity; a custom graph has no translations.
  CHECK_FALSE(TranslationSymmetric(*testing::Grid({3, 4}, {false, true})));
  CHECK_FALSE(TranslationSymmetric(*topo::LoadTopology(nlohmann::json("tpu-v4-256-twisted"), "topology")));
  CHECK_FALSE(TranslationSymmetric(*Load(R"({"kind": "torus", "dims": [4, 4], "tie_break": "alternate"})")));
  CHECK_FALSE(TranslationSymmetric(*topo::LoadTopology(nlohmann::json("hypercube-16"), "topology")));
  auto torus = testing::Grid({4, 4}, {true, true});
  CHECK(TranslationSymmetric(*torus));
  // Not flow, not direct, uneven blocks, a subgroup, per-transfer times: declined.
  CHECK_FALSE(TimeSymmetricAllToAll(spec, *torus, "", "analytic", options).has_value());
  CHECK_FALSE(TimeSymmetricAllToAll(spec, *torus, "dim-staged", "flow", options).has_value());
  CHECK_FALSE(TimeSymmetricAllToAll(AllToAll(4097), *torus, "", "flow", options).has_value());
  CollectiveSpec half = spec;
  half.replica_groups = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
  CHECK_FALSE(TimeSymmetricAllToAll(half, *torus, "", "flow", options).has_value());
  TimingOptions recorded;
  recorded.record_transfers = true;
  CHECK_FALSE(TimeSymmetricAllToAll(spec, *torus, "", "flow", recorded).has_value());
  CHECK(TimeSymmetricAllToAll(spec, *torus, "direct", "flow", options).has_value());
}

}  // namespace
}  // namespace podsim::sim
