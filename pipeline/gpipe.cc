#include "pipeline/gpipe.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <tuple>

#include "base/error.h"
#include "ir/cost.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/timing.h"
#include "sim/network/network_factory.h"
#include "sim/program/simulate.h"

namespace podsim::pipeline {

const char* GPipeEventName(GPipeEvent::Kind kind) {
  switch (kind) {
    case GPipeEvent::kForward:
      return "forward";
    case GPipeEvent::kBackward:
      return "backward";
    case GPipeEvent::kSendForward:
      return "send activations";
    case GPipeEvent::kSendBackward:
      return "send gradients";
    case GPipeEvent::kAllReduce:
      return "all-reduce gradients";
    case GPipeEvent::kOptimizer:
      return "optimizer";
  }
  return "?";
}

GPipeSchedule ScheduleGPipe(const std::vector<StageCost>& stages, int64_t micro_batches) {
  const int64_t k = static_cast<int64_t>(stages.size());
  const int64_t m = micro_batches;
  if (k < 1) throw Error("a pipeline needs at least one stage");
  if (m < 1) throw Error("micro_batches: must be >= 1, got " + std::to_string(m));
  GPipeSchedule out;
  std::vector<std::vector<Time>> fend(k, std::vector<Time>(m)), bend(k, std::vector<Time>(m));
  auto add = [&](int64_t s, GPipeEvent::Kind kind, int64_t mb, Time start, Time end) {
    out.events.push_back({s, kind, mb, start, end});
  };
  for (int64_t s = 0; s < k; ++s) {
    for (int64_t b = 0; b < m; ++b) {
      Time start = b > 0 ? fend[s][b - 1] : Time();
      if (s > 0) {
        const Time arrive = fend[s - 1][b] + stages[s - 1].send_forward;
        add(s - 1, GPipeEvent::kSendForward, b, fend[s - 1][b], arrive);
        start = std::max(start, arrive);
      }
      fend[s][b] = start + stages[s].forward;
      add(s, GPipeEvent::kForward, b, start, fend[s][b]);
    }
  }
  for (int64_t s = k - 1; s >= 0; --s) {
    for (int64_t b = m - 1; b >= 0; --b) {
      Time start = b == m - 1 ? fend[s][m - 1] : bend[s][b + 1];
      if (s < k - 1) {
        const Time arrive = bend[s + 1][b] + stages[s + 1].send_backward;
        add(s + 1, GPipeEvent::kSendBackward, b, bend[s + 1][b], arrive);
        start = std::max(start, arrive);
      }
      bend[s][b] = start + stages[s].backward;
      add(s, GPipeEvent::kBackward, b, start, bend[s][b]);
    }
  }
  for (int64_t s = 0; s < k; ++s) {
    const Time reduced = bend[s][0] + stages[s].all_reduce;
    add(s, GPipeEvent::kAllReduce, -1, bend[s][0], reduced);
    const Time updated = reduced + stages[s].optimizer;
    add(s, GPipeEvent::kOptimizer, -1, reduced, updated);
    out.pipeline_time = std::max(out.pipeline_time, bend[s][0]);
    out.step_time = std::max(out.step_time, updated);
    out.busy.push_back((stages[s].forward + stages[s].backward) * m);
  }
  if (out.step_time > Time()) {
    double idle = 0;
    for (Time busy : out.busy) idle += (out.pipeline_time - busy).seconds();
    out.bubble_fraction = idle / static_cast<double>(k) / out.step_time.seconds();
  }
  return out;
}

std::vector<int64_t> BalanceStages(const std::vector<double>& costs, int64_t stages) {
  const int64_t n = static_cast<int64_t>(costs.size());
  if (stages < 1 || stages > n) {
    throw Error("stages: must be in [1, " + std::to_string(n) + "] (the model's pieces), got " +
                std::to_string(stages));
  }
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  auto run = [&](int64_t a, int64_t b) { return prefix[b] - prefix[a]; };  // [a, b)
  // best[j][i]: the smallest largest sum of pieces [0, i) in j stages.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  best[0][0] = 0;
  for (int64_t j = 1; j <= stages; ++j) {
    for (int64_t i = j; i <= n; ++i) {
      for (int64_t t = j - 1; t < i; ++t) {
        best[j][i] = std::min(best[j][i], std::max(best[j - 1][t], run(t, i)));
      }
    }
  }
  const double limit = best[stages][n];
  // Greedy under the optimum: each stage as long as the limit and the stages still to fill
  // allow.
  std::vector<int64_t> first = {0};
  for (int64_t i = 1; i < n; ++i) {
    const int64_t opened = static_cast<int64_t>(first.size());
    if (opened == stages) break;
    if (run(first.back(), i + 1) > limit || n - i == stages - opened) first.push_back(i);
  }
  return first;
}

const char* GPipePlacementName(GPipePlacement p) {
  return p == GPipePlacement::kReplicaMajor ? "replica-major" : "stage-major";
}

GPipePlacement ParseGPipePlacement(const std::string& name) {
  if (name == "replica-major") return GPipePlacement::kReplicaMajor;
  if (name == "stage-major") return GPipePlacement::kStageMajor;
  throw Error("placement: must be replica-major or stage-major, got '" + name + "'");
}

namespace {

struct PieceCost {
  Time forward, backward, optimizer;
  int64_t weight_bytes = 0, state_bytes = 0;
  int64_t working_bytes = 0;  // the backward module's peak beyond its weights and accumulators
  double forward_matrix_flops = 0;
};

PieceCost CostPiece(const models::DenseTransformerConfig& model, models::DensePiece piece,
                    int64_t tokens, const models::OptimizerConfig& optimizer,
                    const topo::Topology& topology, const sim::SimOptions& options) {
  const models::PieceModules m = models::BuildDensePiece(model, piece, tokens, optimizer);
  sim::SimOptions one = options;
  one.num_partitions = 1;
  one.trace.enabled = false;
  PieceCost c;
  c.forward = sim::Simulate(*m.forward, topology, one).step_time;
  const sim::RunResult backward = sim::Simulate(*m.backward, topology, one);
  c.backward = backward.step_time;
  c.optimizer = sim::Simulate(*m.optimizer, topology, one).step_time;
  c.weight_bytes = m.weight_bytes;
  c.state_bytes = m.state_bytes;
  c.working_bytes = std::max<int64_t>(0, backward.memory.peak_bytes - 2 * m.weight_bytes);
  c.forward_matrix_flops =
      ir::AnalyzeCost(*m.forward).per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;
  return c;
}

// One collective alone on an idle network, as the program simulator times it.
Time TimeCollective(const sim::CollectiveSpec& spec, const topo::Topology& topology,
                    const sim::SimOptions& options) {
  sim::AlgorithmOptions algorithm;
  auto it = options.collective_algorithms.find(sim::CollectiveKindName(spec.kind));
  if (it != options.collective_algorithms.end()) algorithm = it->second;
  const sim::Schedule schedule = sim::BuildSchedule(spec, topology, algorithm);
  std::unique_ptr<sim::NetworkModel> network =
      sim::MakeNetworkModel(options.network, topology, options.network_options);
  sim::TimingOptions timing;
  timing.fixed_overhead = Time::FromMicros(options.collective_overhead_us);
  return sim::RunTiming(schedule, topology, *network, timing).total;
}

}  // namespace

GPipeRun RunGPipe(const models::DenseTransformerConfig& model, const GPipeOptions& gpipe,
                  const models::OptimizerConfig& optimizer, const topo::Topology& topology,
                  const sim::SimOptions& options) {
  models::ValidateDenseConfig(model);
  const int64_t cores = topology.num_cores();
  const int64_t k = gpipe.stages, m = gpipe.micro_batches;
  const std::vector<models::DensePiece> pieces = models::DensePieces(model);
  const int64_t n = static_cast<int64_t>(pieces.size());
  if (k < 1 || k > n || cores % k != 0) {
    throw Error("stages: " + std::to_string(k) + " must divide the topology's " +
                std::to_string(cores) + " cores and be at most the model's " + std::to_string(n) +
                " pieces");
  }
  if (m < 1) throw Error("micro_batches: must be >= 1, got " + std::to_string(m));
  GPipeRun run;
  run.replicas = cores / k;
  // m <= batch_tokens / replicas first, so that replicas x m cannot overflow.
  if (gpipe.batch_tokens < 1 || m > gpipe.batch_tokens / run.replicas ||
      gpipe.batch_tokens % (run.replicas * m) != 0) {
    throw Error("batch_tokens: " + std::to_string(gpipe.batch_tokens) + " is not a multiple of " +
                std::to_string(run.replicas) + " replicas x " + std::to_string(m) +
                " micro-batches");
  }
  run.micro_batch_tokens = gpipe.batch_tokens / (run.replicas * m);
  if (run.micro_batch_tokens % model.seq_len != 0) {
    throw Error("micro_batches: a micro-batch of " + std::to_string(run.micro_batch_tokens) +
                " tokens (batch_tokens / replicas / micro_batches) is not a whole number of " +
                std::to_string(model.seq_len) + "-token sequences");
  }
  run.parameters = models::DenseParameters(model);

  // Each kind of piece, costed once.
  std::map<models::DensePiece, PieceCost> costs;
  for (models::DensePiece p : pieces) {
    if (!costs.count(p)) {
      costs[p] = CostPiece(model, p, run.micro_batch_tokens, optimizer, topology, options);
    }
  }
  std::vector<double> compute;
  for (models::DensePiece p : pieces) {
    compute.push_back((costs[p].forward + costs[p].backward).seconds());
    run.model_flops += 3 * costs[p].forward_matrix_flops;
  }
  run.model_flops *= static_cast<double>(run.replicas * m);
  const std::vector<int64_t> first = BalanceStages(compute, k);

  const int64_t act_bytes = run.micro_batch_tokens * model.d_model * ir::ByteWidth(model.dtype);
  const int64_t r_count = run.replicas;
  auto core = [&](int64_t r, int64_t s) {
    return gpipe.placement == GPipePlacement::kReplicaMajor ? r * k + s : s * r_count + r;
  };
  int64_t largest_gradient = 0;
  for (int64_t s = 0; s < k; ++s) {
    GPipeStage st;
    st.first_piece = first[s];
    st.pieces = (s + 1 < k ? first[s + 1] : n) - first[s];
    int64_t fixed = 0, working = 0;
    for (int64_t i = st.first_piece; i < st.first_piece + st.pieces; ++i) {
      const PieceCost& c = costs[pieces[i]];
      st.cost.forward += c.forward;
      st.cost.backward += c.backward;
      st.cost.optimizer += c.optimizer;
      st.parameters += models::PieceParameters(model, pieces[i]);
      st.encoder_layers += pieces[i] == models::DensePiece::kEncoderLayer;
      st.decoder_layers += pieces[i] == models::DensePiece::kDecoderLayer;
      fixed += 2 * c.weight_bytes + c.state_bytes;  // weights, accumulators, state
      working = std::max(working, c.working_bytes);
    }
    st.input_bytes = models::PieceInputTensors(pieces[st.first_piece]) * act_bytes;
    st.peak_bytes = fixed + m * st.input_bytes + working;
    largest_gradient = std::max(largest_gradient, st.parameters);
    run.stages.push_back(st);
  }

  // Stage transfers: every replica's pair at once.
  for (int64_t s = 0; s + 1 < k; ++s) {
    const models::DensePiece last = pieces[first[s + 1] - 1];
    sim::CollectiveSpec spec;
    spec.kind = sim::CollectiveKind::kCollectivePermute;
    spec.element_bytes = ir::ByteWidth(model.dtype);
    spec.elements = models::PieceOutputTensors(last) * act_bytes / spec.element_bytes;
    for (int64_t r = 0; r < r_count; ++r)
      spec.source_target_pairs.push_back({core(r, s), core(r, s + 1)});
    run.stages[s].cost.send_forward = TimeCollective(spec, topology, options);
    for (auto& [src, dst] : spec.source_target_pairs) std::swap(src, dst);
    run.stages[s + 1].cost.send_backward = TimeCollective(spec, topology, options);
  }
  // Gradient AllReduces: every stage's group at once, each the largest stage's size.
  if (r_count > 1) {
    sim::CollectiveSpec spec;
    spec.kind = sim::CollectiveKind::kAllReduce;
    spec.element_bytes = ir::ByteWidth(model.weight_dtype);
    spec.elements = largest_gradient;
    for (int64_t s = 0; s < k; ++s) {
      spec.replica_groups.emplace_back();
      for (int64_t r = 0; r < r_count; ++r) spec.replica_groups.back().push_back(core(r, s));
    }
    const Time t = TimeCollective(spec, topology, options);
    for (GPipeStage& st : run.stages) st.cost.all_reduce = t;
  }

  std::vector<StageCost> stage_costs;
  for (const GPipeStage& st : run.stages) stage_costs.push_back(st.cost);
  run.schedule = ScheduleGPipe(stage_costs, m);
  const int64_t hbm = options.device.hbm_capacity.value;
  for (int64_t s = 0; s < k; ++s) {
    const int64_t peak = run.stages[s].peak_bytes;
    if (peak > run.peak_bytes) run.peak_bytes = peak;
    if (peak > hbm && !run.oom) {
      run.oom = true;
      run.oom_detail = "stage " + std::to_string(s) + ": " +
                       FormatBytes(static_cast<double>(peak)) + " > " +
                       FormatBytes(static_cast<double>(hbm)) + " HBM";
    }
  }
  return run;
}

sim::TraceData GPipeTrace(const GPipeRun& run, const GPipeOptions& gpipe) {
  sim::TraceData t;
  const int64_t k = static_cast<int64_t>(run.stages.size());
  auto device = [&](int64_t s) {
    return gpipe.placement == GPipePlacement::kReplicaMajor ? s : s * run.replicas;
  };
  for (int64_t s = 0; s < k; ++s) t.devices.push_back(device(s));
  std::sort(t.devices.begin(), t.devices.end());
  std::map<std::string, int32_t> names, categories;
  auto index = [](std::map<std::string, int32_t>& ids, std::vector<std::string>& list,
                  const std::string& key) {
    auto [it, added] = ids.emplace(key, static_cast<int32_t>(list.size()));
    if (added) list.push_back(key);
    return it->second;
  };
  auto span = [&](int64_t s, const std::string& name, const std::string& category,
                  sim::SpanKind kind, Time start, Time end) {
    sim::TraceSpan x;
    x.device = device(s);
    x.name = index(names, t.names, name);
    if (t.args.size() < t.names.size()) t.args.push_back(nlohmann::json::object());
    x.category = index(categories, t.categories, category);
    x.kind = kind;
    x.start = start;
    x.duration = end - start;
    t.spans.push_back(x);
  };
  // Compute, in time order per stage, with the idle gaps of the pipeline phase as bubbles.
  std::vector<Time> last(k);
  for (const GPipeEvent& e : run.schedule.events) {
    const std::string what = GPipeEventName(e.kind);
    const std::string name = e.micro_batch >= 0 ? what + " " + std::to_string(e.micro_batch) : what;
    const bool compute = e.kind == GPipeEvent::kForward || e.kind == GPipeEvent::kBackward ||
                         e.kind == GPipeEvent::kOptimizer;
    if (!compute) {
      span(e.stage, name, what, sim::SpanKind::kCollective, e.start, e.end);
      continue;
    }
    if (e.start > last[e.stage] && e.kind != GPipeEvent::kOptimizer) {
      span(e.stage, "bubble", "bubble", sim::SpanKind::kCompute, last[e.stage], e.start);
    }
    span(e.stage, name, what, sim::SpanKind::kCompute, e.start, e.end);
    last[e.stage] = e.end;
  }
  // The trace writer takes spans per device in time order.
  std::stable_sort(t.spans.begin(), t.spans.end(),
                   [](const sim::TraceSpan& a, const sim::TraceSpan& b) {
                     return std::tie(a.device, a.start) < std::tie(b.device, b.start);
                   });
  return t;
}

}  // namespace podsim::pipeline
