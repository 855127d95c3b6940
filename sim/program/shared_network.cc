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
    : engine_(engine),
      network_(MakeNetworkModel(options.network, topology, options.network_options)),
      model_name_(network_->name()),
      executor_(*network_, {options.fixed_overhead, options.local_copy_bandwidth}) {}

SharedNetwork::~SharedNetwork() = default;

void SharedNetwork::StartRun(std::shared_ptr<const ScheduleData> data, Time start,
                             Callbacks callbacks, const std::string& label) {
  if (start > engine_.now()) throw Error("SharedNetwork::StartRun: start lies in the future");
  if (executor_.idle()) {
    period_start_ = start;
    period_snapshot_ = network_->LinkBytes();
    period_labels_.clear();
  }
  if (std::find(period_labels_.begin(), period_labels_.end(), label) == period_labels_.end()) {
    period_labels_.push_back(label);
  }
  ScheduleExecutor::Callbacks run;
  run.device_done = std::move(callbacks.device_done);
  run.finished = [this, finished = std::move(callbacks.finished)](Time t) {
    if (executor_.idle()) ClosePeriod(t);
    finished(t);
  };
  const Schedule& schedule = data->schedule;
  const ScheduleIndex& index = data->index;
  const std::vector<int64_t>& participants = data->participants;
  executor_.Start(schedule, index, data, participants, start, std::move(run));
}

void SharedNetwork::CatchUp() {
  executor_.AdvanceTo(engine_.now());
  Rearm();
}

void SharedNetwork::Rearm() {
  const Time next = executor_.NextEventTime();
  if (next == wake_time_) return;
  if (wake_time_ != Time::Max()) engine_.Cancel(wake_);
  wake_time_ = next;
  if (next == Time::Max()) return;
  wake_ = engine_.Schedule(next, [this] {
    wake_time_ = Time::Max();
    CatchUp();
  });
}

void SharedNetwork::ClosePeriod(Time t) {
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

}  // namespace podsim::sim
