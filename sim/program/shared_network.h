#pragma once
// The shared network of a program run: one network model (sim/network/network_factory.h) on which the
// schedules of every collective group in flight run concurrently, so that collectives that
// overlap in time share links. Its events are driven by the engine (one wake-up event at the
// model's next event time); it reports, per run, when each partition's part is done (the last
// transfer that partition sends or receives) and when the whole run is done.
//
// The schedules run on the one schedule executor (sim/collectives/schedule_executor.h), as a
// collective timed alone does (RunTiming); this class adds the engine wake-ups and the record
// of busy periods.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/collectives/schedule_executor.h"
#include "sim/engine/engine.h"
#include "sim/network/network_model.h"
#include "sim/program/collective_memo.h"
#include "sim/program/trace.h"
#include "topologies/topology.h"

namespace podsim::sim {

// Nonzero entries of `bytes`, ascending.
std::vector<std::pair<int32_t, double>> SparseBytes(const std::vector<double>& bytes);

class SharedNetwork {
 public:
  struct Callbacks {
    // The partition's part is done at t (t may lie before engine.now() when a run is replayed
    // from the past; see StartRun).
    std::function<void(int64_t partition, Time t)> device_done;
    std::function<void(Time t)> finished;  // every transfer completed
  };

  SharedNetwork(Engine& engine, const topo::Topology& topology, const MemoOptions& options);
  ~SharedNetwork();
  SharedNetwork(const SharedNetwork&) = delete;
  SharedNetwork& operator=(const SharedNetwork&) = delete;

  // Starts running `data` at `start` <= engine.now(). A start in the past (a replay) is allowed
  // only while the network has been idle since `start`; CatchUp() then replays it up to now.
  void StartRun(std::shared_ptr<const ScheduleData> data, Time start, Callbacks callbacks,
                const std::string& label);
  // Processes every event up to engine.now() and schedules the next wake-up.
  void CatchUp();

  bool idle() const { return executor_.idle(); }
  // Bytes each directed link carried so far.
  const std::vector<double>& LinkBytes() const { return network_->LinkBytes(); }
  const std::vector<LinkPeriod>& periods() const { return periods_; }
  const std::string& model_name() const { return model_name_; }

 private:
  void Rearm();
  // Records the busy period that ends at t (the executor just went idle).
  void ClosePeriod(Time t);

  Engine& engine_;
  std::unique_ptr<NetworkModel> network_;
  std::string model_name_;
  ScheduleExecutor executor_;
  EventId wake_;
  Time wake_time_ = Time::Max();
  // The busy period in progress.
  Time period_start_;
  std::vector<double> period_snapshot_;
  std::vector<std::string> period_labels_;
  std::vector<LinkPeriod> periods_;
};

}  // namespace podsim::sim
