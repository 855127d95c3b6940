#pragma once
// The timeline of a program run. Its Chrome trace form (report/chrome_trace.h; traceEvents JSON,
// opens in Perfetto and chrome://tracing) has process "devices" with, per traced device, a compute track (one slice
// per fused op or loop, op name as the slice name, category and details in args) and a
// collectives track (one slice per collective from arrival to done); process "links" with one
// track per traced link (one slice per period it carried bytes: a memoized collective or a busy
// period of the shared network, with bytes and utilisation in args).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/units.h"

namespace podsim::sim {

// Bytes links carried over one interval: a memoized collective, or a period during which the
// shared network was busy. Sparse: (link id, bytes), ascending ids.
struct LinkPeriod {
  Time start;
  Time end;
  std::vector<std::pair<int32_t, double>> bytes;
  std::string label;  // what ran: collective instruction names
};

enum class SpanKind : uint8_t { kCompute, kLoop, kCollective };

struct TraceSpan {
  int64_t device = 0;
  int32_t name = 0;      // index into TraceData::names
  int32_t category = 0;  // index into TraceData::categories
  SpanKind kind = SpanKind::kCompute;
  Time start;
  Time duration;
};

struct TraceLink {
  int64_t link = 0;
  std::string label;  // "link 12: chip 3 -> chip 4 (dim 0 +)"
  double bandwidth = 0;
};

struct TraceData {
  std::vector<std::string> names;      // instruction names ("dot.3")
  std::vector<nlohmann::json> args;    // per name: static details (op, fusion, bound, ...)
  std::vector<std::string> categories;
  std::vector<int64_t> devices;        // traced devices, ascending
  std::vector<TraceSpan> spans;        // in the order they were simulated
  std::vector<TraceLink> links;        // traced links (the busiest)
  std::vector<LinkPeriod> link_periods;
  int64_t dropped_spans = 0;           // over TraceOptions::max_events
};

}  // namespace podsim::sim
