#include "sim/collectives/reference.h"

#include <string>

#include "base/error.h"

namespace podsim::sim {

PartitionBuffers ReferenceCollective(const CollectiveSpec& spec, int64_t num_partitions,
                                     const PartitionBuffers& inputs) {
  const auto groups = ResolveReplicaGroups(spec, num_partitions);
  const size_t n = static_cast<size_t>(spec.elements);
  if (inputs.size() != static_cast<size_t>(num_partitions)) {
    throw Error("inputs: expected " + std::to_string(num_partitions) + " partitions");
  }
  for (const auto& in : inputs) {
    if (in.size() != n)
      throw Error("inputs: every partition needs " + std::to_string(n) + " elements");
  }
  PartitionBuffers out(static_cast<size_t>(num_partitions));
  if (spec.kind == CollectiveKind::kCollectivePermute) {
    for (auto& o : out) o.assign(n, 0.0f);
    for (const auto& [src, dst] : spec.source_target_pairs) {
      out[static_cast<size_t>(dst)] = inputs[static_cast<size_t>(src)];
    }
    return out;
  }
  for (const auto& group : groups) {
    const size_t g = group.size();
    // Block b of the uneven split: n / g elements, plus one for the first n % g blocks.
    auto block_start = [&](size_t b) { return b * (n / g) + (b < n % g ? b : n % g); };
    auto block_size = [&](size_t b) { return n / g + (b < n % g ? 1 : 0); };
    std::vector<float> sum(n, 0.0f);
    for (int64_t m : group) {
      for (size_t e = 0; e < n; ++e) sum[e] += inputs[static_cast<size_t>(m)][e];
    }
    for (size_t i = 0; i < g; ++i) {
      std::vector<float>& o = out[static_cast<size_t>(group[i])];
      switch (spec.kind) {
        case CollectiveKind::kAllReduce: o = sum; break;
        case CollectiveKind::kAllGather:
          for (int64_t m : group) {
            const auto& in = inputs[static_cast<size_t>(m)];
            o.insert(o.end(), in.begin(), in.end());
          }
          break;
        case CollectiveKind::kReduceScatter:
          o.assign(sum.begin() + static_cast<std::ptrdiff_t>(block_start(i)),
                   sum.begin() + static_cast<std::ptrdiff_t>(block_start(i) + block_size(i)));
          break;
        case CollectiveKind::kAllToAll:
          for (int64_t m : group) {  // block i of every member, in group order
            const auto& in = inputs[static_cast<size_t>(m)];
            o.insert(o.end(), in.begin() + static_cast<std::ptrdiff_t>(block_start(i)),
                     in.begin() + static_cast<std::ptrdiff_t>(block_start(i) + block_size(i)));
          }
          break;
        default: break;
      }
    }
  }
  return out;
}

}  // namespace podsim::sim
