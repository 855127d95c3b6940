#pragma once
// Helpers for the SPMD lowering tests: shardings by hand (until propagation lands, tests set a
// sharding on every instruction they care about; the rest are replicated), collective counts,
// and the numerical check through the equivalence harness.

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/verifier.h"
#include "partitioner/equivalence.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::partitioner::testing {

inline std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Split dim `dim` of a rank-`rank` tensor `n` ways over partitions 0..n-1 (in order).
inline ir::Sharding Split(int64_t rank, int64_t dim, int64_t n) {
  std::vector<int64_t> tiles(rank, 1);
  tiles[dim] = n;
  return ir::Sharding::Tiled(tiles, Iota(n));
}

// Tiles per dim over partitions listed in `devices` (default 0..n-1); a trailing replicated dim
// when `replicate` > 1.
inline ir::Sharding Tiles(std::vector<int64_t> tiles, int64_t replicate = 1,
                          std::vector<int64_t> devices = {}) {
  int64_t n = replicate;
  for (int64_t t : tiles) n *= t;
  if (replicate > 1) tiles.push_back(replicate);
  return ir::Sharding::Tiled(tiles, devices.empty() ? Iota(n) : devices, replicate > 1);
}

inline ir::Instruction* With(ir::Instruction* i, const ir::Sharding& s) {
  i->sharding = s;
  return i;
}

// Collectives of the module by opcode name ("all-gather" -> 2).
inline std::map<std::string, int64_t> CollectiveCounts(const ir::Module& m) {
  std::map<std::string, int64_t> counts;
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (ir::IsCollective(i->opcode)) ++counts[std::string(ir::OpcodeName(i->opcode))];
    }
  }
  return counts;
}

inline int64_t TotalCollectives(const ir::Module& m) {
  int64_t n = 0;
  for (const auto& [name, count] : CollectiveCounts(m)) n += count;
  return n;
}

inline PartitionResult Partition(const ir::Module& m, int64_t d, int64_t windowed_bytes = -1) {
  ir::Verify(m);
  PartitionOptions options;
  options.num_partitions = d;
  if (windowed_bytes >= 0) options.windowed_einsum_threshold_bytes = windowed_bytes;
  PartitionResult r = PartitionSpmd(m, options);
  ir::Verify(*r.module);
  return r;
}

// Checks `r` (a partition of `m`) against the unpartitioned run on random arguments.
inline void CheckNumerics(const ir::Module& m, const PartitionResult& r, uint64_t seed = 7) {
  EquivalenceReport report = CompareSpmd(m, r, ir::RandomArguments(m, seed));
  INFO(report.ToString());
  INFO(ExplainProvenance(r));
  CHECK(report.ok());
}

// A one-computation module under construction, partitioned and checked numerically.
struct SpmdFixture {
  explicit SpmdFixture(const std::string& name = "spmd")
      : m(std::make_unique<ir::Module>(name)), b(m->AddComputation("main", true)) {}
  std::unique_ptr<ir::Module> m;
  ir::Builder b;
  ir::Instruction* Param(int64_t n, std::vector<int64_t> dims, const ir::Sharding& s,
                         ir::DType t = ir::DType::kF32) {
    return With(b.Parameter(n, ir::Shape(t, std::move(dims)), "p" + std::to_string(n)), s);
  }
  // Partitions for d, checks numerics against the unpartitioned run, returns the result.
  PartitionResult Run(int64_t d, uint64_t seed = 7) {
    PartitionResult r = Partition(*m, d);
    CheckNumerics(*m, r, seed);
    return r;
  }
  // As Run, returning the inserted collectives by opcode name.
  std::map<std::string, int64_t> Check(int64_t d, uint64_t seed = 7) {
    return CollectiveCounts(*Run(d, seed).module);
  }
};

}  // namespace podsim::partitioner::testing
