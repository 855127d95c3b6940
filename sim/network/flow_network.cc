#include "sim/network/flow_network.h"
#include "sim/network/flow_network_impl.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "base/error.h"
#include "base/pod_vector.h"
#include "sim/network/flow_clock.h"
#include "sim/network/flow_end_queue.h"
#include "sim/network/maxmin.h"
#include "sim/network/network_util.h"

namespace podsim::sim {

namespace {

using internal::EndEntry;
using internal::EndQueue;
using internal::Fmix;

constexpr int32_t kNoSlot = -1;  // member of a single-path transfer: no multi-path slot
using internal::kFarFuturePs;
using internal::kLevelTolerance;
using internal::kPsPerSecond;
// Entries of the cache that finds a new flow's class among the batch's recent classes.
constexpr size_t kRecentClasses = size_t{1} << 14;

// Links the model counts: the topology's, or with FlowOptions::link_orbits its orbits.
int32_t CountedLinks(const topo::Topology& topology, const FlowOptions& options) {
  if (topology.links().size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw Error("flow network: topology " + topology.name() + " has too many links for int32 ids");
  }
  if (options.link_orbits == nullptr) return static_cast<int32_t>(topology.links().size());
  if (options.link_orbits->size() != topology.links().size()) {
    throw Error("flow network: link_orbits has " + std::to_string(options.link_orbits->size()) +
                " entries for the " + std::to_string(topology.links().size()) + " links of " +
                topology.name());
  }
  int32_t orbits = 0;
  for (int32_t o : *options.link_orbits) {
    if (o < 0) throw Error("flow network: negative link orbit");
    orbits = std::max(orbits, o + 1);
  }
  return orbits;
}

}  // namespace

FlowNetwork::Impl::Impl(const topo::Topology& topology, FlowOptions options)
    : topology_(topology),
      options_(options),
      num_links_(CountedLinks(topology, options)),
      capacity_(static_cast<size_t>(num_links_), 0.0),
      latency_(static_cast<size_t>(num_links_), -1),
      used_(static_cast<size_t>(num_links_), 0.0),
      done_bytes_(static_cast<size_t>(num_links_), 0.0),
      filler_(num_links_),
      link_classes_(static_cast<size_t>(num_links_)),
      link_mark_(static_cast<size_t>(num_links_), 0) {
  for (const topo::Link& link : topology.links()) {
    if (!(link.bandwidth.value > 0)) {
      throw Error("flow network: link " + std::to_string(link.id) + " of " + topology.name() +
                  " has bandwidth " + std::to_string(link.bandwidth.value) + " B/s (must be > 0)");
    }
    const size_t l = static_cast<size_t>(
        options.link_orbits ? (*options.link_orbits)[static_cast<size_t>(link.id)] : link.id);
    if (latency_[l] >= 0 &&
        (capacity_[l] != link.bandwidth.value || latency_[l] != link.latency.picos())) {
      throw Error("flow network: link orbit " + std::to_string(l) + " of " + topology.name() +
                  " joins links of different bandwidth or latency");
    }
    capacity_[l] = link.bandwidth.value;
    latency_[l] = link.latency.picos();
  }
  for (size_t l = 0; l < latency_.size(); ++l) {
    if (latency_[l] < 0) throw Error("flow network: link orbit " + std::to_string(l) + " is empty");
  }
  if (options_.aggregate) recent_.resize(kRecentClasses);
  last_class_for_dst_.assign(static_cast<size_t>(topology.num_cores()), -1);
}

int32_t FlowNetwork::Impl::FindOrCreateClass(const std::vector<int64_t>& path, int64_t bytes, int64_t dst_core) {
  const int32_t n = static_cast<int32_t>(path.size());
  // Whether class c is of this batch and has this path and size.
  const auto same = [&](int32_t c) {
    if (c < static_cast<int32_t>(batch_first_class_) || c >= static_cast<int32_t>(classes_.size()) ||
        classes_[static_cast<size_t>(c)].bytes != bytes || NumLinks(c) != n) {
      return false;
    }
    const int32_t* links = Links(c);
    for (int32_t i = 0; i < n; ++i) {
      if (links[i] != path[static_cast<size_t>(i)]) return false;
    }
    return true;
  };
  // Cheap candidates first: the class of the previous start, and the last class of a start to
  // the same destination core (an AllToAll loop meets its mergeable flows there).
  int32_t& last_for_dst = last_class_for_dst_[static_cast<size_t>(dst_core)];
  if (options_.aggregate) {
    if (same(last_class_)) return last_for_dst = last_class_;
    if (same(last_for_dst)) return last_class_ = last_for_dst;
  }
  // Two interleaved FNV-style chains (shorter dependency chains), then a finaliser.
  uint64_t h = static_cast<uint64_t>(bytes) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(n);
  uint64_t h2 = 0x84222325cbf29ce4ULL;
  int32_t i = 0;
  for (; i + 1 < n; i += 2) {
    h = (h ^ static_cast<uint64_t>(path[static_cast<size_t>(i)])) * 0x100000001b3ULL;
    h2 = (h2 ^ static_cast<uint64_t>(path[static_cast<size_t>(i) + 1])) * 0x100000001b3ULL;
  }
  if (i < n) h = (h ^ static_cast<uint64_t>(path[static_cast<size_t>(i)])) * 0x100000001b3ULL;
  h = Fmix(h ^ (h2 * 0xc2b2ae3d27d4eb4fULL));
  Recent* slot = nullptr;
  if (options_.aggregate) {
    slot = &recent_[h & (kRecentClasses - 1)];
    const int32_t c = slot->cls;
    // Only classes of this batch qualify (they are the last ones); the path check makes the
    // match exact whatever the cache holds.
    if (slot->tag == static_cast<uint32_t>(h >> 32) && same(c)) return last_class_ = last_for_dst = c;
  }
  if (classes_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw Error("flow network: more than 2^31 flow classes in flight");
  }
  const int32_t c = static_cast<int32_t>(classes_.size());
  FlowClass k;
  k.bytes = bytes;
  begin_.push_back(static_cast<int64_t>(data_.size()));
  data_.push_back(0);  // weight, counted by the caller
  data_.push_back(n);
  for (int64_t l : path) {
    if (l < 0 || l >= num_links_) {
      throw Error("flow network: route of " + topology_.name() + " names link " + std::to_string(l) +
                  " outside [0, " + std::to_string(num_links_) + ")");
    }
    data_.push_back(static_cast<int32_t>(l));
    k.latency_ps += latency_[static_cast<size_t>(l)];
  }
  classes_.push_back(k);
  rate_.push_back(0.0);
  ++stats_.classes;
  if (slot != nullptr) *slot = Recent{static_cast<uint32_t>(h >> 32), c};
  return last_class_ = last_for_dst = c;
}

void FlowNetwork::Impl::CheckClockRange(int64_t t, double remaining) const {
  internal::CheckFlowClockRange(t, remaining, *std::max_element(capacity_.begin(), capacity_.end()));
}

void FlowNetwork::Impl::SubflowDone(TransferId id, int32_t slot, int64_t done_ps) {
  if (slot == kNoSlot) {
    completions_.Add(Time::Picos(done_ps), id);
    return;
  }
  MultiSlot& s = slots_[static_cast<size_t>(slot)];
  s.done_ps = std::max(s.done_ps, done_ps);
  if (--s.pending == 0) {
    completions_.Add(Time::Picos(s.done_ps), s.id);
    free_slots_.push_back(slot);
  }
}

std::vector<TransferId> FlowNetwork::Impl::TakeSent() {
  std::vector<TransferId> sent;
  sent.swap(sent_);
  internal::SortTransferIds(sent);
  return sent;
}

void FlowNetwork::Impl::SubflowSent(TransferId id, int32_t slot) {
  if (slot == kNoSlot || --slots_[static_cast<size_t>(slot)].unsent == 0) sent_.push_back(id);
}

void FlowNetwork::Impl::Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) {
  if (batch_open_ && now.picos() != batch_ps_) Flush();
  if (!batch_open_) {
    const Time next = std::min(Time::Picos(NextDataEnd()), completions_.NextTime());
    internal::CheckStart("flow", topology_, src_core, dst_core, bytes, now, Time::Picos(time_ps_), next);
    batch_open_ = true;
    batch_ps_ = now.picos();
    batch_first_class_ = classes_.size();
  } else {
    internal::CheckStart("flow", topology_, src_core, dst_core, bytes, now, now, now);
  }
  // Routed into buffers kept across calls: no allocation per transfer. Routes between distinct
  // chips depend only on (src core, dst chip) (Topology::Route), so consecutive starts to the
  // cores of one chip (an AllToAll loop) reuse the previous route.
  const int64_t src_chip = topology_.ChipOfCore(src_core);
  const int64_t dst_chip = topology_.ChipOfCore(dst_core);
  if (src_chip == dst_chip || src_core != route_src_core_ || dst_chip != route_dst_chip_) {
    route_count_ = topology_.RouteSplitInto(src_core, dst_core, route_paths_);
    if (options_.link_orbits != nullptr) {
      for (size_t p = 0; p < route_count_; ++p) {
        for (int64_t& l : route_paths_[p].links)
          l = (*options_.link_orbits)[static_cast<size_t>(l)];
      }
    }
    route_src_core_ = src_chip == dst_chip ? -1 : src_core;
    route_dst_chip_ = src_chip == dst_chip ? -1 : dst_chip;
  }
  const size_t num_paths = route_count_;
  if (num_paths == 0) throw Error("flow network: topology " + topology_.name() + " returned no path");
  const std::vector<topo::Topology::WeightedPath>& paths = route_paths_;
  int32_t slot = kNoSlot;
  const int64_t* parts = &bytes.value;  // bytes of each path
  if (num_paths > 1) {
    internal::SplitBytesInto(bytes.value, paths.data(), num_paths, split_parts_);
    parts = split_parts_.data();
    if (free_slots_.empty()) {
      free_slots_.push_back(static_cast<int32_t>(slots_.size()));
      slots_.emplace_back();
    }
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[static_cast<size_t>(slot)] =
        MultiSlot{id, static_cast<int32_t>(num_paths), static_cast<int32_t>(num_paths), batch_ps_};
  }
  for (size_t p = 0; p < num_paths; ++p) {
    if (paths[p].links.empty() || parts[p] == 0) {
      // Nothing to move over links: sent now (reported with the next Advance), done after the
      // path's latency (0 for the same core).
      SubflowSent(id, slot);
      int64_t latency_ps = 0;
      for (int64_t l : paths[p].links) latency_ps += latency_[static_cast<size_t>(l)];
      SubflowDone(id, slot, batch_ps_ + latency_ps);
      continue;
    }
    const int32_t c = FindOrCreateClass(paths[p].links, parts[p], dst_core);
    ++data_[static_cast<size_t>(begin_[static_cast<size_t>(c)])];
    if (member_ids_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      throw Error("flow network: more than 2^31 sub-flows in flight");
    }
    FlowClass& k = classes_[static_cast<size_t>(c)];
    member_next_.push_back(k.first_member);
    k.first_member = static_cast<int32_t>(member_ids_.size());
    member_ids_.push_back(id);
    member_slots_.push_back(slot);
    ++stats_.flows;
  }
}

int64_t FlowNetwork::Impl::NextDataEnd() {
  while (!ends_.empty()) {
    const EndEntry& top = ends_.top();
    const FlowClass& k = classes_[static_cast<size_t>(top.cls)];
    if (k.active && k.end_ps == top.end_ps) return top.end_ps;
    ends_.pop();
  }
  return std::numeric_limits<int64_t>::max();
}

Time FlowNetwork::Impl::NextEventTime() {
  Flush();
  return std::min(Time::Picos(NextDataEnd()), completions_.NextTime());
}

void FlowNetwork::Impl::Flush() {
  if (!batch_open_) return;
  batch_open_ = false;
  const int64_t t = batch_ps_;
  // Classes whose data ends exactly at t leave before the new ones join, as if Advance(t) had
  // been called first; the full refill below covers their departure.
  finished_.clear();
  if (NextDataEnd() == t) FinishAt(t);
  time_ps_ = t;

  for (size_t c = batch_first_class_; c < classes_.size(); ++c) {
    FlowClass& k = classes_[c];
    k.remaining = static_cast<double>(k.bytes);
    k.updated_ps = t;
    k.active = true;
  }
  active_classes_ += static_cast<int64_t>(classes_.size() - batch_first_class_);
  stats_.peak_active_classes = std::max(stats_.peak_active_classes, active_classes_);

  // The link -> class index is built once batches come that are small next to what is in flight
  // (a lone large batch, such as an AllToAll's, affects everything: no index, no memory for it).
  const size_t batch = classes_.size() - batch_first_class_;
  const bool small = batch > 0 && batch * 4 <= static_cast<size_t>(active_classes_);
  const bool compacted = MaybeCompact();
  if (compacted || (small && !indexed_)) {
    for (PodVector<int32_t>& list : link_classes_) list.clear();
    for (size_t c = 0; c < classes_.size(); ++c) {
      if (classes_[c].active) IndexClass(static_cast<int32_t>(c));
    }
    indexed_ = true;
  } else if (indexed_) {
    for (size_t c = batch_first_class_; c < classes_.size(); ++c) IndexClass(static_cast<int32_t>(c));
  }
  if (!compacted && small && RefillComponent(t)) return;
  fill_set_.clear();
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (classes_[c].active) fill_set_.push_back(static_cast<int32_t>(c));
  }
  Refill(t, /*all=*/true, 0.0);
}

double FlowNetwork::Impl::FinishAt(int64_t t) {
  double lowest = std::numeric_limits<double>::infinity();
  finished_.clear();
  while (NextDataEnd() == t) {
    const int32_t c = ends_.top().cls;
    ends_.pop();
    finished_.push_back(c);
    FlowClass& k = classes_[static_cast<size_t>(c)];
    k.active = false;
    --active_classes_;
    const double rate = rate_[static_cast<size_t>(c)];
    lowest = std::min(lowest, rate);
    const int32_t w = Weight(c);
    const int32_t* links = Links(c);
    for (int32_t i = 0; i < NumLinks(c); ++i) {
      used_[static_cast<size_t>(links[i])] -= w * rate;
      done_bytes_[static_cast<size_t>(links[i])] += static_cast<double>(w) * static_cast<double>(k.bytes);
    }
    std::vector<TransferId>* bucket = nullptr;
    for (int32_t m = k.first_member; m >= 0; m = member_next_[static_cast<size_t>(m)]) {
      const int32_t slot = member_slots_[static_cast<size_t>(m)];
      SubflowSent(member_ids_[static_cast<size_t>(m)], slot);
      if (slot != kNoSlot) {
        SubflowDone(member_ids_[static_cast<size_t>(m)], slot, t + k.latency_ps);
        continue;
      }
      if (bucket == nullptr) bucket = &completions_.At(Time::Picos(t + k.latency_ps));
      bucket->push_back(member_ids_[static_cast<size_t>(m)]);
    }
  }
  return lowest;
}

std::vector<TransferId> FlowNetwork::Impl::Advance(Time t) {
  Flush();
  internal::CheckAdvance("flow", t, Time::Picos(time_ps_), std::min(Time::Picos(NextDataEnd()), completions_.NextTime()));
  time_ps_ = t.picos();
  if (NextDataEnd() == t.picos()) {
    const double lowest = FinishAt(t.picos());
    // Rates below `lowest` are unchanged (see the header), and every rate at or above it stays
    // there. Refill the classes at or above it that are connected to the ended ones through such
    // classes (the others' inputs did not change) when they are few, else all those at or above.
    if (active_classes_ == 0) {
      Reset();
    } else if (indexed_ && CollectComponent(finished_, lowest, static_cast<size_t>(active_classes_) / 4)) {
      ++stats_.component_fillings;
      fill_set_.assign(component_.begin(), component_.end());
      std::sort(fill_set_.begin(), fill_set_.end());
      if (!fill_set_.empty()) Refill(t.picos(), /*all=*/false, lowest, /*component=*/true);
    } else {
      // The progressive filling resumes at the highest rate kept.
      fill_set_.clear();
      double base = 0;
      const double cut = lowest * (1 - kLevelTolerance);
      for (size_t c = 0; c < classes_.size(); ++c) {
        if (!classes_[c].active) continue;
        if (rate_[c] >= cut) fill_set_.push_back(static_cast<int32_t>(c));
        else base = std::max(base, rate_[c]);
      }
      if (!fill_set_.empty()) Refill(t.picos(), /*all=*/false, base);
    }
  }
  return completions_.PopAt(t);
}

// Drops every class (none is active): indices restart from 0.
void FlowNetwork::Impl::Reset() {
  classes_.clear();
  data_.clear();
  begin_.clear();
  rate_.clear();
  member_ids_.clear();
  member_slots_.clear();
  member_next_.clear();
  ends_.clear();
  std::fill(used_.begin(), used_.end(), 0.0);
  for (PodVector<int32_t>& list : link_classes_) list.clear();
  indexed_ = false;
}

void FlowNetwork::Impl::Refill(int64_t t, bool all, double base, bool component) {
  ++(all ? stats_.full_fillings : stats_.partial_fillings);
  // Refilling every active class: rebuild used_ from zero rather than subtract class by class.
  all = all || static_cast<int64_t>(fill_set_.size()) == active_classes_;
  stats_.classes_filled += static_cast<int64_t>(fill_set_.size());
  if (all) std::fill(used_.begin(), used_.end(), 0.0);
  for (int32_t c : fill_set_) {
    FlowClass& k = classes_[static_cast<size_t>(c)];
    const double rate = rate_[static_cast<size_t>(c)];
    k.remaining = std::max(0.0, k.remaining - rate * (static_cast<double>(t - k.updated_ps) / kPsPerSecond));
    k.updated_ps = t;
    if (!all && !component) {
      const double old = Weight(c) * rate;
      const int32_t* links = Links(c);
      for (int32_t i = 0; i < NumLinks(c); ++i) used_[static_cast<size_t>(links[i])] -= old;
    }
  }
  if (component && !all) {
    // The component's links carry, besides the component, only classes kept at their rates
    // (below an ending class's level): their usage, summed afresh.
    for (int32_t link : component_links_) {
      double sum = 0;
      for (int32_t c : link_classes_[static_cast<size_t>(link)]) {
        if (classes_[static_cast<size_t>(c)].active && class_mark_[static_cast<size_t>(c)] != mark_) {
          sum += Weight(c) * rate_[static_cast<size_t>(c)];
        }
      }
      used_[static_cast<size_t>(link)] = sum;
    }
  }
  frozen_order_.clear();
  filler_.Fill(fill_set_, Paths(), capacity_, used_, all ? 0.0 : base, rate_.data(), frozen_order_);
  bool starved = false;
  for (int32_t c : fill_set_) {
    FlowClass& k = classes_[static_cast<size_t>(c)];
    const double rate = rate_[static_cast<size_t>(c)];
    starved |= !(rate > 0);
    const double ps = internal::FlowDurationPs(k.remaining, rate);
    if (ps >= kFarFuturePs && rate > 0) CheckClockRange(t, k.remaining);
    k.end_ps = internal::FlowEndPs(t, ps);
  }
  if (starved && !all) {
    // Rounding left a refilled class no capacity (impossible in exact arithmetic): refill
    // every active class from scratch.
    fill_set_.clear();
    for (size_t c = 0; c < classes_.size(); ++c) {
      if (classes_[c].active) fill_set_.push_back(static_cast<int32_t>(c));
    }
    Refill(t, /*all=*/true, 0.0);
    return;
  }
  if (fill_set_.size() * 4 > static_cast<size_t>(active_classes_) ||
      ends_.size() > 2 * static_cast<size_t>(active_classes_) + 1024) {
    // Rebuilding is cheaper than pushing most classes again, and drops stale entries.
    end_scratch_.clear();
    for (size_t c = 0; c < classes_.size(); ++c) {
      if (classes_[c].active) end_scratch_.push_back(EndEntry{classes_[c].end_ps, static_cast<int32_t>(c)});
    }
    ends_.Rebuild(end_scratch_);
  } else {
    for (int32_t c : fill_set_) {
      ends_.push(EndEntry{classes_[static_cast<size_t>(c)].end_ps, c});
    }
  }
}

// Drops finished classes once they outnumber the live ones, renumbering the live classes in
// order. Called between a batch's arrival and its full refill (which rebuilds the end heap).
bool FlowNetwork::Impl::MaybeCompact() {
  const size_t live = static_cast<size_t>(active_classes_);
  const size_t dead = classes_.size() - live;
  if (dead < (size_t{1} << 16) || dead < live) return false;
  PodVector<FlowClass> classes;
  PodVector<int32_t> data;
  PodVector<int64_t> begin;
  PodVector<double> rate;
  PodVector<TransferId> member_ids;
  PodVector<int32_t> member_slots;
  PodVector<int32_t> member_next;
  classes.reserve(live);
  size_t batch_first = 0;
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (c == batch_first_class_) batch_first = classes.size();
    FlowClass k = classes_[c];
    if (!k.active) continue;
    begin.push_back(static_cast<int64_t>(data.size()));
    const auto record = data_.begin() + begin_[c];
    data.append(record, record + 2 + NumLinks(static_cast<int32_t>(c)));
    rate.push_back(rate_[c]);
    const int32_t old_first = k.first_member;
    k.first_member = -1;
    for (int32_t m = old_first; m >= 0; m = member_next_[static_cast<size_t>(m)]) {
      member_next.push_back(k.first_member);
      k.first_member = static_cast<int32_t>(member_ids.size());
      member_ids.push_back(member_ids_[static_cast<size_t>(m)]);
      member_slots.push_back(member_slots_[static_cast<size_t>(m)]);
    }
    classes.push_back(k);
  }
  batch_first_class_ = batch_first_class_ >= classes_.size() ? classes.size() : batch_first;
  classes_ = std::move(classes);
  data_ = std::move(data);
  begin_ = std::move(begin);
  rate_ = std::move(rate);
  member_ids_ = std::move(member_ids);
  member_slots_ = std::move(member_slots);
  member_next_ = std::move(member_next);
  ends_.clear();
  return true;
}

const std::vector<double>& FlowNetwork::Impl::LinkBytes() {
  link_bytes_ = done_bytes_;
  for (size_t c = 0; c < classes_.size(); ++c) {
    const FlowClass& k = classes_[c];
    if (!k.active) continue;
    const double left = k.remaining - rate_[static_cast<size_t>(c)] * (static_cast<double>(time_ps_ - k.updated_ps) / kPsPerSecond);
    const double bytes = static_cast<double>(k.bytes);
    const double sent = Weight(c) * std::clamp(bytes - left, 0.0, bytes);
    const int32_t* links = Links(c);
    for (int32_t i = 0; i < NumLinks(c); ++i) link_bytes_[static_cast<size_t>(links[i])] += sent;
  }
  if (options_.link_orbits != nullptr) {  // every link carries its orbit's bytes
    const std::vector<double> orbit_bytes = link_bytes_;
    link_bytes_.assign(options_.link_orbits->size(), 0.0);
    for (size_t l = 0; l < link_bytes_.size(); ++l) {
      link_bytes_[l] = orbit_bytes[static_cast<size_t>((*options_.link_orbits)[l])];
    }
  }
  return link_bytes_;
}

std::vector<double> FlowNetwork::Impl::LinkRates() {
  Flush();
  std::vector<double> rates(static_cast<size_t>(num_links_), 0.0);
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (!classes_[i].active) continue;
    const int32_t c = static_cast<int32_t>(i);
    const int32_t* links = Links(c);
    for (int32_t k = 0; k < NumLinks(c); ++k) rates[static_cast<size_t>(links[k])] += Weight(c) * rate_[static_cast<size_t>(c)];
  }
  return rates;
}

FlowNetwork::FlowNetwork(const topo::Topology& topology, FlowOptions options)
    : impl_(std::make_unique<Impl>(topology, options)) {}
FlowNetwork::~FlowNetwork() = default;
void FlowNetwork::Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) {
  impl_->Start(id, src_core, dst_core, bytes, now);
}
Time FlowNetwork::NextEventTime() const { return impl_->NextEventTime(); }
std::vector<TransferId> FlowNetwork::Advance(Time t) { return impl_->Advance(t); }
std::vector<TransferId> FlowNetwork::TakeSent() { return impl_->TakeSent(); }
const std::vector<double>& FlowNetwork::LinkBytes() const { return impl_->LinkBytes(); }
FlowNetwork::Stats FlowNetwork::stats() const { return impl_->stats(); }
std::vector<double> FlowNetwork::LinkRates() const { return impl_->LinkRates(); }

}  // namespace podsim::sim
