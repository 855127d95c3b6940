#pragma once
// Functional mode: the SPMD program run with real tensors on every partition, in program order
// (values do not depend on timing, so the order the timing run interleaves devices in does not
// matter). Compute instructions evaluate with the reference interpreter, one instruction at a
// time (ir::Interpret on a module holding just that instruction, as partition p of D);
// collectives take the interpreter's exact values (ir::InterpretSpmd of the collective alone),
// and every collective execution is also run through the functional schedule of its algorithm
// (sim/collectives/functional.h, the schedule the timing run uses) and compared with them. A
// wrong schedule is thus caught by numbers. Finally the outputs are compared with
// ir::InterpretSpmd of the whole module (they must be identical).
//
// Schedules carry float32 buffers and only sum: a collective of s32 values beyond 2^24, or a
// reduction other than add, is not checked against its schedule (the note says so).

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "sim/program/program_plan.h"
#include "sim/program/run_result.h"
#include "sim/program/sim_options.h"
#include "topologies/topology.h"

namespace podsim::sim {

// Largest pod functional mode accepts.
inline constexpr int64_t kMaxFunctionalPartitions = 64;

// Runs `module` with options.functional_args (per partition; empty: ir::RandomArguments with
// seed options.functional_seed + p for partition p). Throws podsim::Error for too many
// partitions or arguments that do not match the entry parameters.
FunctionalResult RunFunctionalProgram(const ir::Module& module, const ProgramPlan& plan,
                                      const topo::Topology& topology, const SimOptions& options);

// Largest |a - b| over two literals of one shape (tuples recursively); NaN against a number, or
// infinities that differ, count as +inf; two NaNs as 0. Shapes that differ count as +inf.
double MaxAbsDifference(const ir::Literal& a, const ir::Literal& b);

}  // namespace podsim::sim
