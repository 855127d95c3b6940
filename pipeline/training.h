#pragma once
// The whole model's training step on a pod, with rematerialisation chosen as the paper's
// compiler chose it: only when the step does not fit.
//
//   TrainingRun run = RunTraining(model, optimizer, std::nullopt, *topology, options);
//
// Automatic remat (remat = nullopt) builds and partitions the step under each layer-loop policy
// in order of decreasing saved memory and increasing recomputation (none, selective, per-layer:
// ir::LoopRemat), measures each one's per-device peak (sim::SimulateMemory) and keeps the first
// that fits the device's HBM. When none fits, the policy with the smallest peak is kept and the
// result is out of memory, naming the instruction at the peak and its bytes. A forced policy is
// used as given. Either way the step without recomputation ("none") is measured too, so the
// memory remat saves is always reported.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/autodiff.h"
#include "models/conv_net.h"
#include "models/gshard_model.h"
#include "models/optimizer.h"
#include "sim/program/run_result.h"
#include "sim/program/sim_options.h"
#include "topologies/topology.h"

namespace podsim::pipeline {

struct RematCandidate {
  ir::LoopRemat policy = ir::LoopRemat::kAll;
  int64_t peak_bytes = 0;
  bool fits = false;
};

struct TrainingRun {
  ir::LoopRemat remat = ir::LoopRemat::kIterationInputs;  // the policy the step ran with
  std::vector<RematCandidate> candidates;  // measured, in the order tried ("none" first)
  int64_t no_remat_peak_bytes = 0;      // the peak when every value a gradient reads is saved
  int64_t memory_saved_bytes = 0;       // no_remat_peak_bytes - the chosen policy's peak
  int64_t batch_tokens = 0;
  int64_t parameters = 0;               // the model's, exact (models::CountParameters)
  double model_flops = 0;               // 3 x the forward pass's matmul FLOPs, all devices
  sim::RunResult result;                // the chosen policy's step, simulated
  sim::MemoryResult memory;             // the chosen policy's (result.memory)
  // The time of the backward loops' recomputation ("recompute" scopes: compute and its
  // collectives, critical device) over the step time; 0 without recomputation.
  double recompute_fraction = 0;
};

// `options.num_partitions` is set to the topology's cores. Throws podsim::Error for a model
// that cannot run there (models::ValidateModelConfig's errors, or num_devices other than the
// topology's cores).
TrainingRun RunTraining(const models::GShardModelConfig& model,
                        const models::OptimizerConfig& optimizer,
                        std::optional<ir::LoopRemat> remat, const topo::Topology& topology,
                        const sim::SimOptions& options);

// The spatially partitioned convolutional network's training step (models/conv_net.h) on every
// core of a pod: its mesh_rows x mesh_cols spatial partitions are the topology's cores (numbered
// row-major: on a TPU slice, rows along the chip grid's first dim and columns along its second
// with the chip's cores adjacent, so halo partners are a hop or a chip apart). Per-device
// communication is summed from the simulation's collectives by kind.
struct ConvTrainingRun {
  int64_t parameters = 0;
  double model_flops = 0;  // 3 x the forward pass's convolution and matmul FLOPs, all devices
  sim::RunResult result;
  struct Traffic {
    int64_t count = 0;   // executions per device
    int64_t bytes = 0;   // per device, input bytes summed over executions
    double time_us = 0;  // summed mean time per execution
  };
  std::map<std::string, Traffic> traffic;  // by collective kind ("collective-permute", ...)
  // Why the images are split: the peak memory of the same step on one image, unpartitioned, on
  // one core of the pod's device (above its HBM when one image does not fit a core).
  sim::MemoryResult one_image;
};
// Throws podsim::Error when the mesh does not cover the topology's cores.
ConvTrainingRun RunConvNetTraining(const models::ConvNetConfig& model,
                                   const models::OptimizerConfig& optimizer,
                                   const topo::Topology& topology, const sim::SimOptions& options);

// "auto" -> nullopt, else ir::ParseLoopRemat; the accepted names for a config's choice.
std::optional<ir::LoopRemat> ParseRematChoice(const std::string& name);
inline const std::vector<std::string>& RematChoices() {
  static const std::vector<std::string> kChoices = {"auto", "none", "selective", "per-layer"};
  return kChoices;
}

}  // namespace podsim::pipeline
