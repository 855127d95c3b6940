#pragma once
// GPipe pipeline parallelism (Huang et al. 2019) for the dense baseline (models/
// dense_transformer.h), as the paper's T(96L) was trained: the model's pieces grouped into K
// stages, each stage on one core; R = cores / K pipeline replicas trained data-parallel; a
// batch cut into M micro-batches per replica.
//
//   GPipeRun run = RunGPipe(model, {.stages = 16, .micro_batches = 16}, optimizer, *topology,
//                           options);
//   run.schedule.step_time, run.schedule.bubble_fraction, run.stages[s].peak_bytes ...
//
// One step, per stage s (GPipe's schedule with a flush per step):
//   forward   F(s, m) for m = 0..M-1: starts when its input has arrived from stage s - 1 and
//             F(s, m - 1) is done; only the stage's input is kept for the backward pass
//   backward  B(s, m) for m = M-1..0: after F(s, M-1), B(s, m + 1) and the gradient from
//             stage s + 1; it recomputes the stage's forward from the kept input
//             (rematerialisation), applies the VJP and accumulates the weight gradients
//   then      the AllReduce of the stage's gradients over its R replicas, then the optimizer
// Stage-to-stage transfers are CollectivePermutes (every replica's pair at once, so they share
// links as they would) and run beside compute (the DMA engines move them). Each piece's
// compute is the device model's time for its one-core module (sim::Simulate); a stage's cost
// is the sum over its pieces. Stages are balanced: contiguous runs of pieces minimising the
// largest stage's forward + backward time.
//
// Placement: stage s of replica r is core r*K + s ("replica-major": a replica's stages are
// neighbours, as GPipe places them, and the stage transfers are a hop or on-chip) or s*R + r
// ("stage-major": each stage's replicas form a block, so its gradient AllReduce stays inside
// it). Every stage's gradient AllReduce is timed with all stages' running at once, each as large
// as the largest stage's: the stages finish their backward pass within (K - 1) backward times
// of each other, so the AllReduces overlap (an upper bound for the lighter stages).
//
// Memory per stage core: weights, their gradient accumulators and optimizer state, the M kept
// stage inputs, and the largest working set of one piece's backward module on top.

#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"
#include "models/dense_transformer.h"
#include "models/optimizer.h"
#include "sim/program/sim_options.h"
#include "sim/program/trace.h"
#include "topologies/topology.h"

namespace podsim::pipeline {

// One stage's costs per micro-batch, and once per step.
struct StageCost {
  Time forward;
  Time backward;       // recomputation, VJP and accumulation
  Time send_forward;   // activations to stage s + 1 (unused on the last stage)
  Time send_backward;  // gradients to stage s - 1 (unused on the first stage)
  Time all_reduce;     // the stage's weight gradients over its replicas
  Time optimizer;
};

struct GPipeEvent {
  enum Kind { kForward, kBackward, kSendForward, kSendBackward, kAllReduce, kOptimizer };
  int64_t stage = 0;
  Kind kind = kForward;
  int64_t micro_batch = -1;  // -1 for the all-reduce and optimizer
  Time start;
  Time end;
};
const char* GPipeEventName(GPipeEvent::Kind kind);  // "forward", "backward", ...

struct GPipeSchedule {
  std::vector<GPipeEvent> events;  // in the order scheduled
  Time step_time;                  // the last stage's optimizer end
  Time pipeline_time;              // the last backward's end (the flush)
  std::vector<Time> busy;          // per stage: M x (forward + backward)
  // Idle compute time of the pipeline phase, averaged over stages, over the step time:
  // mean_s (pipeline_time - busy_s) / step_time. With equal stages and free transfers and
  // no AllReduce or optimizer it is (K - 1) / (M + K - 1).
  double bubble_fraction = 0;
};

// GPipe's schedule of `stages` for `micro_batches` micro-batches. Throws podsim::Error when
// there are no stages or micro_batches < 1.
GPipeSchedule ScheduleGPipe(const std::vector<StageCost>& stages, int64_t micro_batches);

// Contiguous runs of `costs` (each >= 0) into `stages` non-empty stages minimising the largest
// run's sum (the first such split: earlier stages as long as possible); returns each stage's
// first index. Throws podsim::Error when stages is < 1 or more than costs.size().
std::vector<int64_t> BalanceStages(const std::vector<double>& costs, int64_t stages);

enum class GPipePlacement { kReplicaMajor, kStageMajor };
const char* GPipePlacementName(GPipePlacement p);  // "replica-major", "stage-major"
GPipePlacement ParseGPipePlacement(const std::string& name);

struct GPipeOptions {
  int64_t stages = 16;
  int64_t micro_batches = 16;
  int64_t batch_tokens = int64_t{1} << 22;  // over all replicas
  GPipePlacement placement = GPipePlacement::kReplicaMajor;
};

struct GPipeStage {
  int64_t first_piece = 0;
  int64_t pieces = 0;
  int64_t encoder_layers = 0;
  int64_t decoder_layers = 0;
  int64_t parameters = 0;
  StageCost cost;
  int64_t input_bytes = 0;  // one micro-batch's activations received (and kept)
  int64_t peak_bytes = 0;   // per core (see above)
};

struct GPipeRun {
  int64_t replicas = 0;
  int64_t micro_batch_tokens = 0;
  int64_t parameters = 0;  // the whole model
  double model_flops = 0;  // 3 x the forward pass's matmul FLOPs, the whole batch
  std::vector<GPipeStage> stages;
  GPipeSchedule schedule;
  int64_t peak_bytes = 0;  // the largest stage's
  bool oom = false;        // peak_bytes over the device's HBM
  std::string oom_detail;  // "stage 0: 17.2 GiB > 16 GiB HBM"
};

// Throws podsim::Error naming the option when the pipeline cannot be built on the topology:
// stages not dividing its cores, more stages than pieces, or a micro-batch that is not a whole
// number of sequences.
GPipeRun RunGPipe(const models::DenseTransformerConfig& model, const GPipeOptions& gpipe,
                  const models::OptimizerConfig& optimizer, const topo::Topology& topology,
                  const sim::SimOptions& options);

// The schedule as a timeline for report::WriteChromeTrace: one device per stage of replica 0
// (its core), compute spans for forward, backward, optimizer and the bubbles (idle spans of the
// pipeline phase, category "bubble"), collective spans for the transfers and AllReduces.
sim::TraceData GPipeTrace(const GPipeRun& run, const GPipeOptions& gpipe);

}  // namespace podsim::pipeline
