#include "sim/collectives/collective.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>

#include "base/error.h"

namespace podsim::sim {
namespace {

std::string GroupField(size_t g, size_t i) {
  return "replica_groups[" + std::to_string(g) + "][" + std::to_string(i) + "]";
}

std::string PairField(size_t p) { return "source_target_pairs[" + std::to_string(p) + "]"; }

void CheckPartition(int64_t id, int64_t num_partitions, const std::string& field) {
  if (id < 0 || id >= num_partitions) {
    throw Error(field + ": partition " + std::to_string(id) + " does not exist (" +
                std::to_string(num_partitions) + " partitions, ids 0.." +
                std::to_string(num_partitions - 1) + ")");
  }
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kAllToAll: return "all-to-all";
    case CollectiveKind::kCollectivePermute: return "collective-permute";
  }
  return "?";
}

CollectiveKind ParseCollectiveKind(std::string_view name, const std::string& field) {
  std::string key;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (key == "allreduce") return CollectiveKind::kAllReduce;
  if (key == "allgather") return CollectiveKind::kAllGather;
  if (key == "reducescatter") return CollectiveKind::kReduceScatter;
  if (key == "alltoall") return CollectiveKind::kAllToAll;
  if (key == "collectivepermute" || key == "permute") return CollectiveKind::kCollectivePermute;
  throw ConfigError(field + ": unknown collective '" + std::string(name) +
              "' (known: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)");
}

std::vector<std::vector<int64_t>> ResolveReplicaGroups(const CollectiveSpec& spec,
                                                       int64_t num_partitions) {
  if (num_partitions < 1) {
    throw Error("num_partitions: must be >= 1, got " + std::to_string(num_partitions));
  }
  if (spec.elements < 0) {
    throw Error("elements: must be >= 0, got " + std::to_string(spec.elements));
  }
  if (spec.element_bytes < 1) {
    throw Error("element_bytes: must be >= 1, got " + std::to_string(spec.element_bytes));
  }
  if (spec.kind == CollectiveKind::kCollectivePermute) {
    std::unordered_map<int64_t, size_t> source_at, target_at;
    for (size_t p = 0; p < spec.source_target_pairs.size(); ++p) {
      const auto [src, dst] = spec.source_target_pairs[p];
      CheckPartition(src, num_partitions, PairField(p) + ".source");
      CheckPartition(dst, num_partitions, PairField(p) + ".target");
      if (auto [it, fresh] = source_at.emplace(src, p); !fresh) {
        throw Error(PairField(p) + ": source " + std::to_string(src) + " appears twice (also " +
                    PairField(it->second) + "): the pairs must be a partial permutation");
      }
      if (auto [it, fresh] = target_at.emplace(dst, p); !fresh) {
        throw Error(PairField(p) + ": target " + std::to_string(dst) + " appears twice (also " +
                    PairField(it->second) + "): the pairs must be a partial permutation");
      }
    }
    return {};
  }
  if (!spec.source_target_pairs.empty()) {
    throw Error(std::string("source_target_pairs: only collective-permute takes pairs, not ") +
                CollectiveKindName(spec.kind));
  }
  if (spec.replica_groups.empty()) {
    std::vector<int64_t> all(static_cast<size_t>(num_partitions));
    for (int64_t p = 0; p < num_partitions; ++p) all[static_cast<size_t>(p)] = p;
    return {all};
  }
  // Where each partition was first seen, as (group, index).
  std::vector<std::pair<int64_t, int64_t>> seen(static_cast<size_t>(num_partitions), {-1, -1});
  for (size_t g = 0; g < spec.replica_groups.size(); ++g) {
    const auto& group = spec.replica_groups[g];
    if (group.empty()) {
      throw Error("replica_groups[" + std::to_string(g) + "]: a replica group must not be empty");
    }
    for (size_t i = 0; i < group.size(); ++i) {
      CheckPartition(group[i], num_partitions, GroupField(g, i));
      auto& first = seen[static_cast<size_t>(group[i])];
      if (first.first >= 0) {
        throw Error(
            GroupField(g, i) + ": partition " + std::to_string(group[i]) + " appears twice (also " +
            GroupField(static_cast<size_t>(first.first), static_cast<size_t>(first.second)) + ")");
      }
      first = {static_cast<int64_t>(g), static_cast<int64_t>(i)};
    }
  }
  return spec.replica_groups;
}

BlockRange BlockOf(int64_t n, int64_t g, int64_t i) {
  const int64_t base = n / g;
  const int64_t rem = n % g;
  return {i * base + std::min(i, rem), base + (i < rem ? 1 : 0)};
}

int64_t OutputElements(CollectiveKind kind, int64_t n, int64_t g, int64_t i) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return n;
    case CollectiveKind::kAllGather: return g * n;
    case CollectiveKind::kReduceScatter: return BlockOf(n, g, i).elements;
    case CollectiveKind::kAllToAll: return g * BlockOf(n, g, i).elements;
    case CollectiveKind::kCollectivePermute: return n;
  }
  return 0;
}

double BusBandwidthFactor(CollectiveKind kind, int64_t g) {
  if (g <= 1) return 0;  // one partition: nothing crosses a link
  const double ratio = static_cast<double>(g - 1) / static_cast<double>(g);
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2 * ratio;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return ratio;
    case CollectiveKind::kCollectivePermute: return 1;
  }
  return 0;
}

}  // namespace podsim::sim
