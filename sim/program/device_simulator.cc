#include "sim/program/device_simulator.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace podsim::sim {

DeviceSimulator::DeviceSimulator(const ProgramPlan& plan, const topo::Topology& topology,
                                 const SimOptions& options, std::vector<int64_t> traced_devices)
    : plan_(plan), options_(options) {
  MemoOptions memo;
  memo.network = options.network;
  memo.network_options = options.network_options;
  memo.fixed_overhead = Time::FromMicros(options.collective_overhead_us);
  memo.local_copy_bandwidth = options.device.hbm_bandwidth.value;
  memo.exact_max_transfers = options.exact_collective_max_transfers;
  collectives_ = std::make_unique<CollectiveExecutor>(
      engine_, plan, topology, memo, options.memoize_collectives,
      [this](int64_t device, int32_t collective, Time t) { OnDone(device, collective, t); });
  const size_t n = static_cast<size_t>(plan.num_partitions);
  const size_t colls = plan.collectives.size();
  const size_t cats = plan.categories.size();
  devices_.resize(n);
  records_.resize(n);
  for (size_t d = 0; d < n; ++d) {
    Device& dev = devices_[d];
    dev.done.assign(colls, Time());
    dev.occurrences.assign(colls, 0);
    dev.open.assign(colls, -1);
    auto it = options.stragglers.find(static_cast<int64_t>(d));
    if (it != options.stragglers.end()) dev.slowdown = it->second;
    DeviceRecord& rec = records_[d];
    rec.category_compute.assign(cats, Time());
    rec.category_communication.assign(cats, Time());
    rec.collective_executions.assign(colls, 0);
    rec.collective_time.assign(colls, Time());
    rec.collective_max.assign(colls, Time());
  }
  if (options.trace.enabled) {
    for (int64_t d : traced_devices) {
      if (d >= 0 && d < plan.num_partitions) devices_[static_cast<size_t>(d)].traced = true;
    }
    trace_.devices = std::move(traced_devices);
    trace_.categories = plan.categories;
    BuildTraceNames();
  }
}

DeviceSimulator::~DeviceSimulator() = default;

void DeviceSimulator::BuildTraceNames() {
  auto add = [&](const std::string& name, nlohmann::json args) {
    trace_.names.push_back(name);
    trace_.args.push_back(std::move(args));
    return static_cast<int32_t>(trace_.names.size() - 1);
  };
  collective_names_.assign(plan_.collectives.size(), -1);
  for (size_t c = 0; c < plan_.collectives.size(); ++c) {
    const CollectivePlan& cp = plan_.collectives[c];
    collective_names_[c] =
        add(cp.instr->name, {{"op", ir::OpcodeName(cp.instr->opcode)},
                             {"algorithm", cp.algorithm.algorithm},
                             {"bytes", cp.spec.elements * cp.spec.element_bytes},
                             {"group_size", cp.groups.empty() ? 0 : cp.groups[0].size()},
                             {"roofline_us", cp.roofline.micros()}});
  }
  step_names_.resize(plan_.computations.size());
  for (size_t k = 0; k < plan_.computations.size(); ++k) {
    const ComputationPlan& cp = plan_.computations[k];
    step_names_[k].assign(cp.steps.size(), -1);
    for (size_t s = 0; s < cp.steps.size(); ++s) {
      const Step& step = cp.steps[s];
      if (step.kind == StepKind::kCompute) {
        const FusionGroup& g = cp.fusion.groups[static_cast<size_t>(step.group)];
        step_names_[k][s] = add(step.instr->name,
                                {{"op", ir::OpcodeName(step.instr->opcode)},
                                 {"fusion", FusionKindName(g.kind)},
                                 {"fused", g.members.size()},
                                 {"bound", BoundName(step.time.bound)},
                                 {"modelled_us", step.time.modelled.micros()},
                                 {"roofline_us", step.time.roofline.micros()},
                                 {"flops", step.work.flops()},
                                 {"hbm_bytes", step.work.hbm_bytes}});
      } else if (step.kind == StepKind::kLoop) {
        step_names_[k][s] = add(step.instr->name,
                                {{"op", "loop"}, {"trip_count", step.trip_count}});
      } else if (step.kind == StepKind::kCollective) {
        step_names_[k][s] = collective_names_[static_cast<size_t>(step.collective)];
      }
    }
  }
}

Time DeviceSimulator::Scaled(Time t, double factor) const {
  if (factor == 1.0) return t;
  return t.Scaled(factor);
}

void DeviceSimulator::Run() {
  for (size_t d = 0; d < devices_.size(); ++d) {
    Frame entry;
    entry.computation = 0;
    devices_[d].stack.push_back(std::move(entry));
  }
  for (size_t d = 0; d < devices_.size(); ++d) {
    engine_.Schedule(Time(), [this, d] { RunDevice(static_cast<int64_t>(d)); });
  }
  engine_.Run();
  for (size_t d = 0; d < devices_.size(); ++d) {
    const Device& dev = devices_[d];
    if (dev.stack.empty()) continue;
    std::string what = "device " + std::to_string(d) + " never finished";
    if (dev.blocked_on >= 0) {
      what += ": it waits for %" + plan_.collectives[static_cast<size_t>(dev.blocked_on)].instr->name +
              ", whose group never completed (do all members execute it?)";
    }
    throw Error(what);
  }
}

void DeviceSimulator::RunDevice(int64_t d) {
  Device& dev = devices_[static_cast<size_t>(d)];
  const Time now = engine_.now();
  dev.clock = std::max(dev.clock, now);
  while (!dev.stack.empty()) {
    Frame& f = dev.stack.back();
    const ComputationPlan& cp = plan_.computations[static_cast<size_t>(f.computation)];
    if (f.pc == static_cast<int32_t>(cp.steps.size())) {
      if (!Wait(d, f.started)) return;
      f.started.clear();
      if (dev.stack.size() == 1) {
        dev.stack.pop_back();
        records_[static_cast<size_t>(d)].finish = dev.clock;
        return;
      }
      if (++f.iteration < f.trips) {
        f.pc = 0;
        continue;
      }
      const Time start = f.start;
      const int32_t name = f.loop_name;
      const int32_t category = f.loop_category;
      dev.stack.pop_back();
      ++dev.stack.back().pc;
      if (dev.traced && name >= 0) Span(d, name, category, SpanKind::kLoop, start, dev.clock - start);
      continue;
    }
    const Step& s = cp.steps[static_cast<size_t>(f.pc)];
    if (!Wait(d, s.waits)) return;
    const int32_t name = dev.traced ? step_names_[static_cast<size_t>(f.computation)][static_cast<size_t>(f.pc)] : -1;
    switch (s.kind) {
      case StepKind::kBookkeeping:
        ++f.pc;
        break;
      case StepKind::kCompute:
        Busy(d, Scaled(s.time.modelled, dev.slowdown), s.category, name, SpanKind::kCompute);
        ++f.pc;
        break;
      case StepKind::kLoop: {
        const ComputationPlan& body = plan_.computations[static_cast<size_t>(s.body)];
        if (s.trip_count <= 0) {
          ++f.pc;
          break;
        }
        if (!body.has_collectives) {
          // Compute only: the cached body time, trip_count times, as one busy interval.
          DeviceRecord& rec = records_[static_cast<size_t>(d)];
          Time total;
          for (size_t c = 0; c < body.categories.size(); ++c) {
            const Time t = Scaled(body.categories[c].modelled * s.trip_count, dev.slowdown);
            rec.category_compute[c] += t;
            total += t;
          }
          Busy(d, total, s.category, name, SpanKind::kLoop, /*account=*/false);
          ++f.pc;
          break;
        }
        Frame frame;
        frame.computation = s.body;
        frame.trips = s.trip_count;
        frame.start = dev.clock;
        frame.loop_name = name;
        frame.loop_category = s.category;
        dev.stack.push_back(std::move(frame));  // invalidates f
        break;
      }
      case StepKind::kCollective: {
        if (dev.clock > engine_.now()) {
          engine_.Schedule(dev.clock, [this, d] { RunDevice(d); });
          return;
        }
        const int32_t id = s.collective;
        const size_t k = static_cast<size_t>(id);
        DeviceRecord& rec = records_[static_cast<size_t>(d)];
        const int64_t occurrence = dev.occurrences[k]++;
        ++rec.collective_executions[k];
        dev.done[k] = Time::Max();
        dev.open[k] = static_cast<int64_t>(rec.in_flight.size());
        rec.in_flight.emplace_back(dev.clock, Time::Max());
        f.started.push_back(id);
        ++f.pc;
        collectives_->Arrive(id, occurrence, d);  // may complete at once (not a member)
        if (!options_.async_collectives && !Wait(d, {id})) return;
        break;
      }
    }
  }
}

bool DeviceSimulator::Wait(int64_t d, const std::vector<int32_t>& ids) {
  Device& dev = devices_[static_cast<size_t>(d)];
  for (int32_t id : ids) {
    const Time done = dev.done[static_cast<size_t>(id)];
    if (done == Time::Max()) {
      dev.blocked_on = id;
      return false;
    }
    dev.clock = std::max(dev.clock, done);
  }
  return true;
}

void DeviceSimulator::Busy(int64_t d, Time duration, int32_t category, int32_t name, SpanKind kind,
                           bool account) {
  Device& dev = devices_[static_cast<size_t>(d)];
  DeviceRecord& rec = records_[static_cast<size_t>(d)];
  const Time start = dev.clock;
  const Time end = start + duration;
  rec.compute += duration;
  if (account) rec.category_compute[static_cast<size_t>(category)] += duration;
  if (duration.picos() > 0) {
    if (!rec.busy.empty() && rec.busy.back().second == start) {
      rec.busy.back().second = end;
    } else {
      rec.busy.emplace_back(start, end);
    }
  }
  if (dev.traced && name >= 0) Span(d, name, category, kind, start, duration);
  dev.clock = end;
}

void DeviceSimulator::OnDone(int64_t d, int32_t collective, Time t) {
  Device& dev = devices_[static_cast<size_t>(d)];
  DeviceRecord& rec = records_[static_cast<size_t>(d)];
  const size_t k = static_cast<size_t>(collective);
  dev.done[k] = t;
  auto& interval = rec.in_flight[static_cast<size_t>(dev.open[k])];
  interval.second = t;
  const Time took = t - interval.first;
  rec.collective_time[k] += took;
  rec.collective_max[k] = std::max(rec.collective_max[k], took);
  const CollectivePlan& c = plan_.collectives[k];
  rec.category_communication[static_cast<size_t>(c.category)] += took;
  if (dev.traced) {
    Span(d, collective_names_[k], c.category, SpanKind::kCollective, interval.first, took);
  }
  if (dev.blocked_on == collective) {
    dev.blocked_on = -1;
    RunDevice(d);
  }
}

void DeviceSimulator::Span(int64_t d, int32_t name, int32_t category, SpanKind kind, Time start,
                           Time duration) {
  Device& dev = devices_[static_cast<size_t>(d)];
  if (dev.spans >= options_.trace.max_events) {
    ++trace_.dropped_spans;
    return;
  }
  ++dev.spans;
  trace_.spans.push_back(TraceSpan{d, name, category, kind, start, duration});
}

}  // namespace podsim::sim
