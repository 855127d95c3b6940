#pragma once
// The program plan: an SPMD module compiled once for the simulator, the same for every device.
// Each computation becomes a list of steps in program order: a fused group of compute (its time
// on the device model, cached: every device runs the same shapes), a collective (its spec,
// replica groups and algorithm), a counted loop (its body's plan), or bookkeeping (parameter,
// constant, tuple, get-tuple-element, partition-id: no time). Each step lists the collectives
// whose results it needs, which is where an async collective's "done" sits (XLA's
// all-to-all-start / all-to-all-done pairs).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/units.h"
#include "ir/cost.h"
#include "ir/module.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective.h"
#include "sim/device/device.h"
#include "sim/device/fusion.h"
#include "topologies/topology.h"

namespace podsim::sim {

struct PlanOptions {
  DeviceSpec device;
  bool fusion = true;
  int64_t num_partitions = 1;  // partition p runs on core p; <= topology cores
  // Scope components that name a category: 1 = "moe/dispatch" -> "moe"; 2 -> "moe/dispatch".
  int category_depth = 1;
  // Algorithm per collective kind name ("all-to-all", ...); missing kinds use the default.
  std::map<std::string, AlgorithmOptions> algorithms;
};

enum class StepKind : uint8_t { kBookkeeping, kCompute, kCollective, kLoop };

struct Step {
  StepKind kind = StepKind::kBookkeeping;
  const ir::Instruction* instr = nullptr;  // group root / collective / loop / bookkeeping op
  int32_t category = 0;                    // ProgramPlan::categories index: the fusion's dot's
                                           // scope if it has one, else its root's
  int32_t group = -1;                      // index into the computation's fusion.groups
  ComputeWork work;                        // compute: one execution
  OpTime time;                             // compute: one execution
  std::vector<int32_t> waits;              // collective ids whose results the step reads
  int32_t collective = -1;                 // kCollective: index into ProgramPlan::collectives
  int32_t body = -1;                       // kLoop: index into ProgramPlan::computations
  int64_t trip_count = 0;                  // kLoop
};

// Per-category sums over one execution of a computation (nested loops included).
struct CategoryWork {
  Time modelled;
  Time roofline;
  double flops = 0;
  double hbm_bytes = 0;
  int64_t ops = 0;  // launched ops (fused groups)
};

struct ComputationPlan {
  const ir::Computation* computation = nullptr;
  FusionPlan fusion;
  std::vector<Step> steps;
  bool has_collectives = false;  // here or in a nested loop body
  // One execution when !has_collectives (else the compute part only): sums over the steps.
  Time compute_time;
  Time roofline_time;
  std::vector<CategoryWork> categories;  // indexed like ProgramPlan::categories
};

struct CollectivePlan {
  const ir::Instruction* instr = nullptr;
  int32_t computation = 0;  // index of the computation holding it
  int32_t category = 0;
  CollectiveSpec spec;      // explicit replica groups over the program's partitions
  // Synchronisation groups: the replica groups, or for a collective-permute the connected
  // components of its pairs. A group starts when all its members have arrived.
  std::vector<std::vector<int64_t>> groups;
  std::vector<int32_t> group_of;  // per partition: index into groups, -1: takes no part
  AlgorithmOptions algorithm;     // resolved (never "default")
  Time roofline;               // bandwidth term of the algorithm's closed form (analytic.h)
  double network_bytes = 0;       // bytes one partition sends (ir cost analysis)
  // Index of the first step of its computation that reads the result (steps.size(): none).
  int32_t done_step = 0;
};

struct ProgramPlan {
  std::vector<ComputationPlan> computations;  // [0] is the entry
  std::vector<CollectivePlan> collectives;
  std::vector<std::string> categories;        // sorted
  int64_t num_partitions = 1;
};

// Compiles `module` (an SPMD program) for `topology`. Throws podsim::Error naming the
// instruction for a collective whose groups name partitions beyond num_partitions, or a bad
// algorithm override ("collectives.all-to-all.algorithm: ...").
ProgramPlan BuildProgramPlan(const ir::Module& module, const topo::Topology& topology,
                             const PlanOptions& options);

// The category of a scope: its first `depth` components ("moe/dispatch/x", 1 -> "moe");
// "unscoped" for an empty scope.
std::string CategoryOf(const std::string& scope, int depth);


}  // namespace podsim::sim
