#pragma once
// Collectives of a program run. Devices arrive at a collective (the k-th execution of one
// collective instruction on every device is one instance); a replica group starts when its last
// member arrives, independently of the other groups, so a straggler delays its own group only.
// Groups that become ready at one simulated time are started together at the end of that time
// step:
//  - fast path: when they are every group of one instance and the network is idle, the
//    instance's memo (sim/program/collective_memo.h, computed once per distinct collective) gives
//    each member's completion; the network is then reserved until the last one. Instances may join
//    reservations still running, without the shared network, in two cases:
//      - latency-bound ones: when the new instance and every running one keep their busiest link
//        busy for at most kLatencyBoundShare of their own duration, each keeps its memo (their
//        links are idle more than 99% of the time: sharing them moves each completion by at most
//        the other's busiest-link time, under 1% of either; docs/simulator.md);
//      - symmetric all-to-alls: a direct all-to-all over every core of a translation-symmetric
//        pod joining running ones of that kind: the waves are solved together, exactly, by the
//        symmetric flow model (sim/network/symmetric_flow.h: traffic made of invariant waves is
//        invariant), and every member's completion is moved to that solution. Several such
//        all-to-alls ready at one time (a backward pass issues two at once) start the same way:
//        the first on its memo, the others joining it;
//  - otherwise each group's schedule runs on the shared network model
//  (sim/program/shared_network.h),
//    sharing links with whatever else is in flight. Reservations still running are first
//    replayed on the shared network from their starts (exact: the network was idle meanwhile
//    but for them, and for latency-bound ones that have ended), so the contention from then on
//    is modelled. A symmetric reservation keeps its finished waves until it ends: they shaped
//    the running ones, so a re-solve or a replay needs them.
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
#include "sim/network/symmetric_flow.h"
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
  // Fast-path instances that joined running ones (see above): a latency-bound one is also
  // counted as memoized or closed_form (its memo times it), a symmetric one only here.
  int64_t joined = 0;
};

// The largest share of its duration an instance may keep its busiest link busy and still count
// as latency-bound (see above).
inline constexpr double kLatencyBoundShare = 0.01;

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
  struct Wave {
    Key key;
    Time start;
    std::shared_ptr<const CollectiveMemo> memo;
    size_t period = 0;  // index into memo_periods_
  };
  // Instances timed without the shared network: one, or symmetric all-to-alls solved together.
  struct Reservation {
    std::vector<Wave> waves;
    Time end;
    std::vector<EventId> events;
  };
  // What the fast path needs to know of a collective beyond its memo.
  struct Traits {
    bool latency_bound = false;
    std::optional<std::vector<RepresentativeTransfer>> symmetric;  // chip 0's transfers
  };

  void ScheduleFlush();
  void Flush();
  void RunFast(const Key& key, Time t);
  // Whether `id` may run on its memo beside the running reservations (latency-bound).
  bool JoinsAsLatencyBound(int32_t id);
  // Joins `key` to the one running reservation if all are symmetric all-to-alls; false if not.
  bool JoinSymmetric(const Key& key, Time t);
  void ScheduleDeliveries(Reservation& r, const std::vector<std::vector<Time>>& done);
  void Materialize();
  const Traits& TraitsOf(int32_t id);
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
  std::vector<Reservation> reservations_;
  std::vector<std::optional<Traits>> traits_;  // per collective, once computed
  std::vector<std::shared_ptr<const CollectiveMemo>> memo_by_id_;
  std::map<std::string, std::shared_ptr<const CollectiveMemo>> memo_by_signature_;
  // Schedules by (the first collective of its signature, group or -1): collectives that differ
  // only in which instruction they are (every layer's AllReduce) share their schedules.
  std::map<Key, std::shared_ptr<const ScheduleData>> schedules_;
  std::vector<int32_t> canonical_;  // per collective, -1 until computed
  std::map<std::string, int32_t> canonical_by_signature_;
  std::vector<double> memo_link_bytes_;
  std::vector<LinkPeriod> memo_periods_;
  std::vector<uint8_t> memo_period_dropped_;
  std::vector<CollectiveCounters> counters_;
};

}  // namespace podsim::sim
