#pragma once
// What to run: a collective kind, a per-partition payload, and the replica groups (or the
// source-target pairs of a collective-permute). Semantics match XLA:
//  - all-reduce: every member gets the elementwise sum of the group's inputs (n elements);
//  - all-gather: every member gets the group's inputs concatenated in group order (G * n);
//  - reduce-scatter: member i gets block i of the sum;
//  - all-to-all: member i splits its input into G blocks and sends block j to member j; member j
//    concatenates the blocks it receives in source (group) order;
//  - collective-permute: the target gets the source's input; a partition that receives nothing
//    gets zeros.
// Uneven sizes: when n is not a multiple of G, block i has n / G elements plus one for the first
// n % G blocks (BlockOf). Partitions in no group take no part: empty output.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/collectives/schedule.h"

namespace podsim::sim {

struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t elements = 0;       // per-partition input length, in elements, >= 0
  int64_t element_bytes = 4;  // > 0
  // Partition ids; empty: one group of every partition, in id order. Each partition at most
  // once over all groups. Ignored by collective-permute.
  std::vector<std::vector<int64_t>> replica_groups;
  // collective-permute only: (source, target) pairs, each source and each target at most once.
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
};

// Every kind, in enum order.
inline constexpr CollectiveKind kCollectiveKinds[] = {
    CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
    CollectiveKind::kAllToAll, CollectiveKind::kCollectivePermute};

// "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute".
const char* CollectiveKindName(CollectiveKind kind);
// Inverse of CollectiveKindName; also accepts "allreduce", "all_reduce", "permute"...; throws
// podsim::Error naming `field` for an unknown name.
CollectiveKind ParseCollectiveKind(std::string_view name, const std::string& field = "op");

// Checks the spec for `num_partitions` partitions and returns its resolved replica groups (the
// default group filled in; empty for collective-permute). Throws podsim::Error naming the field:
// `replica_groups[1][0]: partition 9 does not exist (8 partitions)`,
// `source_target_pairs[2]: target 3 appears twice (also source_target_pairs[0])`.
std::vector<std::vector<int64_t>> ResolveReplicaGroups(const CollectiveSpec& spec,
                                                       int64_t num_partitions);

// Block i of n elements split into g blocks (uneven rule above).
struct BlockRange {
  int64_t offset = 0;
  int64_t elements = 0;
};
BlockRange BlockOf(int64_t n, int64_t g, int64_t i);

// Output length of the member with group index i of a group of g, for input length n.
int64_t OutputElements(CollectiveKind kind, int64_t n, int64_t g, int64_t i);

// NCCL's bus-bandwidth factor: bus bandwidth = algorithm bandwidth (bytes / time) x factor, so
// that an optimal algorithm's bus bandwidth is the link bandwidth. all-reduce 2(g-1)/g;
// all-gather, reduce-scatter, all-to-all (g-1)/g; collective-permute 1; every kind 0 for g <= 1
// (nothing crosses a link). The bytes are the per-partition input (all-gather: the output,
// g x input, as in nccl-tests).
double BusBandwidthFactor(CollectiveKind kind, int64_t g);

}  // namespace podsim::sim
