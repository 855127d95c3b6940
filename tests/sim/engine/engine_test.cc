#include "sim/engine/engine.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/units.h"

namespace podsim::sim {
namespace {

TEST_CASE("TransferTime rounds up to whole picoseconds") {
  // 100 B at 100 B/s: exactly 1 s = 1e12 ps.
  CHECK(TransferTime(Bytes{100}, BytesPerSecond{100}).picos() == 1'000'000'000'000);
  // 1 B at 3 B/s: 333333333333.33 ps -> 333333333334.
  CHECK(TransferTime(Bytes{1}, BytesPerSecond{3}).picos() == 333'333'333'334);
  // 8 MiB at 1e11 B/s: 8388608 * 10 ps = 83886080 ps exactly.
  CHECK(TransferTime(Bytes{8 << 20}, BytesPerSecond{1e11}).picos() == 83'886'080);
  CHECK(TransferTime(Bytes{0}, BytesPerSecond{1e11}).picos() == 0);
  CHECK_THROWS_AS(TransferTime(Bytes{1}, BytesPerSecond{0}), Error);
  CHECK_THROWS_AS(TransferTime(Bytes{-1}, BytesPerSecond{1}), Error);
}

TEST_CASE("Engine runs events in (time, sequence) order") {
  Engine engine;
  std::vector<std::string> log;
  engine.Schedule(Time::Picos(30), [&] { log.push_back("c@30"); });
  engine.Schedule(Time::Picos(10), [&] { log.push_back("a@10"); });
  engine.Schedule(Time::Picos(10), [&] { log.push_back("b@10"); });  // same time: scheduled later, runs later
  engine.Schedule(Time::Picos(20), [&] {
    log.push_back("x@20");
    // Scheduled from a callback at the current time: runs after everything already at 20.
    engine.ScheduleAfter(Time(), [&] { log.push_back("y@20"); });
  });
  engine.Schedule(Time::Picos(20), [&] { log.push_back("z@20"); });
  engine.Run();
  CHECK(log == std::vector<std::string>{"a@10", "b@10", "x@20", "z@20", "y@20", "c@30"});
  CHECK(engine.now() == Time::Picos(30));
  CHECK(engine.events_run() == 6);
  CHECK(engine.pending() == 0);
}

TEST_CASE("Engine cancel, RunUntil, Stop") {
  Engine engine;
  int ran = 0;
  const EventId a = engine.Schedule(Time::Picos(5), [&] { ran += 1; });
  engine.Schedule(Time::Picos(7), [&] { ran += 10; });
  const EventId c = engine.Schedule(Time::Picos(9), [&] { ran += 100; });
  CHECK(engine.Cancel(a));
  CHECK_FALSE(engine.Cancel(a));  // already cancelled
  CHECK(engine.pending() == 2);
  CHECK(engine.NextEventTime() == Time::Picos(7));
  engine.RunUntil(Time::Picos(8));
  CHECK(ran == 10);
  CHECK(engine.now() == Time::Picos(8));
  CHECK(engine.Cancel(c));
  CHECK(engine.NextEventTime() == Time::Max());
  CHECK_FALSE(engine.Step());

  // A cancelled event's slot is reused; its old handle must not cancel the new event.
  const EventId d = engine.Schedule(Time::Picos(20), [&] { ran += 1000; });
  CHECK(d.slot == c.slot);
  CHECK_FALSE(engine.Cancel(c));
  engine.Schedule(Time::Picos(15), [&] { engine.Stop(); });
  engine.Run();
  CHECK(engine.now() == Time::Picos(15));
  CHECK(ran == 10);
  engine.Run();
  CHECK(ran == 1010);
}

TEST_CASE("Engine rejects the past; two engines are independent") {
  Engine a;
  Engine b;
  a.Schedule(Time::Picos(100), [] {});
  a.Run();
  CHECK_THROWS_AS(a.Schedule(Time::Picos(50), [] {}), Error);
  CHECK_THROWS_AS(a.RunUntil(Time::Picos(50)), Error);
  CHECK_THROWS_AS(a.Schedule(Time::Picos(200), Engine::Callback{}), Error);
  b.Schedule(Time::Picos(50), [] {});  // b's clock is its own
  b.Run();
  CHECK(a.now() == Time::Picos(100));
  CHECK(b.now() == Time::Picos(50));
}

TEST_CASE("Engine drives a self-rescheduling process") {
  // A process that wakes every 3 ps, 5 times: last wake-up at 12 ps.
  Engine engine;
  std::vector<int64_t> wakeups;
  std::function<void()> tick = [&] {
    wakeups.push_back(engine.now().picos());
    if (wakeups.size() < 5) engine.ScheduleAfter(Time::Picos(3), tick);
  };
  engine.Schedule(Time(), tick);
  engine.Run();
  CHECK(wakeups == std::vector<int64_t>{0, 3, 6, 9, 12});
}

}  // namespace
}  // namespace podsim::sim
