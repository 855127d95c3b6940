// The SPMD lowering on iota shardings (compact layouts): random op chains whose instructions
// carry random iota tile assignments (devices in any reshape/transpose order, even and uneven
// shapes) over 1 to 12 partitions must match the unpartitioned module numerically, exactly like
// the same chains with the devices listed; and the lowered program keeps its collectives'
// replica groups in the iota form and computes offsets from partition-id without s32[D] tables.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "ir/builder.h"
#include "ir/text.h"
#include "partitioner/annotations.h"
#include "partitioner/propagation.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Shape;

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  std::mt19937_64& rng() { return rng_; }

  std::vector<int64_t> Factors(int64_t n, int64_t parts) {
    std::vector<int64_t> f(parts, 1);
    for (int64_t p = 2; n > 1;) {
      if (n % p != 0) {
        ++p;
        continue;
      }
      f[Int(0, parts - 1)] *= p;
      n /= p;
    }
    return f;
  }

  // A random sharding of a rank-r tensor over n partitions in the iota form, or none.
  std::optional<ir::Sharding> Sharding(int64_t r, int64_t n) {
    if (Int(0, 4) == 0 || r == 0) return std::nullopt;
    const bool replicate = Int(0, 2) == 0;
    std::vector<int64_t> tiles = Factors(n, r + (replicate ? 1 : 0));
    std::vector<int64_t> dims = Factors(n, Int(1, 3));
    std::vector<int64_t> perm(dims.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
    std::shuffle(perm.begin(), perm.end(), rng_);
    return ir::Sharding::Tiled(tiles, ir::DeviceList(ir::IotaDevices::Create(dims, perm)),
                               replicate);
  }

 private:
  std::mt19937_64 rng_;
};

// A random chain over [a, b] and [b, c] parameters: elementwise, transpose, dot, reduce,
// broadcast, reshape; every instruction maybe sharded. `listed` spells the same shardings with
// explicit device lists.
std::unique_ptr<ir::Module> Chain(uint64_t seed, int64_t n, bool listed) {
  Gen g(seed);
  auto m = std::make_unique<ir::Module>("chain");
  ir::Builder b(m->AddComputation("main", true));
  const int64_t a = g.Int(1, 9), k = g.Int(1, 9), c = g.Int(1, 9);
  auto shard = [&](Instruction* x) {
    if (std::optional<ir::Sharding> s = g.Sharding(x->shape.rank(), n)) {
      if (listed) s->devices = s->devices.ToVector();
      x->sharding = *s;
    }
    return x;
  };
  Instruction* x = shard(b.Parameter(0, Shape(DType::kF32, {a, k}), "x"));
  Instruction* y = shard(b.Parameter(1, Shape(DType::kF32, {a, k}), "y"));
  Instruction* w = shard(b.Parameter(2, Shape(DType::kF32, {k, c}), "w"));
  Instruction* cur = shard(b.Add(x, y));
  for (int step = 0; step < 4; ++step) {
    switch (g.Int(0, 5)) {
      case 0:
        cur = shard(b.Tanh(cur));
        break;
      case 1:
        cur = shard(b.Transpose(cur, {1, 0}));
        cur = shard(b.Transpose(cur, {1, 0}));
        break;
      case 2:
        if (cur->shape.dims[1] == k) {
          ir::DotDims dd;
          dd.lhs_contracting = {1};
          dd.rhs_contracting = {0};
          cur = shard(b.Dot(cur, w, dd));
        }
        break;
      case 3: {  // reduce one dim, broadcast back along it
        const int64_t rd = g.Int(0, 1);
        Instruction* r = shard(b.Reduce(cur, {rd}, ir::ReduceKind::kAdd));
        cur = shard(b.Broadcast(r, cur->shape.dims, {1 - rd}));
        break;
      }
      case 4: {
        const std::vector<int64_t> dims = cur->shape.dims;
        Instruction* flat = shard(b.Reshape(cur, {dims[0] * dims[1]}));
        cur = shard(b.Reshape(flat, dims));
        break;
      }
      default:
        cur = shard(b.Mul(cur, cur));
    }
  }
  return m;
}

TEST_CASE("random chains with iota shardings match the unpartitioned module, as listed ones do") {
  for (uint64_t seed = 1; seed <= 250; ++seed) {
    Gen g(seed * 7919);
    const int64_t n = std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12}[g.Int(0, 6)];
    INFO("seed " << seed << ", " << n << " partitions");
    for (bool listed : {false, true}) {
      std::unique_ptr<ir::Module> m = Chain(seed, n, listed);
      CAPTURE(listed);
      INFO(ir::PrintModule(*m));
      PropagateShardings(*m, n);
      PartitionResult r = testing::Partition(*m, n);
      testing::CheckNumerics(*m, r, seed);
      // Orders of 6 or 12 devices can mix radices (3 x 4 vs 4 x 3) that have no common digits;
      // layouts then fall back to tables. Powers of two always stay compact.
      if (listed || (n & (n - 1)) != 0) continue;
      for (const auto& i : r.module->entry()->instructions()) {
        if (ir::IsCollective(i->opcode) && i->opcode != ir::Opcode::kCollectivePermute) {
          CHECK_MESSAGE(i->iota_replica_groups.has_value(), "%" << i->name);
        }
        if (i->opcode == ir::Opcode::kConstant) CHECK(i->literal.NumElements() <= 1);
      }
    }
  }
}

}  // namespace
}  // namespace podsim::partitioner
