#include "sim/collectives/schedule_executor.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace podsim::sim {

ScheduleExecutor::ScheduleExecutor(NetworkModel& network, const Options& options)
    : network_(network), options_(options) {
  if (options.fixed_overhead.picos() < 0) throw Error("fixed_overhead: must be >= 0");
  if (options.local_copy_bandwidth < 0) throw Error("local_copy_bandwidth: must be >= 0");
}

int64_t ScheduleExecutor::Start(const Schedule& schedule, const ScheduleIndex& index,
                                std::shared_ptr<const void> keep_alive,
                                const std::vector<int64_t>& participants, Time start,
                                Callbacks callbacks) {
  auto run = std::make_unique<Run>();
  run->schedule = &schedule;
  run->index = &index;
  run->keep_alive = std::move(keep_alive);
  run->participants = participants;
  const int64_t n = static_cast<int64_t>(schedule.transfers.size());
  run->base = next_base_;
  next_base_ += std::max<int64_t>(1, n);
  run->remaining = index.deps;
  run->touches_left = index.touches;
  run->left = n;
  run->callbacks = std::move(callbacks);
  const int64_t base = run->base;
  pending_starts_.push({(start + options_.fixed_overhead).picos(), base});
  runs_[base] = std::move(run);
  return base;
}

Time ScheduleExecutor::NextEventTime() const {
  const Time t_net = network_.NextEventTime();
  const Time t_local = local_.empty() ? Time::Max() : Time::Picos(local_.top().first);
  const Time t_start = pending_starts_.empty() ? Time::Max() : Time::Picos(pending_starts_.top().first);
  return std::min({t_net, t_local, t_start});
}

void ScheduleExecutor::AdvanceTo(Time until) {
  while (true) {
    const Time t_net = network_.NextEventTime();
    const Time t_local = local_.empty() ? Time::Max() : Time::Picos(local_.top().first);
    const Time t_start = pending_starts_.empty() ? Time::Max() : Time::Picos(pending_starts_.top().first);
    const Time t = std::min({t_net, t_local, t_start});
    if (t == Time::Max() || t > until) break;
    if (t_net == t) {
      // Completions come in batches (an AllToAll: millions at a few times); prefetching the
      // nodes a few completions ahead hides most of their cache misses.
      // (Only with one run in flight; its nodes are captured first: a completion may finish
      // the run, and a prefetch of a freed address is harmless, a load from it is not.)
      const std::vector<TransferId> done = network_.Advance(t);
      const ScheduleIndex::Node* nodes = nullptr;
      int64_t base = 0, count = 0;
      if (runs_.size() == 1) {
        const Run& only = *runs_.begin()->second;
        nodes = only.index->nodes.data();
        base = only.base;
        count = static_cast<int64_t>(only.index->nodes.size());
      }
      constexpr size_t kAhead = 16;
      for (size_t i = 0; i < done.size(); ++i) {
        if (nodes != nullptr && i + kAhead < done.size()) {
          const int64_t k = done[i + kAhead] - base;
          if (k >= 0 && k < count) __builtin_prefetch(nodes + k);
        }
        Complete(done[i], t);
      }
      for (TransferId id : network_.TakeSent()) Sent(id, t);
    }
    while (!local_.empty() && local_.top().first == t.picos()) {
      const int64_t id = local_.top().second;
      local_.pop();
      Complete(id, t);
    }
    while (!pending_starts_.empty() && pending_starts_.top().first == t.picos()) {
      const int64_t base = pending_starts_.top().second;
      pending_starts_.pop();
      StartRoots(base, t);
    }
    while (!immediate_.empty()) {
      std::vector<int64_t> now;
      now.swap(immediate_);
      for (int64_t id : now) Complete(id, t);
    }
  }
}

int64_t ScheduleExecutor::unfinished_transfers() const {
  int64_t left = 0;
  for (const auto& [base, run] : runs_) left += run->left;
  return left;
}

void ScheduleExecutor::StartRoots(int64_t base, Time t) {
  auto it = runs_.find(base);
  if (it == runs_.end()) return;
  Run& run = *it->second;
  const std::vector<int32_t>& touches = run.index->touches;
  if (run.callbacks.device_done) {
    for (int64_t p : run.participants) {
      if (p < static_cast<int64_t>(touches.size()) && touches[static_cast<size_t>(p)] == 0) {
        run.callbacks.device_done(p, t);
      }
    }
  }
  if (run.left == 0) {
    Finish(base, t);
    return;
  }
  for (int32_t r : run.index->roots) StartTransfer(run, r, t);
}

void ScheduleExecutor::StartTransfer(Run& run, int32_t index, Time t) {
  const Schedule& s = *run.schedule;
  const ChunkTransfer& tr = s.transfers[static_cast<size_t>(index)];
  const int64_t bytes = s.Bytes(tr);
  const int64_t id = run.base + index;
  if (run.callbacks.started) run.callbacks.started(index, t);
  if (tr.local()) {
    if (options_.local_copy_bandwidth > 0 && bytes > 0) {
      const Time d = TransferTime(Bytes{bytes}, BytesPerSecond{options_.local_copy_bandwidth});
      local_.push({(t + d).picos(), id});
    } else {
      immediate_.push_back(id);
    }
    return;
  }
  network_.Start(id, tr.src, tr.dst, Bytes{bytes}, t);
}

ScheduleExecutor::Run* ScheduleExecutor::RunOf(int64_t id) {
  Run* found = last_run_;
  if (found == nullptr || id < found->base ||
      id >= found->base + static_cast<int64_t>(found->remaining.size())) {
    auto it = runs_.upper_bound(id);
    if (it == runs_.begin()) return nullptr;
    found = (--it)->second.get();
    if (id >= found->base + static_cast<int64_t>(found->remaining.size())) return nullptr;
    last_run_ = found;
  }
  return found;
}

void ScheduleExecutor::Sent(int64_t id, Time t) {
  // A run that has finished (its last transfer completed at this time) has nothing queued.
  Run* run = RunOf(id);
  if (run == nullptr || run->index->queue_next.empty()) return;
  const int32_t next = run->index->queue_next[static_cast<size_t>(id - run->base)];
  if (next >= 0 && --run->remaining[static_cast<size_t>(next)] == 0) StartTransfer(*run, next, t);
}

void ScheduleExecutor::Complete(int64_t id, Time t) {
  Run* found = RunOf(id);
  if (found == nullptr) throw Error("ScheduleExecutor: unknown transfer " + std::to_string(id));
  Run& run = *found;
  const int32_t index = static_cast<int32_t>(id - run.base);
  if (run.callbacks.done) run.callbacks.done(index, t);
  const ScheduleIndex::Node& node = run.index->nodes[static_cast<size_t>(index)];
  for (int64_t k = node.first_successor; k < node.first_successor + node.num_successors; ++k) {
    const int32_t s = run.index->successors[static_cast<size_t>(k)];
    if (--run.remaining[static_cast<size_t>(s)] == 0) StartTransfer(run, s, t);
  }
  if (run.callbacks.device_done) {
    const ChunkTransfer& tr = run.schedule->transfers[static_cast<size_t>(index)];
    Touch(run, tr.src, t);
    if (tr.dst != tr.src) Touch(run, tr.dst, t);
  }
  if (--run.left == 0) Finish(run.base, t);
}

void ScheduleExecutor::Touch(Run& run, int64_t partition, Time t) {
  if (--run.touches_left[static_cast<size_t>(partition)] == 0) {
    run.callbacks.device_done(partition, t);
  }
}

void ScheduleExecutor::Finish(int64_t base, Time t) {
  auto it = runs_.find(base);
  std::unique_ptr<Run> run = std::move(it->second);
  runs_.erase(it);
  if (last_run_ == run.get()) last_run_ = nullptr;
  if (run->callbacks.finished) run->callbacks.finished(t);
}

}  // namespace podsim::sim
