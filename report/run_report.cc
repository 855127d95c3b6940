#include "report/run_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/csv.h"
#include "base/error.h"
#include "base/version.h"
#include "base/format.h"
#include "base/io.h"
#include "base/units.h"
#include "report/chrome_trace.h"

namespace podsim::report {

using sim::CategoryResult;
using sim::CollectiveCheck;
using sim::CollectiveResult;
using sim::DeviceResult;
using sim::LinkResult;
using sim::OpResult;
using sim::RunStatusName;

namespace {

std::string Us(Time t) { return FormatG(t.micros(), 9); }

nlohmann::json LinkJson(const LinkResult& l) {
  return {{"link", l.link},           {"src_chip", l.src_chip}, {"dst_chip", l.dst_chip},
          {"dim", l.dim},             {"direction", l.direction}, {"kind", l.kind},
          {"bytes", l.bytes},         {"utilization", l.utilization}};
}

}  // namespace

nlohmann::json ResultsToJson(const RunResult& r) {
  nlohmann::json j;
  StampVersion(j);
  j["status"] = RunStatusName(r.status);
  j["module"] = r.module;
  j["topology"] = r.topology;
  j["device"] = r.device;
  j["num_partitions"] = r.num_partitions;
  j["step_time_us"] = r.step_time.micros();
  j["critical_device"] = r.critical_device;
  j["compute_time_us"] = r.compute_time.micros();
  j["communication_time_us"] = r.communication_time.micros();
  j["overlap_time_us"] = r.overlap_time.micros();
  j["exposed_communication_us"] = r.exposed_communication.micros();
  j["idle_time_us"] = r.idle_time.micros();
  j["roofline_time_us"] = r.roofline_time.micros();
  j["roofline_fraction"] = r.roofline_fraction;
  nlohmann::json cats = nlohmann::json::array();
  for (const CategoryResult& c : r.categories) {
    cats.push_back({{"category", c.category},
                    {"compute_us", c.compute.micros()},
                    {"communication_us", c.communication.micros()},
                    {"modelled_us", c.modelled().micros()},
                    {"roofline_us", c.roofline.micros()},
                    {"flops", c.flops},
                    {"hbm_bytes", c.hbm_bytes},
                    {"ops", c.ops},
                    {"collectives", c.collectives}});
  }
  j["categories"] = cats;
  nlohmann::json colls = nlohmann::json::array();
  for (const CollectiveResult& c : r.collectives) {
    colls.push_back({{"instruction", c.instruction},
                     {"kind", c.kind},
                     {"algorithm", c.algorithm},
                     {"category", c.category},
                     {"group_size", c.group_size},
                     {"bytes", c.bytes},
                     {"executions", c.executions},
                     {"mean_us", c.mean.micros()},
                     {"max_us", c.max.micros()},
                     {"roofline_us", c.roofline.micros()},
                     {"timed_by", {{"memoized", c.memoized},
                                   {"closed_form", c.closed_form},
                                   {"live_groups", c.live_groups},
                                   {"replayed", c.replayed},
                                   {"joined", c.joined}}}});
  }
  j["collectives"] = colls;
  j["links"] = {{"links", r.links.links},
                {"busy_links", r.links.busy_links},
                {"total_bytes", r.links.total_bytes},
                {"max_utilization", r.links.max_utilization},
                {"mean_utilization", r.links.mean_utilization},
                {"mean_busy_utilization", r.links.mean_busy_utilization},
                {"busiest", LinkJson(r.links.busiest)}};
  j["memory"] = {{"peak_bytes", r.memory.peak_bytes},
                 {"capacity_bytes", r.memory.capacity_bytes},
                 {"peak_instruction", r.memory.peak_instruction},
                 {"oom", r.memory.oom},
                 {"message", r.memory.message},
                 {"breakdown", {{"parameters", r.memory.at_peak.parameters},
                                {"temporaries", r.memory.at_peak.temporaries},
                                {"outputs", r.memory.at_peak.outputs}}},
                 {"by_kind", r.memory.at_peak.by_kind},
                 {"by_scope", r.memory.at_peak.by_scope}};
  j["fusion"] = {{"groups", r.fusion_groups},
                 {"fused_instructions", r.fused_instructions},
                 {"bytes_saved", r.fusion_bytes_saved}};
  j["engine_events"] = r.engine_events;
  if (r.functional) {
    nlohmann::json checks = nlohmann::json::array();
    for (const CollectiveCheck& c : r.functional->collectives) {
      checks.push_back({{"instruction", c.instruction},
                        {"executions", c.executions},
                        {"checked", c.checked},
                        {"max_abs_error", c.max_abs_error},
                        {"tolerance", c.tolerance},
                        {"ok", c.ok()},
                        {"note", c.note}});
    }
    j["functional"] = {{"ok", r.functional->ok()},
                       {"max_error_vs_interpreter", r.functional->max_error_vs_interpreter},
                       {"collectives", checks}};
  }
  j["config"] = r.config;
  return j;
}

std::string CategoriesCsv(const RunResult& r) {
  std::ostringstream os;
  os << "category,compute_us,communication_us,modelled_us,roofline_us,flops,hbm_bytes,ops,collectives\n";
  for (const CategoryResult& c : r.categories) {
    os << CsvField(c.category) << "," << Us(c.compute) << "," << Us(c.communication) << ","
       << Us(c.modelled()) << "," << Us(c.roofline) << "," << FormatG(c.flops, 9) << ","
       << FormatG(c.hbm_bytes, 9) << "," << c.ops << "," << c.collectives << "\n";
  }
  return os.str();
}

std::string CollectivesCsv(const RunResult& r) {
  std::ostringstream os;
  os << "instruction,kind,algorithm,category,group_size,bytes,executions,mean_us,max_us,"
        "roofline_us,memoized,closed_form,live_groups,replayed,joined\n";
  for (const CollectiveResult& c : r.collectives) {
    os << CsvField(c.instruction) << "," << c.kind << "," << c.algorithm << "," << CsvField(c.category)
       << "," << c.group_size << "," << c.bytes << "," << c.executions << "," << Us(c.mean)
       << "," << Us(c.max) << "," << Us(c.roofline) << "," << c.memoized << ","
       << c.closed_form << "," << c.live_groups << "," << c.replayed << "," << c.joined << "\n";
  }
  return os.str();
}

std::string LinksCsv(const RunResult& r) {
  std::ostringstream os;
  os << "link,src_chip,dst_chip,dim,direction,kind,bytes,utilization\n";
  for (const LinkResult& l : r.busy_links) {
    os << l.link << "," << l.src_chip << "," << l.dst_chip << "," << l.dim << "," << l.direction
       << "," << l.kind << "," << FormatG(l.bytes, 9) << "," << FormatG(l.utilization, 9) << "\n";
  }
  return os.str();
}

std::string OpsCsv(const RunResult& r) {
  std::ostringstream os;
  os << "instruction,opcode,category,fusion,fused,executions,modelled_us,roofline_us,bound,flops,"
        "hbm_bytes,matrix_efficiency\n";
  for (const OpResult& o : r.ops) {
    os << CsvField(o.instruction) << "," << o.opcode << "," << CsvField(o.category) << "," << o.fusion
       << "," << o.fused << "," << o.executions << "," << Us(o.modelled) << ","
       << Us(o.roofline) << "," << o.bound << "," << FormatG(o.flops, 9) << "," << FormatG(o.hbm_bytes, 9)
       << "," << FormatG(o.matrix_efficiency, 9) << "\n";
  }
  return os.str();
}

std::string DevicesCsv(const RunResult& r) {
  std::ostringstream os;
  os << "device,finish_us,compute_us,communication_us,overlap_us\n";
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceResult& x = r.devices[d];
    os << d << "," << Us(x.finish) << "," << Us(x.compute) << "," << Us(x.communication) << ","
       << Us(x.overlap) << "\n";
  }
  return os.str();
}

void WriteResults(const RunResult& result, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir + "': " + ec.message());
  const std::filesystem::path base(dir);
  WriteFileAtomic((base / "results.json").string(), ResultsToJson(result).dump(2) + "\n");
  WriteFileAtomic((base / "categories.csv").string(), CategoriesCsv(result));
  WriteFileAtomic((base / "collectives.csv").string(), CollectivesCsv(result));
  WriteFileAtomic((base / "links.csv").string(), LinksCsv(result));
  WriteFileAtomic((base / "ops.csv").string(), OpsCsv(result));
  WriteFileAtomic((base / "devices.csv").string(), DevicesCsv(result));
  if (!result.trace.devices.empty()) {
    report::WriteChromeTrace(result.trace, (base / "trace.json").string());
  }
}

std::string Summary(const RunResult& r) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s on %s, %lld partitions of %s: step %.1f us (device %lld)\n",
                r.module.c_str(), r.topology.c_str(), static_cast<long long>(r.num_partitions),
                r.device.c_str(), r.step_time.micros(),
                static_cast<long long>(r.critical_device));
  os << line;
  std::snprintf(line, sizeof(line),
                "  compute %.1f us, communication %.1f us (overlapped %.1f, exposed %.1f), idle %.1f us\n",
                r.compute_time.micros(), r.communication_time.micros(), r.overlap_time.micros(),
                r.exposed_communication.micros(), r.idle_time.micros());
  os << line;
  std::snprintf(line, sizeof(line), "  roofline %.1f us (%.0f%% of the step)\n",
                r.roofline_time.micros(), 100 * r.roofline_fraction);
  os << line;
  std::vector<const CategoryResult*> cats;
  for (const CategoryResult& c : r.categories) cats.push_back(&c);
  std::stable_sort(cats.begin(), cats.end(), [](const CategoryResult* a, const CategoryResult* b) {
    return a->modelled() > b->modelled();
  });
  for (const CategoryResult* c : cats) {
    if (c->modelled().picos() == 0 && c->roofline.picos() == 0) continue;
    std::snprintf(line, sizeof(line), "  %-24s %10.1f us modelled %10.1f us roofline\n",
                  c->category.c_str(), c->modelled().micros(), c->roofline.micros());
    os << line;
  }
  os << "  memory: peak " << FormatBytes(static_cast<double>(r.memory.peak_bytes)) << " of "
     << FormatBytes(r.memory.capacity_bytes) << " (parameters "
     << FormatBytes(static_cast<double>(r.memory.at_peak.parameters)) << ", temporaries "
     << FormatBytes(static_cast<double>(r.memory.at_peak.temporaries)) << ", outputs "
     << FormatBytes(static_cast<double>(r.memory.at_peak.outputs)) << ")";
  if (!r.memory.peak_instruction.empty()) os << " at " << r.memory.peak_instruction;
  os << "\n";
  // By kind, largest first (the weights / activations split of a training step).
  std::vector<std::pair<int64_t, std::string>> kinds;
  for (const auto& [kind, bytes] : r.memory.at_peak.by_kind) {
    if (bytes > 0) kinds.emplace_back(-bytes, kind);
  }
  std::sort(kinds.begin(), kinds.end());
  if (kinds.size() > 1) {
    os << "    by kind:";
    for (size_t k = 0; k < kinds.size(); ++k) {
      os << (k ? ", " : " ") << kinds[k].second << " "
         << FormatBytes(static_cast<double>(-kinds[k].first));
    }
    os << "\n";
  }
  if (r.memory.oom) os << "  " << r.memory.message << "\n";
  if (r.links.busiest.link >= 0) {
    std::snprintf(line, sizeof(line),
                  "  links: %lld of %lld busy, max utilisation %.1f%%, busiest link %lld (chip %lld -> %lld)\n",
                  static_cast<long long>(r.links.busy_links), static_cast<long long>(r.links.links),
                  100 * r.links.max_utilization, static_cast<long long>(r.links.busiest.link),
                  static_cast<long long>(r.links.busiest.src_chip),
                  static_cast<long long>(r.links.busiest.dst_chip));
    os << line;
  }
  return os.str();
}

}  // namespace podsim::report
