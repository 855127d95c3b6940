#include "sim/trace.h"

#include <fstream>
#include <unordered_map>

#include "ir/error.h"

namespace podsim::sim {

namespace {

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
  std::ofstream out(path);
  if (!out) throw Error("cannot write trace file '" + path + "'");
  out << ChromeTrace(trace).dump() << "\n";
  if (!out) throw Error("error writing trace file '" + path + "'");
}

}  // namespace podsim::sim
