// The one schedule executor: dependencies, local copies, device completion, and two runs that
// share a link, against times derived by hand on a 4-chip ring (1e9 B/s per link and
// direction, 1 us per hop; sim/network/flow_network.h shares a link max-min fairly).

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "base/error.h"
#include "sim/collectives/schedule_executor.h"
#include "sim/collectives/schedule_index.h"
#include "sim/network/flow_network.h"
#include "tests/sim/collectives/collectives_test_util.h"

namespace podsim::sim {
namespace {

using testing::Grid;

constexpr int64_t kUs = 1'000'000;  // picoseconds

// A schedule over 4 partitions whose transfers are given as (src, dst, bytes, deps).
struct Hop {
  int32_t src, dst;
  int64_t bytes;
  std::vector<int32_t> deps;
};
Schedule Make(const std::vector<Hop>& hops) {
  Schedule s;
  s.num_partitions = 4;
  s.element_bytes = 1;
  for (const Hop& h : hops) {
    ChunkTransfer t;
    t.src = h.src;
    t.dst = h.dst;
    t.elements = h.bytes;
    t.first_dep = static_cast<int32_t>(s.dep_index.size());
    t.num_deps = static_cast<int32_t>(h.deps.size());
    s.dep_index.insert(s.dep_index.end(), h.deps.begin(), h.deps.end());
    s.transfers.push_back(t);
  }
  s.num_steps = 1;
  return s;
}

void RunToEnd(ScheduleExecutor& x) {
  for (Time t = x.NextEventTime(); t != Time::Max(); t = x.NextEventTime()) x.AdvanceTo(t);
}

TEST_CASE("a chain: 0->1, then a local copy on 1, then 1->2") {
  auto ring = Grid({4}, {true}, 1, 1e9, 1.0);
  FlowNetwork flow(*ring);
  // 1000 B over one hop: 1 us + 1 us. The local copy of 1000 B at 1e9 B/s: 1 us. Then 1->2:
  // 2 us. Overhead 0.5 us first: done at 0.5 + 2 + 1 + 2 = 5.5 us.
  const Schedule s = Make({{0, 1, 1000, {}}, {1, 1, 1000, {0}}, {1, 2, 1000, {1}}});
  const ScheduleIndex index = IndexSchedule(s);
  ScheduleExecutor x(flow, {Time::FromMicros(0.5), 1e9});
  std::vector<Time> started(3), done(3), device(4, Time::Max());
  Time finished = Time::Max();
  ScheduleExecutor::Callbacks cb;
  cb.started = [&](int32_t k, Time t) { started[static_cast<size_t>(k)] = t; };
  cb.done = [&](int32_t k, Time t) { done[static_cast<size_t>(k)] = t; };
  cb.device_done = [&](int64_t p, Time t) { device[static_cast<size_t>(p)] = t; };
  cb.finished = [&](Time t) { finished = t; };
  x.Start(s, index, nullptr, {0, 1, 2, 3}, Time(), cb);
  RunToEnd(x);
  CHECK(started[0].picos() == kUs / 2);
  CHECK(done[0].picos() == 5 * kUs / 2);
  CHECK(started[1] == done[0]);
  CHECK(done[1].picos() == 7 * kUs / 2);
  CHECK(done[2].picos() == 11 * kUs / 2);
  CHECK(finished.picos() == 11 * kUs / 2);
  // Partition 0's last transfer is the first; 3 has none, so it is done when the run starts.
  CHECK(device[0] == done[0]);
  CHECK(device[1] == done[2]);
  CHECK(device[2] == done[2]);
  CHECK(device[3].picos() == kUs / 2);
  CHECK(x.idle());
}

TEST_CASE("two runs on one link share it; a later run starts at its own time") {
  auto ring = Grid({4}, {true}, 1, 1e9, 1.0);
  FlowNetwork flow(*ring);
  // Run A: 0->1, 4000 B, from 0. Run B: 0->1, 2000 B, from 1 us; link 0->1 is the only one
  // used. A's bytes flow after its 1 us hop latency: alone at 1e9 B/s over [1, 2) us (1000 B).
  // B's bytes flow from 2 us; from then the link is shared, 0.5e9 B/s each. B's 2000 B take
  // 4 us: done at 6 us, when A has sent 1000 + 2000 = 3000 B; A's last 1000 B alone take 1 us:
  // done at 7 us.
  const Schedule a = Make({{0, 1, 4000, {}}});
  const Schedule b = Make({{0, 1, 2000, {}}});
  const ScheduleIndex ia = IndexSchedule(a), ib = IndexSchedule(b);
  ScheduleExecutor x(flow, {});
  Time done_a = Time::Max(), done_b = Time::Max();
  ScheduleExecutor::Callbacks ca, cb;
  ca.finished = [&](Time t) { done_a = t; };
  cb.finished = [&](Time t) { done_b = t; };
  x.Start(a, ia, nullptr, {}, Time(), ca);
  x.AdvanceTo(Time::Picos(kUs));
  x.Start(b, ib, nullptr, {}, Time::Picos(kUs), cb);
  RunToEnd(x);
  CHECK(done_b.picos() == 6 * kUs);
  CHECK(done_a.picos() == 7 * kUs);
  CHECK(x.unfinished_transfers() == 0);
}

TEST_CASE("a transfer whose deps never complete is reported, not lost") {
  auto ring = Grid({4}, {true}, 1, 1e9, 1.0);
  FlowNetwork flow(*ring);
  // Transfer 1 waits for transfer 2, which waits for 1: neither starts.
  const Schedule s = Make({{0, 1, 100, {}}, {1, 2, 100, {2}}, {2, 3, 100, {1}}});
  const ScheduleIndex index = IndexSchedule(s);
  ScheduleExecutor x(flow, {});
  x.Start(s, index, nullptr, {}, Time(), {});
  RunToEnd(x);
  CHECK(x.unfinished_transfers() == 2);
  CHECK_FALSE(x.idle());
}

TEST_CASE("the index rejects a transfer outside the schedule's partitions") {
  const Schedule s = Make({{0, 7, 100, {}}});
  CHECK_THROWS_WITH_AS(IndexSchedule(s), "schedule: transfer 0 names partition 7, outside [0, 4)",
                       Error);
}

}  // namespace
}  // namespace podsim::sim
