// The collective link trace counts bytes as the timing run does.

#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "report/chrome_trace.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "topologies/load.h"

namespace podsim::report {
namespace {

TEST_CASE("collective link trace: a tie-split transfer's bytes go half to each direction") {
  // torus-4x4 splits ties: chip 0 -> chip 2 is two hops either way round its row, half the
  // bytes each way. The trace's bytes per link must equal the timing run's link_bytes.
  const auto torus = topo::LoadTopology("torus-4x4");
  sim::CollectiveSpec spec;
  spec.kind = sim::CollectiveKind::kCollectivePermute;
  spec.elements = 1024;
  spec.source_target_pairs = {{0, 2}};
  const sim::Schedule schedule = sim::BuildSchedule(spec, *torus);
  auto network = sim::MakeNetworkModel("flow", *torus, {});
  sim::TimingOptions options;
  options.record_transfers = true;
  const sim::TimingResult timing = sim::RunTiming(schedule, *torus, *network, options);
  const nlohmann::json trace = CollectiveLinkTrace(schedule, timing, *torus, "torus-4x4", 1000);
  std::map<int64_t, double> traced;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") traced[e["tid"].get<int64_t>()] += e["args"]["bytes"].get<double>();
  }
  std::map<int64_t, double> timed;
  for (size_t l = 0; l < timing.link_bytes.size(); ++l) {
    if (timing.link_bytes[l] > 0) timed[static_cast<int64_t>(l)] = timing.link_bytes[l];
  }
  CHECK(traced == timed);
  // 4 links (2 hops each way), 2048 B each: half of 4096.
  CHECK(traced.size() == 4);
  for (const auto& [link, bytes] : traced) CHECK(bytes == 2048);
}

TEST_CASE("the busiest link is the longest busy one, and has the largest utilisation") {
  // A line 0 - 1 - 2 whose second edge is 10x slower: a permute 0->1, 1->2 puts the same bytes
  // on both, but the slow link is busy 10x longer.
  const auto line = topo::LoadTopology(nlohmann::json{
      {"kind", "custom"}, {"name", "line"}, {"num_chips", 3},
      {"edges", {{0, 1}, {{"chips", {1, 2}}, {"link_bandwidth", 1e10}}}}}, "topology");
  sim::CollectiveSpec spec;
  spec.kind = sim::CollectiveKind::kCollectivePermute;
  spec.elements = 1 << 16;
  spec.source_target_pairs = {{0, 1}, {1, 2}};
  const sim::Schedule schedule = sim::BuildSchedule(spec, *line);
  auto network = sim::MakeNetworkModel("flow", *line, {});
  const sim::TimingResult timing = sim::RunTiming(schedule, *line, *network);
  REQUIRE(timing.busiest_link >= 0);
  const topo::Link& busiest = line->links()[static_cast<size_t>(timing.busiest_link)];
  CHECK(busiest.src_chip == 1);
  CHECK(busiest.dst_chip == 2);
  CHECK(timing.busiest_link_utilization == timing.max_link_utilization);
}

}  // namespace
}  // namespace podsim::report
