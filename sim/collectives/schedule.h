#pragma once
// A collective algorithm's output: a DAG of point-to-point chunk transfers (and local copies /
// reductions) between partitions. The timing run executes it on a network model; the functional
// run executes it on real float buffers. Both read the same Schedule.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace podsim::sim {

enum class CollectiveKind : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute };

// Which per-partition buffer a chunk lives in.
enum class Buffer : uint8_t { kInput, kOutput };

struct ChunkTransfer {
  int64_t src = 0;            // partition that sends (src == dst: a local copy / reduction)
  int64_t dst = 0;            // partition that receives
  Buffer src_buffer = Buffer::kInput;
  int64_t src_offset = 0;     // in elements
  Buffer dst_buffer = Buffer::kOutput;
  int64_t dst_offset = 0;     // in elements
  int64_t elements = 0;       // chunk length; bytes = elements * element_bytes
  bool reduce = false;        // dst[...] += src[...] instead of dst[...] = src[...]
  int step = 0;               // algorithm step, for --explain and traces
  std::vector<int64_t> deps;  // indices of transfers that must complete before this one starts
};

struct Schedule {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string algorithm;                 // e.g. "ring-bidir", "torus-2d", "direct"
  int64_t num_partitions = 0;            // partitions taking part (buffers exist for all)
  int64_t element_bytes = 4;
  std::vector<int64_t> input_elements;   // per partition
  std::vector<int64_t> output_elements;  // per partition
  std::vector<ChunkTransfer> transfers;  // in a valid topological order of deps
  int num_steps = 0;
};

}  // namespace podsim::sim
