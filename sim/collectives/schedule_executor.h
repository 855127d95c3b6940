#pragma once
// The one schedule executor: runs schedules (sim/collectives/schedule.h) on a NetworkModel, any
// number of them concurrently, so that overlapping collectives share links. A collective timed
// alone (RunTiming, sim/collectives/timing.h), a collective's idle-network memo and the live
// shared network of a program run (sim/program/shared_network.h) all execute schedules here.
//
// Semantics: a run's root transfers start at its start time plus the fixed overhead; a transfer
// starts when all its deps have completed and its send-queue predecessor (schedule.h) has been
// sent (NetworkModel::TakeSent); network transfers go to the model, local ones
// (src == dst) take bytes / local_copy_bandwidth (or no time) and never touch the network.
// Events at one time are processed in a fixed order: the model's completions (in the order it
// reports them), local copies finishing, runs starting, then zero-time local transfers until none
// is left; so a run is deterministic.
//
// Like a SimGrid model, the executor only says when its next event is (NextEventTime) and
// processes events up to a time (AdvanceTo); the caller owns the clock.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "base/units.h"
#include "sim/collectives/schedule.h"
#include "sim/collectives/schedule_index.h"
#include "sim/network/network_model.h"

namespace podsim::sim {

class ScheduleExecutor {
 public:
  struct Options {
    // Fixed cost of each collective (launch, synchronisation): its first transfers start after.
    Time fixed_overhead;
    // Bytes/s of a local copy or reduction (e.g. the HBM bandwidth); 0: local transfers are free.
    double local_copy_bandwidth = 0;
  };
  // What a caller hears of a run; every callback may be empty.
  struct Callbacks {
    std::function<void(int32_t transfer, Time t)> started;   // the transfer started at t
    std::function<void(int32_t transfer, Time t)> done;      // the transfer completed at t
    // The last transfer that partition sends or receives completed at t (for a participant
    // with none: when the run starts). t may lie before the caller's clock for a replayed run.
    std::function<void(int64_t partition, Time t)> device_done;
    std::function<void(Time t)> finished;  // every transfer of the run completed
  };

  // `network` must be idle at construction and is used by this executor alone.
  ScheduleExecutor(NetworkModel& network, const Options& options);
  ScheduleExecutor(const ScheduleExecutor&) = delete;
  ScheduleExecutor& operator=(const ScheduleExecutor&) = delete;

  // Runs `schedule` (indexed by `index`) from `start`. `keep_alive` owns both (or is null when
  // the caller keeps them alive until the run finishes). `participants` are the partitions
  // whose device_done the caller waits for. Returns the run's first transfer id on the network.
  int64_t Start(const Schedule& schedule, const ScheduleIndex& index,
                std::shared_ptr<const void> keep_alive, const std::vector<int64_t>& participants,
                Time start, Callbacks callbacks);

  // The time of the next event (Time::Max() when nothing is pending).
  Time NextEventTime() const;
  // Processes every event at a time <= until.
  void AdvanceTo(Time until);

  bool idle() const { return runs_.empty(); }
  // Transfers of unfinished runs that have not completed (after the last event: deps that
  // never complete).
  int64_t unfinished_transfers() const;

 private:
  struct Run {
    const Schedule* schedule = nullptr;
    const ScheduleIndex* index = nullptr;
    std::shared_ptr<const void> keep_alive;
    std::vector<int64_t> participants;
    int64_t base = 0;
    ScheduleArray<int32_t> remaining;   // per transfer: deps not yet completed
    std::vector<int32_t> touches_left;  // per partition
    int64_t left = 0;                   // transfers not yet completed
    Callbacks callbacks;
  };

  void StartRoots(int64_t base, Time t);
  void StartTransfer(Run& run, int32_t index, Time t);
  Run* RunOf(int64_t id);  // the run of network id `id`, or null
  void Complete(int64_t id, Time t);
  void Sent(int64_t id, Time t);  // its send queue's next transfer may start
  void Touch(Run& run, int64_t partition, Time t);
  void Finish(int64_t base, Time t);

  NetworkModel& network_;
  Options options_;
  std::map<int64_t, std::unique_ptr<Run>> runs_;  // by first transfer id
  int64_t next_base_ = 0;
  using Timed = std::pair<int64_t, int64_t>;  // (ps, id)
  std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> local_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> pending_starts_;  // (ps, base)
  std::vector<int64_t> immediate_;  // zero-time local transfers to complete now
  Run* last_run_ = nullptr;         // the run of the last completion (a lookup cache)
};

}  // namespace podsim::sim
