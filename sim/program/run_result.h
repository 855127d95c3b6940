#pragma once
// What a program simulation reports (RunResult): plain data. Its writers (results.json, CSV
// tables, the summary, the Chrome trace) are in report/.
//
// Time accounting is per device; the headline figures are those of the critical device (the one
// that finishes last, the lowest id on ties):
//   compute        time its compute stream is busy (modelled op times)
//   communication  time at least one of its collectives is in flight (arrival to done)
//   overlap        time both at once;  exposed communication = communication - overlap
//   idle           step - compute - exposed communication (waiting with nothing in flight)
// Categories (top-level IR name scope, sim/program/program_plan.h CategoryOf; a fused op counts in its
// dot's category, else its root's) split compute and communication; a category's modelled time is compute + communication, so with overlap the
// categories add up to more than the step. Roofline: compute ops at max(peak compute, HBM
// bytes / bandwidth), collectives at the bandwidth term of their algorithm's closed form, all
// summed with no overlap; roofline_fraction = roofline / step time.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "ir/literal.h"
#include "sim/program/memory.h"
#include "sim/program/trace.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct CategoryResult {
  std::string category;
  Time compute;        // critical device, modelled
  Time communication;  // critical device, its collectives in flight (arrival to done)
  Time roofline;       // compute roofline + collective rooflines, per device
  double flops = 0;       // per device
  double hbm_bytes = 0;   // per device, after fusion
  int64_t ops = 0;        // launched compute ops per device
  int64_t collectives = 0;  // collective executions per device
  Time modelled() const { return compute + communication; }
};

struct CollectiveResult {
  std::string instruction;  // "all-to-all.1"
  std::string kind;         // "all-to-all"
  std::string algorithm;
  std::string category;
  int64_t group_size = 0;      // members of its first group
  int64_t bytes = 0;           // per partition input bytes
  int64_t executions = 0;      // per device (loop trips included)
  Time mean;                // per execution, averaged over participating devices
  Time max;                 // longest arrival-to-done on any device
  Time roofline;            // per execution
  int64_t memoized = 0;        // instances timed from the exact memo
  int64_t closed_form = 0;     // instances timed from the closed form
  int64_t live_groups = 0;     // groups run on the shared network
  int64_t replayed = 0;        // memoized instances replayed under contention
  int64_t joined = 0;          // instances timed beside running ones without the shared network
};

struct LinkResult {
  int64_t link = -1;
  int64_t src_chip = 0;
  int64_t dst_chip = 0;
  int dim = -1;
  int direction = 0;
  std::string kind;          // "ici" or "on-chip"
  double bytes = 0;
  double utilization = 0;    // bytes / (bandwidth * step time)
};

struct LinkSummary {
  int64_t links = 0;         // directed links in the topology
  int64_t busy_links = 0;    // links that carried bytes
  double total_bytes = 0;
  double max_utilization = 0;
  double mean_utilization = 0;       // over all links
  double mean_busy_utilization = 0;  // over busy links
  LinkResult busiest;                // most bytes (link -1 when none)
};

struct DeviceResult {
  Time finish;
  Time compute;
  Time communication;
  Time overlap;
};

struct OpResult {
  std::string instruction;  // the fused group's root
  std::string opcode;
  std::string category;
  std::string fusion;       // FusionKindName
  int64_t fused = 1;        // instructions in the group
  int64_t executions = 0;   // per device
  Time modelled;         // per execution
  Time roofline;         // per execution
  std::string bound;
  double flops = 0;         // per execution
  double hbm_bytes = 0;     // per execution
  double matrix_efficiency = 1;
};

struct CollectiveCheck {
  std::string instruction;
  int64_t executions = 0;
  bool checked = false;   // false: the schedules cannot express it (note says why)
  double max_abs_error = 0;  // schedule result vs interpreter collective
  double tolerance = 0;
  std::string note;
  bool ok() const { return !checked || max_abs_error <= tolerance; }
};

struct FunctionalResult {
  std::vector<ir::Literal> outputs;         // per partition, the entry result
  std::vector<CollectiveCheck> collectives;  // per collective instruction
  // Largest |difference| between `outputs` and ir::InterpretSpmd of the same module (0 expected).
  double max_error_vs_interpreter = 0;
  bool ok() const;
};

// How a run ended: kOk, or kOom when a device's peak memory exceeds its HBM (the run is still
// simulated in full; memory.message says where).
enum class RunStatus : uint8_t { kOk, kOom };
// "ok", "oom": the status as results files write it.
const char* RunStatusName(RunStatus status);

struct RunResult {
  RunStatus status = RunStatus::kOk;
  std::string module;
  std::string topology;
  std::string device;  // DeviceSpec::name of the device every partition ran on
  int64_t num_partitions = 0;
  Time step_time;
  int64_t critical_device = 0;
  Time compute_time;
  Time communication_time;
  Time overlap_time;
  Time exposed_communication;
  Time idle_time;
  Time roofline_time;
  double roofline_fraction = 0;
  std::vector<CategoryResult> categories;  // sorted by name
  std::vector<CollectiveResult> collectives;
  std::vector<OpResult> ops;               // compute steps, in program order
  LinkSummary links;
  std::vector<LinkResult> busy_links;      // by utilisation, descending (ties: id)
  std::vector<DeviceResult> devices;       // per partition
  MemoryResult memory;
  int64_t fusion_groups = 0;               // launched compute ops in the program (static)
  int64_t fused_instructions = 0;
  double fusion_bytes_saved = 0;
  int64_t engine_events = 0;
  nlohmann::json config;                   // the fully resolved configuration
  TraceData trace;                         // when tracing was enabled
  std::optional<FunctionalResult> functional;
};

}  // namespace podsim::sim
