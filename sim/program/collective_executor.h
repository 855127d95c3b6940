#pragma once
// Collectives of a program run. Devices arrive at a collective (the k-th execution of one
// collective instruction on every device is one instance); a replica group starts when its last
// member arrives, independently of the other groups, so a straggler delays its own group only.
// Groups that become ready at one simulated time are started together at the end of that time
// step:
//  - fast path: when they are every group of one instance and the network is idle, the
//    instance's memo (sim/program/collective_memo.h, computed once per distinct collective) gives each
//    member's completion; the network is then reserved until the last one;
//  - otherwise each group's schedule runs on the shared network model (sim/program/shared_network.h),
//    sharing links with whatever else is in flight. If a reservation is still running, its
//    instance is first replayed on the shared network from its start (exact: the network was
//    idle meanwhile), so the contention from then on is modelled.
// A partition outside every group is done as soon as it arrives.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/program/collective_memo.h"
#include "sim/program/program_plan.h"
#include "sim/program/shared_network.h"

namespace podsim::sim {

struct CollectiveCounters {
  int64_t instances = 0;     // instances started
  int64_t memoized = 0;      // ... that ran on the fast path (exact memo)
  int64_t closed_form = 0;   // ... that ran on the fast path with a closed-form memo
  int64_t live_groups = 0;   // groups run on the shared network
  int64_t replayed = 0;      // fast-path instances replayed on the shared network
};

class CollectiveExecutor {
 public:
  // done(device, collective, t): the device's part of its current instance ended at t (t is
  // engine.now() when called).
  using DoneFn = std::function<void(int64_t device, int32_t collective, Time t)>;

  CollectiveExecutor(Engine& engine, const ProgramPlan& plan, const topo::Topology& topology,
                     const MemoOptions& options, bool memoize, DoneFn done);

  // `device` reaches its `occurrence`-th execution (0-based) of collective `id` at engine.now().
  void Arrive(int32_t id, int64_t occurrence, int64_t device);

  // Bytes each directed link carried (memoized and live).
  std::vector<double> LinkBytes() const;
  // Link activity over time, for traces.
  std::vector<LinkPeriod> LinkPeriods() const;
  const std::vector<CollectiveCounters>& counters() const { return counters_; }
  // Memo of collective `id`, if one was computed.
  const CollectiveMemo* memo(int32_t id) const;
  const std::string& network_name() const { return network_.model_name(); }
  // Instances still open (0 after a complete run).
  size_t open_instances() const { return instances_.size(); }

 private:
  using Key = std::pair<int32_t, int64_t>;  // (collective, occurrence)
  struct Instance {
    std::vector<int32_t> arrived;    // per group
    std::vector<uint8_t> started;    // per group
    std::vector<uint8_t> delivered;  // per partition
    int64_t waiting = 0;             // members not yet delivered
  };
  struct Reservation {
    Key key;
    Time start;
    Time end;
    std::shared_ptr<const CollectiveMemo> memo;
    std::vector<EventId> events;
    size_t period = 0;  // index into memo_periods_
  };

  void ScheduleFlush();
  void Flush();
  void RunFast(const Key& key, Time t);
  void Materialize();
  void StartLive(const Key& key, int32_t group, Time t);
  void Deliver(const Key& key, int64_t device, Time t);
  std::shared_ptr<const CollectiveMemo> Memo(int32_t id);
  std::shared_ptr<const ScheduleData> Schedule(int32_t id, int32_t group);

  Engine& engine_;
  const ProgramPlan& plan_;
  const topo::Topology& topology_;
  MemoOptions options_;
  bool memoize_;
  DoneFn done_;
  SharedNetwork network_;
  std::map<Key, Instance> instances_;
  std::vector<std::pair<Key, int32_t>> ready_;  // groups ready at the current time
  bool flush_pending_ = false;
  std::optional<Reservation> reservation_;
  std::vector<std::shared_ptr<const CollectiveMemo>> memo_by_id_;
  std::map<std::string, std::shared_ptr<const CollectiveMemo>> memo_by_signature_;
  std::map<Key, std::shared_ptr<const ScheduleData>> schedules_;  // (collective, group or -1)
  std::vector<double> memo_link_bytes_;
  std::vector<LinkPeriod> memo_periods_;
  std::vector<uint8_t> memo_period_dropped_;
  std::vector<CollectiveCounters> counters_;
};

}  // namespace podsim::sim
