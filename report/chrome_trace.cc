#include "report/chrome_trace.h"

#include <fstream>
#include <unordered_map>

#include "base/error.h"
#include "base/io.h"
#include "sim/collectives/explain.h"

namespace podsim::report {
namespace {

using sim::SpanKind;
using sim::TraceSpan;
using sim::LinkPeriod;
using sim::TraceLink;

constexpr int kDevicesPid = 1;
constexpr int kLinksPid = 2;

nlohmann::json Metadata(const char* what, int pid, int64_t tid, const std::string& name) {
  nlohmann::json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

nlohmann::json SortIndex(int pid, int64_t tid, int64_t index) {
  return {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
          {"args", {{"sort_index", index}}}};
}

}  // namespace

nlohmann::json ChromeTrace(const TraceData& trace) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(Metadata("process_name", kDevicesPid, -1, "devices"));
  events.push_back(Metadata("process_name", kLinksPid, -1, "links"));
  // Two tracks per device: 2d = compute stream, 2d + 1 = collectives in flight.
  for (int64_t d : trace.devices) {
    events.push_back(Metadata("thread_name", kDevicesPid, 2 * d, "device " + std::to_string(d) + " compute"));
    events.push_back(SortIndex(kDevicesPid, 2 * d, 2 * d));
    events.push_back(Metadata("thread_name", kDevicesPid, 2 * d + 1,
                              "device " + std::to_string(d) + " collectives"));
    events.push_back(SortIndex(kDevicesPid, 2 * d + 1, 2 * d + 1));
  }
  for (const TraceSpan& s : trace.spans) {
    nlohmann::json args = trace.args[static_cast<size_t>(s.name)];
    args["category"] = trace.categories[static_cast<size_t>(s.category)];
    events.push_back({{"name", trace.names[static_cast<size_t>(s.name)]},
                      {"cat", trace.categories[static_cast<size_t>(s.category)]},
                      {"ph", "X"},
                      {"pid", kDevicesPid},
                      {"tid", 2 * s.device + (s.kind == SpanKind::kCollective ? 1 : 0)},
                      {"ts", s.start.micros()},
                      {"dur", s.duration.micros()},
                      {"args", args}});
  }
  std::unordered_map<int64_t, const TraceLink*> traced;
  for (size_t k = 0; k < trace.links.size(); ++k) {
    const TraceLink& l = trace.links[k];
    traced[l.link] = &l;
    events.push_back(Metadata("thread_name", kLinksPid, l.link, l.label));
    events.push_back(SortIndex(kLinksPid, l.link, static_cast<int64_t>(k)));
  }
  for (const LinkPeriod& p : trace.link_periods) {
    const double seconds = (p.end - p.start).seconds();
    for (const auto& [link, bytes] : p.bytes) {
      auto it = traced.find(link);
      if (it == traced.end()) continue;
      const double utilization = seconds > 0 ? bytes / (it->second->bandwidth * seconds) : 0.0;
      events.push_back({{"name", p.label},
                        {"cat", "network"},
                        {"ph", "X"},
                        {"pid", kLinksPid},
                        {"tid", link},
                        {"ts", p.start.micros()},
                        {"dur", (p.end - p.start).micros()},
                        {"args", {{"bytes", bytes}, {"utilization", utilization}}}});
    }
  }
  nlohmann::json out;
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ns";
  out["otherData"] = {{"dropped_spans", trace.dropped_spans}};
  return out;
}

void WriteChromeTrace(const TraceData& trace, const std::string& path) {
  WriteFileAtomic(path, ChromeTrace(trace).dump() + "\n");
}

// Chrome trace: one track (tid) per directed link that carried traffic, one slice per transfer
// on each link of each of its paths (a tie-split transfer has one per path, with that path's
// share of the bytes, as the timing run and --json count them), at most `max_events` slices.
nlohmann::json CollectiveLinkTrace(const sim::Schedule& schedule, const sim::TimingResult& timing,
                                   const topo::Topology& topo, const std::string& topology_name,
                                   size_t max_events) {
  nlohmann::json events = nlohmann::json::array();
  std::vector<bool> named(topo.links().size(), false);
  size_t count = 0;
  bool truncated = false;
  for (size_t t = 0; t < schedule.transfers.size() && !truncated; ++t) {
    const sim::ChunkTransfer& x = schedule.transfers[t];
    if (x.src == x.dst) continue;
    const double ts = timing.transfer_start[t].micros();
    const double dur = (timing.transfer_end[t] - timing.transfer_start[t]).micros();
    const int64_t bytes = x.elements * schedule.element_bytes;
    for (const topo::Topology::WeightedPath& path : topo.RouteSplit(x.src, x.dst)) {
      for (int64_t link : path.links) {
        if (count++ >= max_events) {
          truncated = true;
          break;
        }
        if (!named[link]) {
          named[link] = true;
          events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", link}, {"name", "thread_name"},
                            {"args", {{"name", sim::DescribeLink(topo, link)}}}});
        }
        events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", link}, {"ts", ts}, {"dur", dur},
                          {"name", "step " + std::to_string(x.step)},
                          {"args", {{"src", x.src}, {"dst", x.dst},
                                    {"bytes", static_cast<double>(bytes) * path.fraction}}}});
      }
      if (truncated) break;
    }
  }
  events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"},
                    {"args", {{"name", "links of " + topology_name}}}});
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  if (truncated) trace["otherData"] = {{"truncated_after_events", max_events}};
  return trace;
}

}  // namespace podsim::report
