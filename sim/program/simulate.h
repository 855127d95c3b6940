#pragma once
// Runs an SPMD program on every device of a pod and reports step time, where the time goes,
// memory and link figures (sim/program/run_result.h).
//
//   auto topology = topo::LoadTopology("tpu-v3-128");
//   SimOptions options;                       // sim/program/sim_options.h
//   options.device = LoadDeviceSpec("tpu-v3-core");
//   RunResult r = Simulate(*spmd_module, *topology, options);
//   std::cout << Summary(r);
//
// Semantics:
//  - Partition p runs on core p (p < num_partitions <= topology cores); every device runs the
//    same program in program order with its own partition id.
//  - A compute step (a fused group, sim/device/fusion.h) takes its modelled time (sim/device/device.h), times
//    the device's straggler factor. Counted loops run their body trip_count times; a body
//    without collectives is timed once (its steps' cached times x trip_count).
//  - A collective: the device arrives when its compute stream reaches it; the group starts
//    when its last member arrives and runs on the network (sim/program/collective_executor.h); each
//    member is done when its own transfers are. With async_collectives the device goes on with
//    the steps that do not read the result and waits at the first that does (XLA's async
//    start / done); without, it waits at the collective. Collectives started in a loop
//    iteration are waited for at the end of the iteration, all others at the end of the
//    program.
//  - The step time is the latest device's finish.
//  - Not modelled: collectives taking HBM bandwidth from concurrent compute, and the compute
//    of a collective's reduction (its local copies / reductions take bytes / HBM bandwidth).
// Timing needs no tensor data. With options.functional, real tensors are also carried through
// the program (sim/program/functional_run.h) and the result holds them and the checks.

#include "ir/module.h"
#include "sim/program/run_result.h"
#include "sim/program/sim_options.h"
#include "topologies/topology.h"

namespace podsim::sim {

// Throws podsim::Error / ConfigError for bad input: options out of range (naming the
// field), more partitions than cores, a module that is not an SPMD program (sharding
// annotations but no collectives or partition-id on several partitions: "partition it first"),
// collectives naming partitions that do not exist. An out-of-memory device is a result
// (status "oom"), not an error.
RunResult Simulate(const ir::Module& spmd_module, const topo::Topology& topology,
                   const SimOptions& options);

// The per-device memory of the run Simulate would make (the same checks and errors), without
// timing it: liveness over the program plan only, for a caller that compares programs by memory.
MemoryResult SimulateMemory(const ir::Module& spmd_module, const topo::Topology& topology,
                            const SimOptions& options);

enum class ProgramKind {
  kSpmd,             // has collectives or partition-id: written for, or lowered to, partitions
  kGlobalAnnotated,  // tiled sharding annotations, no collectives: input for the partitioner
  kUnannotated,      // neither: on several partitions every one runs the whole program
};
ProgramKind ClassifyProgram(const ir::Module& module);

// The representative devices that get trace tracks when options name none: all of <= 8, else
// 0, 1, D/2, D-1, plus every straggler; sorted, unique.
std::vector<int64_t> DefaultTraceDevices(int64_t num_partitions, const SimOptions& options);

}  // namespace podsim::sim
