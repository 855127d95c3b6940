#include "sim/program/simulate.h"

#include <algorithm>
#include <functional>
#include <set>

#include "base/config.h"
#include "base/error.h"
#include "sim/program/device_simulator.h"
#include "sim/program/functional_run.h"
#include "sim/program/memory.h"
#include "sim/program/program_plan.h"

namespace podsim::sim {

std::vector<int64_t> DefaultTraceDevices(int64_t num_partitions, const SimOptions& options) {
  std::set<int64_t> devices;
  if (num_partitions <= 8) {
    for (int64_t d = 0; d < num_partitions; ++d) devices.insert(d);
  } else {
    devices = {0, 1, num_partitions / 2, num_partitions - 1};
  }
  for (const auto& entry : options.stragglers) {
    if (entry.first < num_partitions) devices.insert(entry.first);
  }
  return {devices.begin(), devices.end()};
}

ProgramKind ClassifyProgram(const ir::Module& module) {
  bool annotated = false, spmd = false;
  std::function<void(const ir::Computation&)> scan = [&](const ir::Computation& c) {
    for (const auto& i : c.instructions()) {
      if (i->sharding && i->sharding->kind == ir::Sharding::Kind::kTiled) annotated = true;
      if (ir::IsCollective(i->opcode) || i->opcode == ir::Opcode::kPartitionId) spmd = true;
      if (i->opcode == ir::Opcode::kLoop && i->body) scan(*i->body);
    }
  };
  scan(*module.entry());
  if (spmd) return ProgramKind::kSpmd;
  return annotated ? ProgramKind::kGlobalAnnotated : ProgramKind::kUnannotated;
}

namespace {

// Throws when the module carries sharding annotations but was never partitioned.
void CheckSpmd(const ir::Module& module, int64_t partitions) {
  if (partitions > 1 && ClassifyProgram(module) == ProgramKind::kGlobalAnnotated) {
    throw Error("module '" + module.name() + "' has sharding annotations but no collectives or "
                "partition-id: it is a global program, not an SPMD one; partition it first: "
                "podsim partition, for " +
                std::to_string(partitions) + " partitions");
  }
}

// Length of the union of sorted intervals (merged in place) and its overlap with `busy`.
std::pair<Time, Time> UnionAndOverlap(std::vector<std::pair<Time, Time>> intervals,
                                      const std::vector<std::pair<Time, Time>>& busy) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<Time, Time>> merged;
  for (const auto& iv : intervals) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  Time total, overlap;
  for (const auto& m : merged) total += m.second - m.first;
  size_t b = 0;
  for (const auto& m : merged) {
    while (b < busy.size() && busy[b].second <= m.first) ++b;
    for (size_t k = b; k < busy.size() && busy[k].first < m.second; ++k) {
      const Time lo = std::max(m.first, busy[k].first);
      const Time hi = std::min(m.second, busy[k].second);
      if (hi > lo) overlap += hi - lo;
    }
  }
  return {total, overlap};
}

LinkResult MakeLink(const topo::Topology& topology, int64_t l, double bytes, Time step) {
  const topo::Link& link = topology.links()[static_cast<size_t>(l)];
  LinkResult r;
  r.link = l;
  r.src_chip = link.src_chip;
  r.dst_chip = link.dst_chip;
  r.dim = link.dim;
  r.direction = link.direction;
  r.kind = link.kind == topo::LinkKind::kIci ? "ici" : "on-chip";
  r.bytes = bytes;
  r.utilization = step.picos() > 0 ? bytes / (link.bandwidth.value * step.seconds()) : 0.0;
  return r;
}

// Per-op rows, in program order with loop bodies inline; executions multiply by trip counts.
void CollectOps(const ProgramPlan& plan, int32_t index, int64_t executions,
                std::vector<OpResult>& ops) {
  const ComputationPlan& cp = plan.computations[static_cast<size_t>(index)];
  for (const Step& s : cp.steps) {
    if (s.kind == StepKind::kLoop) {
      CollectOps(plan, s.body, executions * std::max<int64_t>(0, s.trip_count), ops);
      continue;
    }
    if (s.kind != StepKind::kCompute) continue;
    const FusionGroup& g = cp.fusion.groups[static_cast<size_t>(s.group)];
    OpResult o;
    o.instruction = s.instr->name;
    o.opcode = std::string(ir::OpcodeName(s.instr->opcode));
    o.category = plan.categories[static_cast<size_t>(s.category)];
    o.fusion = FusionKindName(g.kind);
    o.fused = static_cast<int64_t>(g.members.size());
    o.executions = executions;
    o.modelled = s.time.modelled;
    o.roofline = s.time.roofline;
    o.bound = BoundName(s.time.bound);
    o.flops = s.work.flops();
    o.hbm_bytes = s.work.hbm_bytes;
    o.matrix_efficiency = s.time.matrix_efficiency;
    ops.push_back(std::move(o));
  }
}

void Report(const ProgramPlan& plan, const topo::Topology& topology, const SimOptions& options,
            DeviceSimulator& sim, RunResult& r) {
  const auto& records = sim.records();
  const int64_t n = static_cast<int64_t>(records.size());
  r.devices.resize(records.size());
  for (int64_t d = 0; d < n; ++d) {
    const DeviceRecord& rec = records[static_cast<size_t>(d)];
    DeviceResult& out = r.devices[static_cast<size_t>(d)];
    out.finish = rec.finish;
    out.compute = rec.compute;
    const auto [communication, overlap] = UnionAndOverlap(rec.in_flight, rec.busy);
    out.communication = communication;
    out.overlap = overlap;
    if (out.finish > r.devices[static_cast<size_t>(r.critical_device)].finish) r.critical_device = d;
  }
  const DeviceRecord& crit = records[static_cast<size_t>(r.critical_device)];
  const DeviceResult& cd = r.devices[static_cast<size_t>(r.critical_device)];
  r.step_time = cd.finish;
  r.compute_time = cd.compute;
  r.communication_time = cd.communication;
  r.overlap_time = cd.overlap;
  r.exposed_communication = cd.communication - cd.overlap;
  r.idle_time = r.step_time - r.compute_time - r.exposed_communication;

  // Categories: compute and communication of the critical device; static rooflines.
  const ComputationPlan& entry = plan.computations[0];
  for (size_t c = 0; c < plan.categories.size(); ++c) {
    CategoryResult cat;
    cat.category = plan.categories[c];
    cat.compute = crit.category_compute[c];
    cat.communication = crit.category_communication[c];
    cat.roofline = entry.categories[c].roofline;
    cat.flops = entry.categories[c].flops;
    cat.hbm_bytes = entry.categories[c].hbm_bytes;
    cat.ops = entry.categories[c].ops;
    r.categories.push_back(std::move(cat));
  }
  const auto& counters = sim.collectives().counters();
  for (size_t k = 0; k < plan.collectives.size(); ++k) {
    const CollectivePlan& c = plan.collectives[k];
    CollectiveResult out;
    out.instruction = c.instr->name;
    out.kind = CollectiveKindName(c.spec.kind);
    out.algorithm = c.algorithm.algorithm;
    out.category = plan.categories[static_cast<size_t>(c.category)];
    out.group_size = c.groups.empty() ? 0 : static_cast<int64_t>(c.groups[0].size());
    out.bytes = c.spec.elements * c.spec.element_bytes;
    out.executions = crit.collective_executions[k];
    out.roofline = c.roofline;
    Time sum;
    int64_t count = 0;
    for (int64_t d = 0; d < n; ++d) {
      if (c.group_of[static_cast<size_t>(d)] < 0) continue;
      const DeviceRecord& rec = records[static_cast<size_t>(d)];
      sum += rec.collective_time[k];
      count += rec.collective_executions[k];
      out.max = std::max(out.max, rec.collective_max[k]);
    }
    out.mean = count > 0 ? sum / count : Time();
    out.memoized = counters[k].memoized;
    out.closed_form = counters[k].closed_form;
    out.live_groups = counters[k].live_groups;
    out.replayed = counters[k].replayed;
    out.joined = counters[k].joined;
    CategoryResult& cat = r.categories[static_cast<size_t>(c.category)];
    cat.roofline += c.roofline * out.executions;
    cat.collectives += out.executions;
    r.collectives.push_back(std::move(out));
  }
  for (const CategoryResult& c : r.categories) r.roofline_time += c.roofline;
  r.roofline_fraction = r.step_time.picos() > 0 ? r.roofline_time.seconds() / r.step_time.seconds() : 0.0;
  CollectOps(plan, 0, 1, r.ops);
  for (const ComputationPlan& cp : plan.computations) {
    for (const Step& s : cp.steps) r.fusion_groups += s.kind == StepKind::kCompute ? 1 : 0;
    r.fused_instructions += cp.fusion.fused_instructions;
    r.fusion_bytes_saved += cp.fusion.bytes_saved;
  }

  // Links.
  const std::vector<double> bytes = sim.collectives().LinkBytes();
  r.links.links = static_cast<int64_t>(topology.links().size());
  double utilization_sum = 0;
  for (size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] <= 0) continue;
    LinkResult link = MakeLink(topology, static_cast<int64_t>(l), bytes[l], r.step_time);
    ++r.links.busy_links;
    r.links.total_bytes += bytes[l];
    utilization_sum += link.utilization;
    r.links.max_utilization = std::max(r.links.max_utilization, link.utilization);
    r.busy_links.push_back(std::move(link));
  }
  // Busiest first: the longest busy (bytes / bandwidth, i.e. utilisation over the step), so
  // links.busiest is the link of links.max_utilization.
  std::stable_sort(r.busy_links.begin(), r.busy_links.end(),
                   [](const LinkResult& a, const LinkResult& b) { return a.utilization > b.utilization; });
  if (!r.busy_links.empty()) r.links.busiest = r.busy_links.front();
  if (r.links.links > 0) r.links.mean_utilization = utilization_sum / static_cast<double>(r.links.links);
  if (r.links.busy_links > 0) {
    r.links.mean_busy_utilization = utilization_sum / static_cast<double>(r.links.busy_links);
  }
  r.engine_events = sim.events_run();

  if (options.trace.enabled) {
    r.trace = sim.TakeTrace();
    const int64_t count = std::min<int64_t>(options.trace.max_links,
                                            static_cast<int64_t>(r.busy_links.size()));
    for (int64_t k = 0; k < count; ++k) {
      const LinkResult& l = r.busy_links[static_cast<size_t>(k)];
      const topo::Link& link = topology.links()[static_cast<size_t>(l.link)];
      std::string label = "link " + std::to_string(l.link) + ": chip " +
                          std::to_string(l.src_chip) + " -> chip " + std::to_string(l.dst_chip);
      if (l.kind == "on-chip") {
        label += " (on-chip, core " + std::to_string(link.src_core) + " -> " +
                 std::to_string(link.dst_core) + ")";
      } else if (l.dim >= 0) {
        label += " (dim " + std::to_string(l.dim) + (l.direction > 0 ? " +)" : " -)");
      }
      r.trace.links.push_back(TraceLink{l.link, label, link.bandwidth.value});
    }
    r.trace.link_periods = sim.collectives().LinkPeriods();
  }
}

// Validates `options` against the module and topology; the number of partitions and the plan
// options of the run.
PlanOptions CheckRun(const ir::Module& module, const topo::Topology& topology,
                     const SimOptions& options) {
  options.Validate("sim");
  if (!module.entry()) throw Error("module '" + module.name() + "' has no entry computation");
  const int64_t partitions = options.num_partitions > 0 ? options.num_partitions : topology.num_cores();
  if (partitions > topology.num_cores()) {
    FailAt("sim.num_partitions", std::to_string(partitions) + " partitions do not fit topology '" +
                                           topology.name() + "' (" + std::to_string(topology.num_cores()) +
                                           " cores)");
  }
  for (const auto& [d, factor] : options.stragglers) {
    if (d >= partitions) {
      FailAt("sim.stragglers." + std::to_string(d),
                   "no such device (" + std::to_string(partitions) + " partitions)");
    }
  }
  for (size_t k = 0; k < options.trace.devices.size(); ++k) {
    if (options.trace.devices[k] >= partitions) {
      FailAt("sim.trace.devices[" + std::to_string(k) + "]",
                   "no such device (" + std::to_string(partitions) + " partitions)");
    }
  }
  if (options.functional && partitions > kMaxFunctionalPartitions) {
    FailAt("sim.functional", "functional mode is for small pods: " + std::to_string(partitions) +
                                       " partitions (at most " +
                                       std::to_string(kMaxFunctionalPartitions) + ")");
  }
  CheckSpmd(module, partitions);
  PlanOptions plan_options;
  plan_options.device = options.device;
  plan_options.fusion = options.fusion;
  plan_options.num_partitions = partitions;
  plan_options.category_depth = options.category_depth;
  plan_options.algorithms = options.collective_algorithms;
  return plan_options;
}

}  // namespace

MemoryResult SimulateMemory(const ir::Module& module, const topo::Topology& topology,
                            const SimOptions& options) {
  const ProgramPlan plan = BuildProgramPlan(module, topology, CheckRun(module, topology, options));
  return AnalyzeMemory(plan, static_cast<double>(options.device.hbm_capacity.value),
                       options.async_collectives);
}

RunResult Simulate(const ir::Module& module, const topo::Topology& topology,
                   const SimOptions& options) {
  const PlanOptions plan_options = CheckRun(module, topology, options);
  const int64_t partitions = plan_options.num_partitions;
  SimOptions resolved = options;
  resolved.num_partitions = partitions;
  const ProgramPlan plan = BuildProgramPlan(module, topology, plan_options);

  RunResult r;
  r.module = module.name();
  r.topology = topology.name();
  r.device = options.device.name;
  r.num_partitions = partitions;
  r.memory = AnalyzeMemory(plan, static_cast<double>(options.device.hbm_capacity.value),
                           options.async_collectives);
  if (r.memory.oom) r.status = RunStatus::kOom;

  std::vector<int64_t> traced = options.trace.devices;
  if (traced.empty()) traced = DefaultTraceDevices(partitions, options);
  std::sort(traced.begin(), traced.end());
  traced.erase(std::unique(traced.begin(), traced.end()), traced.end());
  DeviceSimulator sim(plan, topology, resolved, traced);
  sim.Run();
  Report(plan, topology, resolved, sim, r);

  if (options.functional) r.functional = RunFunctionalProgram(module, plan, topology, resolved);

  r.config = resolved.ToJson();
  r.config["topology"] = topology.ToJson();
  return r;
}

}  // namespace podsim::sim
