#include "sim/engine/engine.h"

#include <string>
#include <utility>

#include "base/error.h"

namespace podsim::sim {

EventId Engine::Schedule(Time at, Callback callback) {
  if (at < now_) {
    throw Error("Engine::Schedule: event time " + std::to_string(at.picos()) +
                " ps is before the current time " + std::to_string(now_.picos()) + " ps");
  }
  if (!callback) throw Error("Engine::Schedule: empty callback");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const uint64_t seq = next_seq_++;
  slots_[slot].seq = seq;
  slots_[slot].callback = std::move(callback);
  queue_.push(QueueEntry{at, seq, slot});
  ++pending_;
  return EventId{seq, slot};
}

bool Engine::Cancel(EventId id) {
  if (id.seq == 0 || id.slot >= slots_.size() || slots_[id.slot].seq != id.seq) return false;
  // The queue entry stays until it reaches the top; its slot no longer matches its seq.
  slots_[id.slot].seq = 0;
  slots_[id.slot].callback = nullptr;
  free_slots_.push_back(id.slot);
  --pending_;
  return true;
}

void Engine::SkipCancelled() {
  while (!queue_.empty() && slots_[queue_.top().slot].seq != queue_.top().seq) queue_.pop();
}

Time Engine::NextEventTime() {
  SkipCancelled();
  return queue_.empty() ? Time::Max() : queue_.top().time;
}

bool Engine::Step() {
  SkipCancelled();
  if (queue_.empty()) return false;
  const QueueEntry entry = queue_.top();
  queue_.pop();
  Slot& slot = slots_[entry.slot];
  Callback callback = std::move(slot.callback);
  slot.seq = 0;
  slot.callback = nullptr;
  free_slots_.push_back(entry.slot);
  --pending_;
  now_ = entry.time;
  ++events_run_;
  callback();  // may schedule or cancel events; slots_ may reallocate
  return true;
}

void Engine::Run() {
  stop_requested_ = false;
  while (!stop_requested_ && Step()) {
  }
}

void Engine::RunUntil(Time t) {
  if (t < now_) {
    throw Error("Engine::RunUntil: time " + std::to_string(t.picos()) + " ps is before the current time " +
                std::to_string(now_.picos()) + " ps");
  }
  stop_requested_ = false;
  while (!stop_requested_ && NextEventTime() <= t) Step();
  if (!stop_requested_) now_ = t;
}

}  // namespace podsim::sim
