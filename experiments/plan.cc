#include "experiments/plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "base/config.h"
#include "base/error.h"
#include "base/format.h"
#include "base/parallel.h"
#include "base/units.h"
#include "experiments/plan_units.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "ir/cost.h"
#include "ir/dtype.h"
#include "models/gshard_model.h"
#include "models/layer_mesh.h"
#include "models/training_step.h"
#include "sim/device/device.h"
#include "sim/program/simulate.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

using plan_units::kGiB;
using plan_units::Ms;

using models::GShardModelConfig;

// What a pod offers a candidate: its cores, its device and its bandwidth per core.
struct Pod {
  std::string name;
  nlohmann::json topology_json;
  std::unique_ptr<topo::Topology> topology;
  int64_t cores = 0, chips = 0, cores_per_chip = 1;
  sim::DeviceSpec device;
  double ici_per_core = 0;     // bytes/s: every ICI link's bandwidth, summed, over the cores
  double onchip_per_core = 0;  // bytes/s: the on-chip links' likewise (0: none)
  double memory_limit = 0;     // bytes per core
  nlohmann::json sim;          // the sim options every candidate on this pod runs with
};

// The per-device sim options of a finalist: the spec's, with the memory limit as the device's
// HBM when one is given.
nlohmann::json FinalistSim(const PlanSpec& spec, const Pod& pod) {
  nlohmann::json sim = spec.sim;
  if (spec.memory_limit > 0) {
    nlohmann::json device = sim.contains("device") ? sim["device"]
                            : pod.topology_json.contains("device")
                                ? pod.topology_json["device"]
                                : nlohmann::json(pod.device.name);
    if (device.is_string()) device = {{"preset", device}};
    device["hbm_capacity"] = spec.memory_limit;
    sim["device"] = device;
  }
  return sim;
}

Pod LoadPod(const std::string& name, const PlanSpec& spec) {
  Pod p;
  p.name = name;
  p.topology_json = PointTopologyJson(name, spec.topology_overrides, "plan");
  p.topology = topo::LoadTopology(p.topology_json, "plan.topology");
  const topo::Topology* t = p.topology.get();
  p.cores = t->num_cores();
  p.chips = t->num_chips();
  p.cores_per_chip = t->cores_per_chip();
  p.device = PointSimOptions(spec.sim, p.topology_json, "plan", p.cores).device;
  double ici = 0, onchip = 0;
  for (const topo::Link& l : t->links()) {
    (l.kind == topo::LinkKind::kIci ? ici : onchip) += l.bandwidth.value;
  }
  p.ici_per_core = ici / static_cast<double>(p.cores);
  p.onchip_per_core = onchip / static_cast<double>(p.cores);
  p.memory_limit =
      spec.memory_limit > 0 ? spec.memory_limit : static_cast<double>(p.device.hbm_capacity.value);
  p.sim = FinalistSim(spec, p);
  return p;
}

// The chip-seconds that 1e12 tokens take at `step_s` per step of the candidate's batch.
double ChipSecondsPer1e12Tokens(double step_s, const PlanCandidate& c) {
  return 1e12 / static_cast<double>(c.batch_tokens) * step_s * static_cast<double>(c.chips);
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t k = 1; k * k <= n; ++k) {
    if (n % k != 0) continue;
    out.push_back(k);
    if (k != n / k) out.push_back(n / k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The spec's model with the candidate's layout; "groups" gives way to the batch.
nlohmann::json CandidateModelJson(const nlohmann::json& base, int64_t batch, int64_t s,
                                  int64_t expert, int64_t model, int64_t micro_batches) {
  nlohmann::json j = base;
  j.erase("groups");
  j["batch_tokens"] = batch;
  j["tokens_per_group"] = s;
  j["expert_parallel"] = expert;
  j["model_parallel"] = model;
  j["micro_batches"] = micro_batches;
  return j;
}

// The whole training step (no recomputation) run unpartitioned on one core of the pod: the
// compute of every core together, and the part of it in the gating categories (gate_einsums,
// gate_cumsum, forward and backward), which a model axis does not split.
struct OneCoreStep {
  double step_s = 0;
  double gate_s = 0;
  double matrix_flops = 0;  // the step's matmul FLOPs, as executed (ir::AnalyzeCost)
  // At the peak: the forward values live (those the backward pass reads among them), nothing
  // recomputed: the whole batch's activations on one core.
  double activation_bytes = 0;
};
OneCoreStep SimulateOneCore(GShardModelConfig m, const Pod& pod, const PlanSpec& spec) {
  m.layer.annotate = false;
  m.layer.num_devices = 1;
  std::set<std::string> stacked;
  const std::unique_ptr<ir::Module> loss = models::BuildGShardModelLoss(m, &stacked);
  models::TrainingStepOptions o = models::StepOptions(0, stacked);
  o.return_gradients = false;
  o.remat = ir::LoopRemat::kAll;
  const models::TrainingStep step =
      models::BuildTrainingStep(*loss, models::FloatParameters(*loss), spec.optimizer, o);
  sim::SimOptions options = PointSimOptions(pod.sim, pod.topology_json, "plan", 1);
  options.category_depth = 2;
  const sim::RunResult r = sim::Simulate(*step.module, *pod.topology, options);
  OneCoreStep out;
  out.matrix_flops =
      ir::AnalyzeCost(*step.module).per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;
  out.step_s = r.step_time.seconds();
  for (const char* kind : {"activations", "saved_activations"}) {
    auto it = r.memory.at_peak.by_kind.find(kind);
    if (it != r.memory.at_peak.by_kind.end())
      out.activation_bytes += static_cast<double>(it->second);
  }
  for (const sim::CategoryResult& c : r.categories) {
    if (c.category.find("gate_") != std::string::npos) out.gate_s += c.compute.seconds();
  }
  return out;
}

// Per-core parameter bytes under the mesh (exact: the annotated module's shards).
int64_t WeightsPerCore(GShardModelConfig m) {
  return models::CountParameters(*models::BuildGShardModelLoss(m)).per_device_bytes;
}

// What the estimates need of the model: the same for every candidate.
struct ModelFacts {
  GShardModelConfig base;
  int64_t batch = 0;           // tokens
  int64_t n_moe = 0;           // MoE layers
  double act = 0, wbytes = 0;  // bytes of an activation, of a weight
  double expert_params = 0, dense_params = 0;
};

ModelFacts ReadModel(const PlanSpec& spec) {
  ModelFacts f;
  f.base = GShardModelConfig::FromJson(spec.model, "plan.model", {});
  const models::MoeLayerConfig& l = f.base.layer;
  f.batch = l.num_groups * l.tokens_per_group;
  f.n_moe = f.base.num_layers / f.base.moe_every;
  f.act = static_cast<double>(ir::ByteWidth(l.dtype));
  f.wbytes = static_cast<double>(ir::ByteWidth(l.weight_dtype));
  // Expert parameters: wi and wo of every MoE layer.
  f.expert_params = static_cast<double>(f.n_moe) * 2.0 * static_cast<double>(l.num_experts) *
                    static_cast<double>(l.d_model) * static_cast<double>(l.d_ff);
  GShardModelConfig one = f.base;
  one.layer.annotate = false;
  one.layer.num_devices = 1;
  f.dense_params =
      static_cast<double>(models::CountParameters(*models::BuildGShardModelLoss(one)).total) -
      f.expert_params;
  return f;
}

// A layout to try: a data x expert x model mesh, a group size and a micro-batch count.
struct Layout {
  int64_t data = 1, expert = 1, model = 1, tokens_per_group = 0, micro_batches = 1;
};

// The layouts of the model on `d` cores that the sizes allow (the model config validates each):
// model dividing d, the heads and d_ff; expert dividing d / model and the experts; S in S0/4 ..
// 2 S0 where seq_len divides it and it divides the batch; micro-batch counts 1, 2, 4, 8 whose
// micro-batches' groups split over data x expert.
std::vector<Layout> Layouts(const models::MoeLayerConfig& l, int64_t batch, int64_t d) {
  std::vector<int64_t> sizes;
  for (int64_t s : {l.tokens_per_group / 4, l.tokens_per_group / 2, l.tokens_per_group,
                    2 * l.tokens_per_group}) {
    if (s >= l.seq_len && s % l.seq_len == 0 && batch % s == 0) sizes.push_back(s);
  }
  std::vector<Layout> out;
  for (int64_t model : Divisors(d)) {
    if (l.num_heads % model != 0 || l.d_ff % model != 0) continue;
    for (int64_t expert : Divisors(d / model)) {
      if (l.num_experts % expert != 0) continue;
      const int64_t data = d / (model * expert);
      for (int64_t s : sizes) {
        for (int64_t k : {1, 2, 4, 8}) {
          if ((batch / s) % (k * data * expert) == 0) out.push_back({data, expert, model, s, k});
        }
      }
    }
  }
  return out;
}

// The candidate's bound, estimates, memory floor and, when its floor exceeds the pod's limit,
// its oom status; `one` is the unpartitioned step at its group size.
void Estimate(PlanCandidate& c, const ModelFacts& f, const Pod& pod, const OneCoreStep& one) {
  const models::MoeLayerConfig& l = f.base.layer;
  const int64_t g = c.groups, k = c.micro_batches;
  // The bound: the step's matmul FLOPs as executed without recomputation, split D ways, except
  // the gating einsums, which run on activations replicated over the model axis. Per group: the
  // logits 2SME (forward, and backward to the inputs and wg), dispatch 2SECM (forward, and
  // backward to the inputs only: the dispatch mask is built from comparisons and has no
  // gradient), combine 2SECM (forward, backward to both operands): 3 x 2SME + 2 x 2SECM +
  // 3 x 2SECM.
  const double sd = static_cast<double>(c.tokens_per_group);
  const double e = static_cast<double>(l.num_experts), mm = static_cast<double>(l.d_model);
  const double cap = static_cast<double>(c.capacity);
  const double d = static_cast<double>(c.cores), de = static_cast<double>(c.data * c.expert);
  const double gate = static_cast<double>(f.n_moe) * static_cast<double>(g) *
                      (3 * 2 * sd * mm * e + 5 * 2 * sd * e * cap * mm);
  c.compute_bound_s = ((one.matrix_flops - gate) / d + gate / de) / pod.device.matrix_bf16.value;
  c.compute_estimate_s = (one.step_s - one.gate_s) / d + one.gate_s / de;
  // Micro-batches: each adds its gradients into the sums (both read, one written: 3 x the
  // weights' bytes through HBM). Memory: the weights (and the sums) plus the forward values of
  // one micro-batch, the whole batch's split over the data x expert devices that split the
  // groups; when that exceeds the limit the step recomputes each layer's forward in the backward
  // pass (per-layer remat), a third of its compute.
  const double kd = static_cast<double>(k);
  const double wb = static_cast<double>(c.weights_bytes);
  if (k > 1) c.compute_estimate_s += kd * 3 * wb / pod.device.hbm_bandwidth.value;
  c.memory_floor_bytes = c.weights_bytes * (k > 1 ? 2 : 1);
  c.remat_expected = static_cast<double>(c.memory_floor_bytes) + one.activation_bytes / (de * kd) >
                     pod.memory_limit;
  if (c.remat_expected) c.compute_estimate_s *= 4.0 / 3.0;
  // Communication per core, bytes sent.
  const double local_groups = static_cast<double>(g) / de;
  const double dispatched = local_groups * e * cap * mm * f.act;  // one AllToAll's input
  const double ef = static_cast<double>(c.expert);
  const double a2a = 4.0 * static_cast<double>(f.n_moe) * dispatched * (ef - 1) / ef;
  // Model axis: per encoder layer 2 and per decoder layer 3 AllReduces of the activations,
  // forward and backward (2.5 L x 2), 2 (m - 1) / m of them each.
  const double mf = static_cast<double>(c.model);
  const double activations = local_groups * sd * mm * f.act;
  const double mp =
      c.model > 1 ? 5.0 * static_cast<double>(f.base.num_layers) * activations * 2 * (mf - 1) / mf
                  : 0;
  // Gradients: dense ones AllReduced over data x expert, expert ones over data, once per
  // micro-batch (the partitioner reduces them where each micro-batch makes them).
  const double dd = static_cast<double>(c.data);
  const double grads = f.dense_params / mf * f.wbytes * 2 * (de - 1) / de +
                       f.expert_params / (ef * mf) * f.wbytes * 2 * (dd - 1) / dd;
  const bool on_chip =
      c.model <= pod.cores_per_chip && pod.cores_per_chip % c.model == 0 && pod.onchip_per_core > 0;
  c.comm_estimate_s = (a2a + kd * grads) / pod.ici_per_core +
                      mp / (on_chip ? pod.onchip_per_core : pod.ici_per_core);
  c.estimate_s = std::max(c.compute_bound_s, c.compute_estimate_s) + c.comm_estimate_s;
  if (static_cast<double>(c.memory_floor_bytes) > pod.memory_limit) {
    c.status = PlanStatus::kOom;
    c.reason = std::string(k > 1 ? "weights and gradient sums" : "weights") + " alone " +
               FormatFixed(static_cast<double>(c.memory_floor_bytes) / kGiB, 2) + " GiB > " +
               FormatFixed(pod.memory_limit / kGiB, 2) + " GiB per core";
  }
}

double CostOf(double step_s, const PlanCandidate& c, double price) {
  if (price <= 0 || step_s <= 0) return 0;
  return ChipSecondsPer1e12Tokens(step_s, c) / 3600.0 * price;
}

std::string Pct(double f) { return FormatFixed(f * 100, 0) + "%"; }

// Why a simulated candidate that fits lost to `best`.
std::string LoserReason(const PlanCandidate& c, const PlanCandidate& best, bool cost) {
  std::string r = "+" + Pct(c.Objective(cost) / best.Objective(cost) - 1) +
                  (cost ? " cost" : " step time") + ": ";
  if (c.exposed_comm_fraction > best.exposed_comm_fraction + 0.02) {
    return r + "communication-bound (exposed communication " + Pct(c.exposed_comm_fraction) +
           " of its step, the best's " + Pct(best.exposed_comm_fraction) + ")";
  }
  if (c.recompute_fraction > best.recompute_fraction + 0.02) {
    return r + "recomputation (" + c.remat + ": " + Pct(c.recompute_fraction) +
           " of its step, the best's " + Pct(best.recompute_fraction) + ")";
  }
  if (c.compute_bound_s > best.compute_bound_s * 1.02) {
    return r + "more matmul work per core (bound " + Ms(c.compute_bound_s) + " ms vs " +
           Ms(best.compute_bound_s) + " ms)";
  }
  return r + "slower compute (smaller or padded matmuls, more vector and memory work per core)";
}

}  // namespace

const char* PlanStatusName(PlanStatus s) {
  switch (s) {
    case PlanStatus::kBest:
      return "best";
    case PlanStatus::kSimulated:
      return "simulated";
    case PlanStatus::kOom:
      return "oom";
    case PlanStatus::kBound:
      return "bound";
    case PlanStatus::kUnsimulated:
      return "unsimulated";
    case PlanStatus::kFailed:
      return "failed";
  }
  return "?";
}

double PlanCandidate::Objective(bool cost) const {
  const double t = simulated ? step_s : estimate_s;
  return cost ? ChipSecondsPer1e12Tokens(t, *this) : t;
}

PlanResult RunPlan(const PlanSpec& spec) {
  if (spec.topologies.empty()) FailAt("plan.topology", "name at least one pod");
  if (spec.finalists < 1) FailAt("plan.finalists", "must be >= 1");
  if (spec.objective_cost && !(spec.price_per_chip_hour > 0)) {
    FailAt("plan.price_per_chip_hour", "the cost objective needs a price per chip-hour > 0");
  }
  if (spec.memory_limit < 0) FailAt("plan.memory_limit", "must be >= 0");
  const ModelFacts f = ReadModel(spec);
  const models::MoeLayerConfig& l0 = f.base.layer;

  PlanResult plan;
  plan.objective_cost = spec.objective_cost;
  plan.memory_limit = spec.memory_limit;
  std::vector<Pod> pods;
  for (const std::string& name : spec.topologies) pods.push_back(LoadPod(name, spec));
  for (const Pod& pod : pods) {
    std::map<int64_t, OneCoreStep> one_core;                 // S -> the step on one core
    std::map<std::pair<int64_t, int64_t>, int64_t> weights;  // (expert, model) -> bytes
    for (const Layout& layout : Layouts(l0, f.batch, pod.cores)) {
      PlanCandidate c;
      c.topology = pod.name;
      c.cores = pod.cores;
      c.chips = pod.chips;
      c.data = layout.data;
      c.expert = layout.expert;
      c.model = layout.model;
      c.tokens_per_group = layout.tokens_per_group;
      c.groups = f.batch / layout.tokens_per_group;
      c.micro_batches = layout.micro_batches;
      c.batch_tokens = f.batch;
      c.model_json = CandidateModelJson(spec.model, f.batch, c.tokens_per_group, c.expert, c.model,
                                        c.micro_batches);
      GShardModelConfig m = GShardModelConfig::FromJson(c.model_json, "plan.model", {});
      m.layer.num_devices = pod.cores;
      try {
        models::ValidateModelConfig(m);
      } catch (const Error&) {
        continue;  // a layout the model cannot take (enumeration keeps only those it can)
      }
      c.capacity = models::ExpertCapacity(m.layer);
      auto w = weights.find({c.expert, c.model});
      if (w == weights.end())
        w = weights.emplace(std::pair{c.expert, c.model}, WeightsPerCore(m)).first;
      c.weights_bytes = w->second;
      auto one = one_core.find(c.tokens_per_group);
      if (one == one_core.end()) {
        GShardModelConfig u = m;
        u.layer.model_parallel = 1;
        u.layer.expert_parallel = 0;
        u.micro_batches = 1;
        one = one_core.emplace(c.tokens_per_group, SimulateOneCore(u, pod, spec)).first;
      }
      Estimate(c, f, pod, one->second);
      c.cost_per_1e12_tokens = CostOf(c.estimate_s, c, spec.price_per_chip_hour);
      plan.candidates.push_back(std::move(c));
    }
  }
  if (plan.candidates.empty()) {
    throw Error("plan: no layout of the model fits the pods' cores (experts " +
                std::to_string(l0.num_experts) + ", batch " + std::to_string(f.batch) +
                " tokens, heads " + std::to_string(l0.num_heads) + ")");
  }

  // Finalists: the best estimates among those whose weights fit.
  const bool cost = spec.objective_cost;
  std::vector<size_t> order;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    if (plan.candidates[i].status != PlanStatus::kOom) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.candidates[a].Objective(cost) < plan.candidates[b].Objective(cost);
  });
  const size_t n = std::min(order.size(), static_cast<size_t>(spec.finalists));
  std::map<std::string, const Pod*> pod_of;
  for (const Pod& p : pods) pod_of[p.name] = &p;
  ParallelFor(n, spec.jobs, [&](size_t k) {
    PlanCandidate& c = plan.candidates[order[k]];
    const Pod& pod = *pod_of.at(c.topology);
    TrainingPointSpec point;
    point.model = c.model_json;
    point.topology = c.topology;
    point.topology_overrides = spec.topology_overrides;
    point.sim = pod.sim;
    point.optimizer = spec.optimizer;
    c.simulated = true;
    try {
      const TrainingPointResult r = RunTrainingPoint(point, "plan.candidate");
      c.step_s = r.step_s;
      c.mfu = r.mfu;
      c.peak_bytes = r.run.memory.peak_bytes;
      c.remat = ir::LoopRematName(r.run.remat);
      c.recompute_fraction = r.run.recompute_fraction;
      c.exposed_comm_fraction = r.run.result.exposed_communication.seconds() / r.step_s;
      c.cost_per_1e12_tokens = CostOf(c.step_s, c, spec.price_per_chip_hour);
      if (std::string(r.status) == kPointOom) {
        c.status = PlanStatus::kOom;
        c.reason = "peak " + FormatFixed(static_cast<double>(c.peak_bytes) / kGiB, 2) + " GiB > " +
                   FormatFixed(pod.memory_limit / kGiB, 2) +
                   " GiB per core under every remat policy";
      } else {
        c.status = PlanStatus::kSimulated;
      }
    } catch (const std::exception& e) {
      c.status = PlanStatus::kFailed;
      c.reason = e.what();
    }
  });
  plan.simulated = static_cast<int64_t>(n);

  // The best simulated, then why every other lost.
  PlanCandidate* best = nullptr;
  for (size_t k = 0; k < n; ++k) {
    PlanCandidate& c = plan.candidates[order[k]];
    if (c.status == PlanStatus::kSimulated &&
        (!best || c.Objective(cost) < best->Objective(cost))) {
      best = &c;
    }
  }
  if (best) best->status = PlanStatus::kBest;
  for (size_t k = 0; k < order.size(); ++k) {
    PlanCandidate& c = plan.candidates[order[k]];
    if (k < n) {
      if (c.status == PlanStatus::kSimulated) c.reason = LoserReason(c, *best, cost);
      continue;
    }
    // Not simulated: a lower bound above the best proves it slower.
    double bound = c.compute_bound_s;
    if (cost) bound = ChipSecondsPer1e12Tokens(bound, c);
    if (best && bound >= best->Objective(cost)) {
      c.status = PlanStatus::kBound;
      c.reason = "its compute alone (" + Ms(c.compute_bound_s) +
                 " ms at peak) exceeds the best's " +
                 (cost ? "cost" : "step (" + Ms(best->step_s) + " ms)");
    } else {
      c.status = PlanStatus::kUnsimulated;
      c.reason = "estimate ranks " + std::to_string(k + 1) + " of " + std::to_string(order.size()) +
                 "; not simulated (raise --finalists)";
    }
  }
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(),
                   [&](const PlanCandidate& a, const PlanCandidate& b) {
                     if (a.status != b.status) return a.status < b.status;
                     return a.Objective(cost) < b.Objective(cost);
                   });
  return plan;
}

std::unique_ptr<ir::Module> SmallMeshModule(const PlanCandidate& c, int64_t* devices,
                                            std::string* mesh) {
  const int64_t data = std::min<int64_t>(c.data, 2), expert = std::min<int64_t>(c.expert, 2),
                model = std::min<int64_t>(c.model, 2);
  const int64_t d = data * expert * model;
  GShardModelConfig m = models::ToyModelConfig(d);
  m.layer.num_heads = 4;
  m.layer.head_dim = 4;
  m.layer.model_parallel = model;
  m.layer.expert_parallel = expert;
  m.micro_batches = std::min<int64_t>(c.micro_batches, 2);
  m.layer.num_groups *= m.micro_batches;
  std::set<std::string> stacked;
  const std::unique_ptr<ir::Module> loss = models::BuildGShardModelLoss(m, &stacked);
  models::TrainingStepOptions options = models::StepOptions(d, stacked);
  options.micro_batches = m.micro_batches;
  models::TrainingStep step = models::BuildTrainingStep(*loss, models::FloatParameters(*loss),
                                                        models::OptimizerConfig{}, options);
  *devices = d;
  *mesh = std::to_string(data) + "x" + std::to_string(expert) + "x" + std::to_string(model);
  return std::move(step.module);
}

}  // namespace podsim::experiments
