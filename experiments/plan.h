#pragma once
// The sharding search behind `podsim plan`: every way to lay the whole MoE model
// (models/gshard_model.h) on a pod's cores, ranked, the most promising simulated.
//
//   PlanSpec spec;  spec.model = {{"preset", "2048E,36L"}};  spec.topologies = {"tpu-v3-2048"};
//   PlanResult plan = RunPlan(spec);
//   std::cout << PlanTable(plan);
//
// A candidate is a logical mesh data x expert x model over the D cores (models/layer_mesh.h)
// and a group size S (tokens per group, the batch fixed: G = batch / S groups, G / (data x
// expert) per core, capacity 2S/E unless the model fixes it); the layer-loop rematerialisation
// is the least recomputation that fits (pipeline/training.h). Enumerated: every model axis that
// divides D, the heads and d_ff; every expert axis that divides D / model and E; S in
// {S0/4, S0/2, S0, 2 S0} that seq_len divides and whose G splits evenly.
//
// Before any simulation each candidate gets (docs/plan.md):
//   weights_bytes    its per-core parameter shards, exact: a lower bound of its peak memory.
//                    Above the memory limit: "oom", never simulated.
//   compute_bound_s  the step's matmul FLOPs as executed without recomputation, per core, at
//                    the matrix unit's bf16 peak, the gating einsums counted once per
//                    model-axis replica (they run on activations replicated over it): a lower
//                    bound of its step time.
//   estimate_s       its compute plus its communication. Compute: the whole step simulated
//                    unpartitioned on one core of the pod (once per group size and pod), / D,
//                    the gating categories / (data x expert) instead (a model axis does not
//                    split them). Communication, at the per-core ICI injection bandwidth
//                    (on-chip bandwidth for a model axis inside a chip): the MoE AllToAlls,
//                    the model axis's AllReduces of partial sums and the gradient AllReduces
//                    over the axes a weight is replicated on. A ranking, not a bound.
// The `finalists` best estimates (by the objective) are simulated (experiments/training_point.h).
// The rest are reported as "bound" when their lower bound already exceeds the best simulated
// result (they cannot win) and "unsimulated" otherwise (they might; the estimate ranked them
// lower): the table says which, so a planner can raise --finalists.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/module.h"
#include "models/optimizer.h"

namespace podsim::experiments {

struct PlanSpec {
  nlohmann::json model = nlohmann::json::object();  // models::GShardModelConfig JSON
  std::vector<std::string> topologies;              // presets or files: the pods to map on
  // The calibration every simulation uses (an experiment config's "sim" and
  // "topology_overrides", e.g. experiments/gshard_table3.json's).
  nlohmann::json sim = nlohmann::json::object();                 // sim::SimOptions JSON
  nlohmann::json topology_overrides = nlohmann::json::object();  // merged into every pod
  models::OptimizerConfig optimizer;
  bool objective_cost = false;     // rank by cost per 1e12 tokens instead of step time
  double price_per_chip_hour = 0;  // > 0 with objective_cost; else the cost column stays empty
  double memory_limit = 0;         // bytes per core; 0: each pod's device HBM
  int finalists = 3;               // candidates simulated, >= 1
  int jobs = 0;                    // threads for the finalists (0: the machine's)
};

// In ranking order: the table lists candidates by status, then by the objective.
enum class PlanStatus : uint8_t {
  kBest,         // simulated, the best by the objective
  kSimulated,    // simulated, fits, slower (or dearer) than the best
  kUnsimulated,  // not simulated: ranked below the finalists by the estimate
  kBound,        // not simulated: its lower bound is already worse than the best
  kFailed,       // the simulation raised an error
  kOom,          // simulated: does not fit under any remat policy; or its weights alone do not
};
const char* PlanStatusName(PlanStatus s);  // "best", "simulated", "oom", ...

struct PlanCandidate {
  std::string topology;
  int64_t cores = 0, chips = 0;
  int64_t data = 1, expert = 1, model = 1;
  int64_t tokens_per_group = 0, groups = 0, capacity = 0;
  int64_t micro_batches = 1;  // gradient accumulation: the batch runs in this many micro-batches
  int64_t groups_per_core() const { return groups / (data * expert); }  // the whole batch's
  nlohmann::json model_json;  // the candidate's model config (models::GShardModelConfig JSON)
  // Before simulation.
  int64_t weights_bytes = 0;
  // What must fit before any activation: the weights, and with micro-batches the gradient sums
  // (the weights' bytes again).
  int64_t memory_floor_bytes = 0;
  bool remat_expected = false;  // the estimate's activations do not fit without recomputation
  double compute_bound_s = 0;
  double compute_estimate_s = 0;
  double comm_estimate_s = 0;
  double estimate_s = 0;
  // Outcome.
  PlanStatus status = PlanStatus::kUnsimulated;
  std::string reason;  // why it is not the best
  bool simulated = false;
  double step_s = 0, mfu = 0, exposed_comm_fraction = 0, recompute_fraction = 0;
  int64_t peak_bytes = 0;
  std::string remat;
  double cost_per_1e12_tokens = 0;  // simulated (or estimated, before) x chips x price
  int64_t batch_tokens = 0;
  // The objective's value: simulated when simulated, else the estimate.
  double Objective(bool cost) const;
};

struct PlanResult {
  std::vector<PlanCandidate> candidates;  // ranked: the best first (see PlanTable)
  bool objective_cost = false;
  double memory_limit = 0;  // as given (0: each pod's HBM)
  int64_t simulated = 0;
};

// Enumerates, bounds, simulates the finalists and ranks. Throws ConfigError naming the field
// for a bad spec (model, topology, objective without a price, finalists < 1) and podsim::Error
// when no candidate exists (e.g. experts that no mesh divides).
PlanResult RunPlan(const PlanSpec& spec);

// The ranked table: one line per candidate (rank, pod, mesh, S, groups per core, the bound,
// the estimate, the simulated step, peak memory, remat, MFU, cost, status, why).
std::string PlanTable(const PlanResult& plan);
// The same as CSV (fixed precision) and JSON.
std::string PlanCsv(const PlanResult& plan);
nlohmann::json PlanJson(const PlanResult& plan);

// The candidate's layout on a mesh small enough for `podsim check`: the toy model
// (models::ToyModelConfig, 4 heads of 4) with each mesh axis of the candidate that is > 1 at 2
// (and its micro-batches likewise),
// its training step annotated for data x expert x model devices (returned in *devices; the
// mesh "dxexm" in *mesh).
std::unique_ptr<ir::Module> SmallMeshModule(const PlanCandidate& c, int64_t* devices,
                                            std::string* mesh);

}  // namespace podsim::experiments
