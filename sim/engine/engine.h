#pragma once
// A discrete-event engine: a clock in integer picoseconds and a queue of callbacks ordered by
// (time, sequence number), so events at the same time run in the order they were scheduled and
// every run is deterministic. No global state: each Engine is independent (ns-3's Simulator
// without statics). The engine knows nothing of links or devices; models schedule callbacks.

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "base/units.h"

namespace podsim::sim {

// Handle of a scheduled event, for Cancel. Default-constructed: refers to no event.
struct EventId {
  uint64_t seq = 0;   // sequence number (1, 2, ...; 0: none), the tie-breaker at equal times
  uint32_t slot = 0;  // index of the callback slot inside the engine
};

class Engine {
 public:
  using Callback = std::function<void()>;

  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Current simulated time: the time of the event running now, or of the last one run.
  Time now() const { return now_; }

  // Runs `callback` at absolute time `at` (>= now(); throws podsim::Error otherwise).
  EventId Schedule(Time at, Callback callback);
  // Runs `callback` after `delay` (>= 0) from now().
  EventId ScheduleAfter(Time delay, Callback callback) { return Schedule(now_ + delay, std::move(callback)); }
  // Removes a pending event; returns false if it already ran, was cancelled, or is unknown.
  bool Cancel(EventId id);

  // Runs the earliest pending event; returns false when none is left.
  bool Step();
  // Runs events until none is left or Stop() is called from a callback.
  void Run();
  // Runs every event with time <= t, then sets now() to t (t >= now()).
  void RunUntil(Time t);
  // Makes Run() / RunUntil() return after the current event.
  void Stop() { stop_requested_ = true; }

  // Events scheduled and not yet run or cancelled.
  int64_t pending() const { return pending_; }
  // Events run so far.
  int64_t events_run() const { return events_run_; }
  // Time of the earliest pending event; Time::Max() when none.
  Time NextEventTime();

 private:
  struct QueueEntry {
    Time time;
    uint64_t seq;
    uint32_t slot;
    // std::priority_queue is a max-heap: "greater" means later.
    bool operator<(const QueueEntry& o) const {
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };
  struct Slot {
    uint64_t seq = 0;  // seq of the event occupying the slot; 0 when free
    Callback callback;
  };

  // Drops cancelled entries from the top of the queue.
  void SkipCancelled();

  Time now_;
  uint64_t next_seq_ = 1;
  int64_t pending_ = 0;
  int64_t events_run_ = 0;
  bool stop_requested_ = false;
  std::priority_queue<QueueEntry> queue_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
};

}  // namespace podsim::sim
