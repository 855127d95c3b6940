#include "sim/program/collective_executor.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"
#include "sim/collectives/symmetric_timing.h"

namespace podsim::sim {

CollectiveExecutor::CollectiveExecutor(Engine& engine, const ProgramPlan& plan,
                                       const topo::Topology& topology, const MemoOptions& options,
                                       bool memoize, DoneFn done)
    : engine_(engine),
      plan_(plan),
      topology_(topology),
      options_(options),
      memoize_(memoize),
      done_(std::move(done)),
      network_(engine, topology, options),
      traits_(plan.collectives.size()),
      memo_by_id_(plan.collectives.size()),
      canonical_(plan.collectives.size(), -1),
      memo_link_bytes_(topology.links().size(), 0.0),
      counters_(plan.collectives.size()) {}

void CollectiveExecutor::Arrive(int32_t id, int64_t occurrence, int64_t device) {
  const CollectivePlan& c = plan_.collectives[static_cast<size_t>(id)];
  const int32_t group = c.group_of[static_cast<size_t>(device)];
  if (group < 0) {
    done_(device, id, engine_.now());
    return;
  }
  const Key key{id, occurrence};
  auto it = instances_.find(key);
  if (it == instances_.end()) {
    Instance inst;
    inst.arrived.assign(c.groups.size(), 0);
    inst.started.assign(c.groups.size(), 0);
    inst.delivered.assign(static_cast<size_t>(plan_.num_partitions), 0);
    for (const auto& g : c.groups) inst.waiting += static_cast<int64_t>(g.size());
    it = instances_.emplace(key, std::move(inst)).first;
  }
  Instance& inst = it->second;
  if (++inst.arrived[static_cast<size_t>(group)] ==
      static_cast<int32_t>(c.groups[static_cast<size_t>(group)].size())) {
    ready_.emplace_back(key, group);
    ScheduleFlush();
  }
}

void CollectiveExecutor::ScheduleFlush() {
  if (flush_pending_) return;
  flush_pending_ = true;
  engine_.Schedule(engine_.now(), [this] { Flush(); });
}

void CollectiveExecutor::Flush() {
  // Let every other event of this time step run first: all arrivals at this time join.
  if (engine_.NextEventTime() == engine_.now()) {
    engine_.Schedule(engine_.now(), [this] { Flush(); });
    return;
  }
  flush_pending_ = false;
  std::vector<std::pair<Key, int32_t>> ready;
  ready.swap(ready_);
  if (ready.empty()) return;
  const Time now = engine_.now();
  std::erase_if(reservations_, [&](const Reservation& r) { return r.end <= now; });
  // The fast path, instance by instance in arrival order, each as if it arrived just after the
  // ones before it: all its groups ready, nothing live on the network, and nothing running or
  // what runs joined (latency-bound, or symmetric all-to-alls solved together). Several
  // instances at once take it only when all are symmetric all-to-alls (a backward pass issues
  // two together); otherwise, and from the first that cannot join, they run live.
  std::vector<Key> keys;  // in arrival order
  std::map<Key, size_t> ready_groups;
  for (const auto& [key, group] : ready) {
    if (ready_groups[key]++ == 0) keys.push_back(key);
  }
  const bool fast =
      memoize_ && network_.idle() && std::all_of(keys.begin(), keys.end(), [&](const Key& key) {
        const CollectivePlan& p = plan_.collectives[static_cast<size_t>(key.first)];
        return ready_groups[key] == p.groups.size() &&
               (keys.size() == 1 || (p.spec.kind == CollectiveKind::kAllToAll &&
                                     TraitsOf(key.first).symmetric.has_value()));
      });
  size_t started = 0;
  while (fast && started < keys.size()) {
    const Key& key = keys[started];
    if (reservations_.empty() || JoinsAsLatencyBound(key.first)) {
      if (!reservations_.empty()) ++counters_[static_cast<size_t>(key.first)].joined;
      RunFast(key, now);
    } else if (!JoinSymmetric(key, now)) {
      break;
    }
    ++started;
  }
  if (started == keys.size()) return;
  const std::set<Key> fast_started(keys.begin(),
                                   keys.begin() + static_cast<std::ptrdiff_t>(started));
  std::erase_if(ready,
                [&](const std::pair<Key, int32_t>& r) { return fast_started.count(r.first) > 0; });
  if (!reservations_.empty()) Materialize();
  // Instances whose groups all start now run as one schedule; others group by group.
  std::map<Key, std::vector<int32_t>> by_key;
  for (const auto& [key, group] : ready) by_key[key].push_back(group);
  for (const auto& [key, groups] : by_key) {
    const CollectivePlan& plan = plan_.collectives[static_cast<size_t>(key.first)];
    const Instance& inst = instances_.at(key);
    const bool none_started = std::none_of(inst.started.begin(), inst.started.end(),
                                           [](uint8_t s) { return s != 0; });
    if (none_started && groups.size() == plan.groups.size() && plan.groups.size() > 1) {
      StartLive(key, -1, now);
    } else {
      for (int32_t g : groups) StartLive(key, g, now);
    }
  }
  network_.CatchUp();
}

const CollectiveExecutor::Traits& CollectiveExecutor::TraitsOf(int32_t id) {
  std::optional<Traits>& slot = traits_[static_cast<size_t>(id)];
  if (slot) return *slot;
  const CollectivePlan& c = plan_.collectives[static_cast<size_t>(id)];
  const std::shared_ptr<const CollectiveMemo> memo = Memo(id);
  Traits t;
  double busiest = 0;  // seconds
  const std::vector<topo::Link>& links = topology_.links();
  for (size_t l = 0; l < memo->link_bytes.size(); ++l) {
    busiest = std::max(busiest, memo->link_bytes[l] / links[l].bandwidth.value);
  }
  t.latency_bound = busiest <= kLatencyBoundShare * memo->total.seconds();
  if (options_.network == "flow") {
    t.symmetric = SymmetricAllToAllTransfers(c.spec, topology_, c.algorithm.algorithm);
  }
  slot = std::move(t);
  return *slot;
}

bool CollectiveExecutor::JoinsAsLatencyBound(int32_t id) {
  if (!TraitsOf(id).latency_bound) return false;
  for (const Reservation& r : reservations_) {
    for (const Wave& w : r.waves) {
      if (!TraitsOf(w.key.first).latency_bound) return false;
    }
  }
  return true;
}

void CollectiveExecutor::ScheduleDeliveries(Reservation& r,
                                            const std::vector<std::vector<Time>>& done) {
  // One event per distinct completion time; a completion the solution puts in the past (a
  // reservation moved by a joining one) is delivered now (delivery is idempotent).
  const Time now = engine_.now();
  std::map<int64_t, std::vector<std::pair<size_t, int64_t>>> by_time;  // ps -> (wave, device)
  r.end = now;
  for (size_t w = 0; w < r.waves.size(); ++w) {
    const CollectivePlan& c = plan_.collectives[static_cast<size_t>(r.waves[w].key.first)];
    for (const auto& g : c.groups) {
      for (int64_t p : g) {
        const Time t = std::max(now, done[w][static_cast<size_t>(p)]);
        r.end = std::max(r.end, t);
        by_time[t.picos()].emplace_back(w, p);
      }
    }
  }
  std::vector<Key> keys;
  for (const Wave& w : r.waves) keys.push_back(w.key);
  for (auto& [ps, members] : by_time) {
    r.events.push_back(engine_.Schedule(Time::Picos(ps), [this, keys, members = std::move(members)] {
      for (const auto& [w, d] : members) Deliver(keys[w], d, engine_.now());
    }));
  }
}

void CollectiveExecutor::RunFast(const Key& key, Time t) {
  const std::shared_ptr<const CollectiveMemo> memo = Memo(key.first);
  Instance& inst = instances_.at(key);
  std::fill(inst.started.begin(), inst.started.end(), 1);
  CollectiveCounters& counters = counters_[static_cast<size_t>(key.first)];
  ++counters.instances;
  ++(memo->closed_form ? counters.closed_form : counters.memoized);
  Reservation r;
  Wave wave;
  wave.key = key;
  wave.start = t;
  wave.memo = memo;
  std::vector<std::vector<Time>> done(1, std::vector<Time>(memo->done.size()));
  for (size_t p = 0; p < memo->done.size(); ++p) done[0][p] = t + memo->done[p];
  for (size_t l = 0; l < memo->link_bytes.size(); ++l) memo_link_bytes_[l] += memo->link_bytes[l];
  const CollectivePlan& c = plan_.collectives[static_cast<size_t>(key.first)];
  LinkPeriod period;
  period.start = t;
  period.end = t + memo->total;
  period.bytes = SparseBytes(memo->link_bytes);
  period.label = c.instr->name;
  wave.period = memo_periods_.size();
  memo_periods_.push_back(std::move(period));
  memo_period_dropped_.push_back(0);
  r.waves.push_back(std::move(wave));
  ScheduleDeliveries(r, done);
  r.end = std::max(r.end, t + memo->total);
  reservations_.push_back(std::move(r));
}

bool CollectiveExecutor::JoinSymmetric(const Key& key, Time t) {
  if (reservations_.size() != 1 || !TraitsOf(key.first).symmetric) return false;
  Reservation& r = reservations_.front();
  for (const Wave& w : r.waves) {
    if (!TraitsOf(w.key.first).symmetric) return false;
  }
  // The waves' transfers together, each from its start (after the fixed overhead, as the
  // memo's timing starts them).
  const std::shared_ptr<const CollectiveMemo> memo = Memo(key.first);
  std::vector<Wave> waves = r.waves;
  waves.push_back({key, t, memo, 0});
  std::vector<RepresentativeTransfer> reps;
  std::vector<size_t> first_rep;
  for (const Wave& w : waves) {
    first_rep.push_back(reps.size());
    for (RepresentativeTransfer x : *TraitsOf(w.key.first).symmetric) {
      x.start = w.start + options_.fixed_overhead;
      reps.push_back(x);
    }
  }
  first_rep.push_back(reps.size());
  std::optional<SymmetricFlowResult> flow = SolveSymmetricFlow(topology_, reps, t);
  if (!flow) return false;

  for (EventId e : r.events) engine_.Cancel(e);
  r.events.clear();
  Instance& inst = instances_.at(key);
  std::fill(inst.started.begin(), inst.started.end(), 1);
  CollectiveCounters& counters = counters_[static_cast<size_t>(key.first)];
  ++counters.instances;
  ++counters.joined;
  for (size_t l = 0; l < memo->link_bytes.size(); ++l) memo_link_bytes_[l] += memo->link_bytes[l];

  // Each member's completion: its core's last transfer in or out (the same on every chip), or
  // its local block's copy.
  const int64_t cpc = topology_.cores_per_chip();
  const int64_t partitions = plan_.num_partitions;
  std::vector<std::vector<Time>> done(waves.size());
  for (size_t w = 0; w < waves.size(); ++w) {
    const CollectiveSpec& spec = plan_.collectives[static_cast<size_t>(waves[w].key.first)].spec;
    const std::vector<Time> by_core = DoneByLocalCore(
        reps, flow->done, first_rep[w], first_rep[w + 1], cpc,
        waves[w].start + options_.fixed_overhead,
        spec.elements / topology_.num_cores() * spec.element_bytes, options_.local_copy_bandwidth);
    done[w].resize(static_cast<size_t>(partitions));
    Time end = waves[w].start;
    for (int64_t p = 0; p < partitions; ++p) {
      done[w][static_cast<size_t>(p)] = by_core[static_cast<size_t>(p % cpc)];
      end = std::max(end, done[w][static_cast<size_t>(p)]);
    }
    if (w + 1 < waves.size()) {
      memo_periods_[waves[w].period].end = end;
    } else {
      LinkPeriod period;
      period.start = t;
      period.end = end;
      period.bytes = SparseBytes(memo->link_bytes);
      period.label = plan_.collectives[static_cast<size_t>(key.first)].instr->name;
      waves[w].period = memo_periods_.size();
      memo_periods_.push_back(std::move(period));
      memo_period_dropped_.push_back(0);
    }
  }
  r.waves = std::move(waves);
  ScheduleDeliveries(r, done);
  return true;
}

void CollectiveExecutor::Materialize() {
  std::vector<Wave> waves;
  for (Reservation& r : reservations_) {
    for (EventId e : r.events) engine_.Cancel(e);
    for (Wave& w : r.waves) waves.push_back(std::move(w));
  }
  reservations_.clear();
  std::stable_sort(waves.begin(), waves.end(),
                   [](const Wave& a, const Wave& b) { return a.start < b.start; });
  for (const Wave& w : waves) {
    for (size_t l = 0; l < w.memo->link_bytes.size(); ++l) memo_link_bytes_[l] -= w.memo->link_bytes[l];
    memo_period_dropped_[w.period] = 1;
    ++counters_[static_cast<size_t>(w.key.first)].replayed;
    const Key key = w.key;
    SharedNetwork::Callbacks cb;
    cb.device_done = [this, key](int64_t p, Time) { Deliver(key, p, engine_.now()); };
    cb.finished = [](Time) {};
    network_.StartRun(Schedule(key.first, -1), w.start, std::move(cb),
                      plan_.collectives[static_cast<size_t>(key.first)].instr->name);
  }
  network_.CatchUp();
}

void CollectiveExecutor::StartLive(const Key& key, int32_t group, Time t) {
  Instance& inst = instances_.at(key);
  CollectiveCounters& counters = counters_[static_cast<size_t>(key.first)];
  const bool first = std::none_of(inst.started.begin(), inst.started.end(),
                                  [](uint8_t s) { return s != 0; });
  if (first) ++counters.instances;
  if (group < 0) {
    std::fill(inst.started.begin(), inst.started.end(), 1);
    counters.live_groups += static_cast<int64_t>(inst.started.size());
  } else {
    inst.started[static_cast<size_t>(group)] = 1;
    ++counters.live_groups;
  }
  SharedNetwork::Callbacks cb;
  cb.device_done = [this, key](int64_t p, Time) { Deliver(key, p, engine_.now()); };
  cb.finished = [](Time) {};
  network_.StartRun(Schedule(key.first, group), t, std::move(cb),
                    plan_.collectives[static_cast<size_t>(key.first)].instr->name);
}

void CollectiveExecutor::Deliver(const Key& key, int64_t device, Time t) {
  auto it = instances_.find(key);
  if (it == instances_.end()) return;
  Instance& inst = it->second;
  if (device >= static_cast<int64_t>(inst.delivered.size()) ||
      inst.delivered[static_cast<size_t>(device)]) {
    return;
  }
  inst.delivered[static_cast<size_t>(device)] = 1;
  const bool last = --inst.waiting == 0;
  if (last) instances_.erase(it);
  done_(device, key.first, t);
}

std::shared_ptr<const CollectiveMemo> CollectiveExecutor::Memo(int32_t id) {
  auto& slot = memo_by_id_[static_cast<size_t>(id)];
  if (slot) return slot;
  const CollectivePlan& c = plan_.collectives[static_cast<size_t>(id)];
  const std::string signature = MemoSignature(c);
  auto it = memo_by_signature_.find(signature);
  if (it == memo_by_signature_.end()) {
    auto memo = std::make_shared<const CollectiveMemo>(ComputeMemo(c, topology_, options_));
    it = memo_by_signature_.emplace(signature, std::move(memo)).first;
  }
  slot = it->second;
  return slot;
}

std::shared_ptr<const ScheduleData> CollectiveExecutor::Schedule(int32_t id, int32_t group) {
  int32_t& canonical = canonical_[static_cast<size_t>(id)];
  if (canonical < 0) {
    canonical = canonical_by_signature_
                    .emplace(MemoSignature(plan_.collectives[static_cast<size_t>(id)]), id)
                    .first->second;
  }
  const Key key{canonical, group};
  auto it = schedules_.find(key);
  if (it != schedules_.end()) return it->second;
  const CollectivePlan& c = plan_.collectives[static_cast<size_t>(canonical)];
  CollectiveSpec spec = c.spec;
  if (group >= 0) {
    const std::vector<int64_t>& members = c.groups[static_cast<size_t>(group)];
    if (spec.kind == CollectiveKind::kCollectivePermute) {
      spec.source_target_pairs.clear();
      for (const auto& pair : c.spec.source_target_pairs) {
        if (std::binary_search(members.begin(), members.end(), pair.first)) {
          spec.source_target_pairs.push_back(pair);
        }
      }
    } else {
      spec.replica_groups = {members};
    }
  }
  auto data = MakeScheduleData(spec, topology_, c.algorithm);
  schedules_.emplace(key, data);
  return data;
}

std::vector<double> CollectiveExecutor::LinkBytes() const {
  std::vector<double> bytes = network_.LinkBytes();
  bytes.resize(memo_link_bytes_.size(), 0.0);
  for (size_t l = 0; l < bytes.size(); ++l) bytes[l] += memo_link_bytes_[l];
  return bytes;
}

std::vector<LinkPeriod> CollectiveExecutor::LinkPeriods() const {
  std::vector<LinkPeriod> out = network_.periods();
  for (size_t k = 0; k < memo_periods_.size(); ++k) {
    if (!memo_period_dropped_[k]) out.push_back(memo_periods_[k]);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LinkPeriod& a, const LinkPeriod& b) { return a.start < b.start; });
  return out;
}

const CollectiveMemo* CollectiveExecutor::memo(int32_t id) const {
  return memo_by_id_[static_cast<size_t>(id)].get();
}

}  // namespace podsim::sim
