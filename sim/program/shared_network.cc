#include "sim/program/shared_network.h"

#include <algorithm>

#include "base/error.h"

namespace podsim::sim {

std::vector<std::pair<int32_t, double>> SparseBytes(const std::vector<double>& bytes) {
  std::vector<std::pair<int32_t, double>> out;
  for (size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] > 0) out.emplace_back(static_cast<int32_t>(l), bytes[l]);
  }
  return out;
}

SharedNetwork::SharedNetwork(Engine& engine, const topo::Topology& topology,
                             const MemoOptions& options)
    : engine_(engine), topology_(topology), options_(options),
      network_(MakeNetworkModel(options.network, topology, options.network_options)),
      model_name_(network_->name()) {}

SharedNetwork::~SharedNetwork() = default;

void SharedNetwork::StartRun(std::shared_ptr<const ScheduleData> data, Time start,
                             Callbacks callbacks, const std::string& label) {
  if (start > engine_.now()) throw Error("SharedNetwork::StartRun: start lies in the future");
  auto run = std::make_unique<Run>();
  run->data = std::move(data);
  const int64_t n = static_cast<int64_t>(run->data->schedule.transfers.size());
  run->base = next_base_;
  next_base_ += std::max<int64_t>(1, n);
  run->remaining = run->data->deps;
  run->touches_left = run->data->touches;
  run->left = n;
  run->callbacks = std::move(callbacks);
  if (runs_.empty()) {
    period_start_ = start;
    period_snapshot_ = network_->LinkBytes();
    period_labels_.clear();
  }
  if (std::find(period_labels_.begin(), period_labels_.end(), label) == period_labels_.end()) {
    period_labels_.push_back(label);
  }
  pending_starts_.push({(start + options_.fixed_overhead).ps, run->base});
  runs_[run->base] = std::move(run);
}

void SharedNetwork::CatchUp() {
  ProcessUntil(engine_.now());
  Rearm();
}

void SharedNetwork::ProcessUntil(Time until) {
  while (true) {
    const Time t_net = network_->NextEventTime();
    const Time t_local = local_.empty() ? Time::Max() : Time{local_.top().first};
    const Time t_start = pending_starts_.empty() ? Time::Max() : Time{pending_starts_.top().first};
    const Time t = std::min({t_net, t_local, t_start});
    if (t == Time::Max() || t > until) break;
    if (t_net == t) {
      for (TransferId id : network_->Advance(t)) Complete(id, t);
    }
    while (!local_.empty() && local_.top().first == t.ps) {
      const int64_t id = local_.top().second;
      local_.pop();
      Complete(id, t);
    }
    while (!pending_starts_.empty() && pending_starts_.top().first == t.ps) {
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

void SharedNetwork::Rearm() {
  const Time t_net = network_->NextEventTime();
  const Time t_local = local_.empty() ? Time::Max() : Time{local_.top().first};
  const Time t_start = pending_starts_.empty() ? Time::Max() : Time{pending_starts_.top().first};
  const Time next = std::min({t_net, t_local, t_start});
  if (next == wake_time_) return;
  if (wake_time_ != Time::Max()) engine_.Cancel(wake_);
  wake_time_ = next;
  if (next == Time::Max()) return;
  wake_ = engine_.Schedule(next, [this] {
    wake_time_ = Time::Max();
    CatchUp();
  });
}

void SharedNetwork::StartRoots(int64_t base, Time t) {
  auto it = runs_.find(base);
  if (it == runs_.end()) return;
  Run& run = *it->second;
  const ScheduleData& d = *run.data;
  for (int64_t p : d.participants) {
    if (p < static_cast<int64_t>(d.touches.size()) && d.touches[static_cast<size_t>(p)] == 0) {
      run.callbacks.device_done(p, t);
    }
  }
  if (run.left == 0) {
    Finish(base, t);
    return;
  }
  for (int64_t r : d.roots) StartTransfer(run, r, t);
}

void SharedNetwork::StartTransfer(Run& run, int64_t index, Time t) {
  const Schedule& s = run.data->schedule;
  const ChunkTransfer& tr = s.transfers[static_cast<size_t>(index)];
  const int64_t bytes = s.Bytes(tr);
  const int64_t id = run.base + index;
  if (tr.local()) {
    if (options_.local_copy_bandwidth > 0 && bytes > 0) {
      const Time d = TransferTime(Bytes{bytes}, BytesPerSecond{options_.local_copy_bandwidth});
      local_.push({(t + d).ps, id});
    } else {
      immediate_.push_back(id);
    }
    return;
  }
  network_->Start(id, tr.src, tr.dst, Bytes{bytes}, t);
}

void SharedNetwork::Complete(int64_t id, Time t) {
  auto it = runs_.upper_bound(id);
  if (it == runs_.begin()) throw Error("SharedNetwork: unknown transfer " + std::to_string(id));
  --it;
  Run& run = *it->second;
  const int64_t index = id - run.base;
  const ScheduleData& d = *run.data;
  const ChunkTransfer& tr = d.schedule.transfers[static_cast<size_t>(index)];
  for (int64_t k = d.first_successor[static_cast<size_t>(index)];
       k < d.first_successor[static_cast<size_t>(index) + 1]; ++k) {
    const int64_t s = d.successors[static_cast<size_t>(k)];
    if (--run.remaining[static_cast<size_t>(s)] == 0) StartTransfer(run, s, t);
  }
  Touch(run, tr.src, t);
  if (tr.dst != tr.src) Touch(run, tr.dst, t);
  if (--run.left == 0) Finish(run.base, t);
}

void SharedNetwork::Touch(Run& run, int64_t partition, Time t) {
  if (--run.touches_left[static_cast<size_t>(partition)] == 0) {
    run.callbacks.device_done(partition, t);
  }
}

void SharedNetwork::Finish(int64_t base, Time t) {
  auto it = runs_.find(base);
  std::unique_ptr<Run> run = std::move(it->second);
  runs_.erase(it);
  if (runs_.empty()) {
    LinkPeriod period;
    period.start = period_start_;
    period.end = t;
    const std::vector<double>& now = network_->LinkBytes();
    std::vector<double> diff(now.size(), 0.0);
    for (size_t l = 0; l < now.size(); ++l) {
      diff[l] = now[l] - (l < period_snapshot_.size() ? period_snapshot_[l] : 0.0);
    }
    period.bytes = SparseBytes(diff);
    for (const std::string& label : period_labels_) {
      period.label += (period.label.empty() ? "" : " ") + label;
    }
    periods_.push_back(std::move(period));
  }
  run->callbacks.finished(t);
}

}  // namespace podsim::sim
