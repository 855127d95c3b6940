#pragma once
// Internal to the program runner (sim/program/simulate.cc): the per-device execution of the plan
// on the engine, and what it records for the report.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/program/collective_executor.h"
#include "sim/program/program_plan.h"
#include "sim/program/sim_options.h"
#include "sim/program/trace.h"

namespace podsim::sim {

// What one device did.
struct DeviceRecord {
  Time finish;
  Time compute;                               // busy time of the compute stream
  std::vector<std::pair<Time, Time>> busy;       // merged compute intervals
  std::vector<std::pair<Time, Time>> in_flight;  // one per collective execution: arrival, done
  std::vector<Time> category_compute;            // per category
  std::vector<Time> category_communication;      // per category: collectives in flight
  std::vector<int64_t> collective_executions;    // per collective
  std::vector<Time> collective_time;             // per collective: summed arrival-to-done
  std::vector<Time> collective_max;              // per collective: longest arrival-to-done
};

class DeviceSimulator {
 public:
  DeviceSimulator(const ProgramPlan& plan, const topo::Topology& topology,
                  const SimOptions& options, std::vector<int64_t> traced_devices);
  ~DeviceSimulator();

  // Runs every device to the end. Throws podsim::Error if some device never finishes (a
  // collective whose group never completes).
  void Run();

  const std::vector<DeviceRecord>& records() const { return records_; }
  const CollectiveExecutor& collectives() const { return *collectives_; }
  int64_t events_run() const { return engine_.events_run(); }
  // The trace recorded for the traced devices (links are filled in by the caller).
  TraceData TakeTrace() { return std::move(trace_); }

 private:
  struct Frame {
    int32_t computation = 0;
    int32_t pc = 0;
    int64_t iteration = 0;
    int64_t trips = 1;
    Time start;
    int32_t loop_name = -1;          // trace name of the loop step that pushed it
    int32_t loop_category = 0;
    std::vector<int32_t> started;    // collectives started in this iteration
  };
  struct Device {
    std::vector<Frame> stack;
    Time clock;
    std::vector<Time> done;          // per collective: completion, Time::Max() in flight
    std::vector<int64_t> occurrences;
    std::vector<int64_t> open;       // per collective: index into in_flight
    int32_t blocked_on = -1;
    double slowdown = 1.0;
    bool traced = false;
    int64_t spans = 0;
  };

  void RunDevice(int64_t d);
  // Advances the clock past `ids`' completions; false (blocked) if one is still in flight.
  bool Wait(int64_t d, const std::vector<int32_t>& ids);
  // Runs the compute stream for `duration`; account: add it to the category's compute time.
  void Busy(int64_t d, Time duration, int32_t category, int32_t name, SpanKind kind,
            bool account = true);
  void OnDone(int64_t device, int32_t collective, Time t);
  void Span(int64_t d, int32_t name, int32_t category, SpanKind kind, Time start, Time duration);
  Time Scaled(Time t, double factor) const;
  void BuildTraceNames();

  const ProgramPlan& plan_;
  const SimOptions& options_;
  Engine engine_;
  std::unique_ptr<CollectiveExecutor> collectives_;
  std::vector<Device> devices_;
  std::vector<DeviceRecord> records_;
  TraceData trace_;
  std::vector<std::vector<int32_t>> step_names_;  // per computation, per step: trace name
  std::vector<int32_t> collective_names_;         // per collective: trace name
};

}  // namespace podsim::sim
