#pragma once
// The writers of a program run's RunResult: results.json (stable keys, deterministic), CSV
// tables, the terminal summary; the Chrome trace is in report/chrome_trace.h.

#include <string>

#include <nlohmann/json.hpp>

#include "sim/program/run_result.h"

namespace podsim::report {

using sim::RunResult;

// results.json: every field above but trace, per-device and per-op tables; stable keys; times
// in microseconds ("step_time_us").
nlohmann::json ResultsToJson(const RunResult& result);

// CSV tables (header line first):
//   categories.csv  category,compute_us,communication_us,modelled_us,roofline_us,flops,hbm_bytes,ops,collectives
//   collectives.csv instruction,kind,algorithm,category,group_size,bytes,executions,mean_us,max_us,roofline_us,memoized,closed_form,live_groups,replayed,joined
//   links.csv       link,src_chip,dst_chip,dim,direction,kind,bytes,utilization  (busy links)
//   ops.csv         instruction,opcode,category,fusion,fused,executions,modelled_us,roofline_us,bound,flops,hbm_bytes,matrix_efficiency
//   devices.csv     device,finish_us,compute_us,communication_us,overlap_us
std::string CategoriesCsv(const RunResult& result);
std::string CollectivesCsv(const RunResult& result);
std::string LinksCsv(const RunResult& result);
std::string OpsCsv(const RunResult& result);
std::string DevicesCsv(const RunResult& result);

// Writes results.json, the CSV tables and, when the trace was recorded, trace.json into `dir`
// (created if missing). Throws podsim::Error naming a file it cannot write.
void WriteResults(const RunResult& result, const std::string& dir);

// A few lines for a terminal: step time, compute / communication / overlap, roofline, top
// categories, memory, the busiest link.
std::string Summary(const RunResult& result);

}  // namespace podsim::report
