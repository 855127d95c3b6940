// Table 4 of the GShard paper (../shared/reference/gshard-paper.json,
// table4_partitioned_op_scaling): each row's op with its sharding gives exactly the
// communication the table lists, and the SPMD program matches the unpartitioned one
// numerically (padding poisoned with NaN), for even and uneven shapes and several D.

#include <doctest/doctest.h>

#include "ir/builder.h"
#include "ir/text.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Shape;
using testing::CollectiveCounts;
using testing::Split;
using testing::Tiles;
using testing::With;
using Counts = std::map<std::string, int64_t>;

const ir::Sharding kSpmdTable4Rep = ir::Sharding::Replicated();

ir::DotDims MatmulDims() {
  ir::DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return d;
}

// AB,BC->AC with the given shardings of lhs, rhs and the result.
std::unique_ptr<ir::Module> Matmul(int64_t a, int64_t bdim, int64_t c, const ir::Sharding& ls,
                                   const ir::Sharding& rs, const ir::Sharding& os) {
  auto m = std::make_unique<ir::Module>("matmul");
  ir::Builder b(m->AddComputation("main", true));
  auto* x = With(b.Parameter(0, Shape(DType::kF32, {a, bdim}), "x"), ls);
  auto* y = With(b.Parameter(1, Shape(DType::kF32, {bdim, c}), "y"), rs);
  With(b.Dot(x, y, MatmulDims()), os);
  return m;
}

Counts PartitionAndCheck(const ir::Module& m, int64_t d, int64_t windowed_bytes = -1) {
  PartitionResult r = testing::Partition(m, d, windowed_bytes);
  testing::CheckNumerics(m, r);
  return CollectiveCounts(*r.module);
}

TEST_CASE("table 4: Add with A sharded needs no collective") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t a : {16, 13}) {
      auto m = std::make_unique<ir::Module>("add");
      ir::Builder b(m->AddComputation("main", true));
      auto* x = With(b.Parameter(0, Shape(DType::kF32, {a, 6}), "x"), Split(2, 0, d));
      auto* y = With(b.Parameter(1, Shape(DType::kF32, {a, 6}), "y"), Split(2, 0, d));
      With(b.Add(x, y), Split(2, 0, d));
      CHECK(PartitionAndCheck(*m, d).empty());
    }
  }
}

TEST_CASE("table 4: Matmul with the contracting dim sharded is one AllReduce") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t bdim : {32, 29}) {  // 29: uneven, contracting padding masked to 0
      CAPTURE(d);
      CAPTURE(bdim);
      auto m = Matmul(8, bdim, 6, Split(2, 1, d), Split(2, 0, d), kSpmdTable4Rep);
      CHECK(PartitionAndCheck(*m, d) == Counts{{"all-reduce", 1}});
      // The result wanted split on A: the partial sums are reduce-scattered instead.
      auto m2 = Matmul(8, bdim, 6, Split(2, 1, d), Split(2, 0, d), Split(2, 0, d));
      CHECK(PartitionAndCheck(*m2, d) == Counts{{"reduce-scatter", 1}});
    }
  }
}

TEST_CASE("table 4: Matmul with A sharded needs no collective") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t a : {16, 11}) {
      auto m = Matmul(a, 12, 6, Split(2, 0, d), kSpmdTable4Rep, Split(2, 0, d));
      CHECK(PartitionAndCheck(*m, d).empty());
    }
  }
}

TEST_CASE("table 4: Matmul with A,C sharded is an AllGather or a CollectivePermute loop") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t c : {16, 13}) {
      CAPTURE(d);
      CAPTURE(c);
      auto m = Matmul(16, 12, c, Split(2, 0, d), Split(2, 1, d), Split(2, 0, d));
      // The gathered rhs is small: one AllGather of it.
      CHECK(PartitionAndCheck(*m, d) == Counts{{"all-gather", 1}});
      // Over the memory threshold: a windowed-einsum loop of D collective-permutes.
      PartitionResult r = testing::Partition(*m, d, /*windowed_bytes=*/0);
      testing::CheckNumerics(*m, r);
      CHECK(CollectiveCounts(*r.module) == Counts{{"collective-permute", 1}});
      int64_t loops = 0;
      for (const auto& i : r.module->entry()->instructions()) {
        if (i->opcode != ir::Opcode::kLoop) continue;
        ++loops;
        CHECK(i->trip_count == d);
      }
      CHECK(loops == 1);
      CHECK(ExplainProvenance(r).find("windowed einsum") != std::string::npos);
      // The loop body prints and parses back.
      const std::string text = ir::PrintModule(*r.module);
      CHECK(ir::PrintModule(*ir::ParseModule(text)) == text);
    }
  }
}

TEST_CASE("table 4: Matmul with A,B sharded (lhs on A, rhs on contracting B) gathers rhs") {
  for (int64_t d : {2, 4}) {
    auto m = Matmul(32, 8, 4, Split(2, 0, d), Split(2, 0, d), Split(2, 0, d));
    CHECK(PartitionAndCheck(*m, d) == Counts{{"all-gather", 1}});
    PartitionResult r = testing::Partition(*m, d, /*windowed_bytes=*/0);
    testing::CheckNumerics(*m, r);
  }
  // Both dims of lhs split on a 2x2 mesh, B long: partial sums over B and one AllReduce (for a
  // short B, gathering lhs over B is cheaper and is chosen instead).
  auto m = Matmul(8, 64, 4, Tiles({2, 2}), kSpmdTable4Rep, Tiles({2, 1}, 2));
  CHECK(PartitionAndCheck(*m, 4) == Counts{{"all-reduce", 1}});
}

std::unique_ptr<ir::Module> Reduce(int64_t a, int64_t bdim, int64_t dim, ir::ReduceKind kind,
                                   const ir::Sharding& in, const ir::Sharding& out) {
  auto m = std::make_unique<ir::Module>("reduce");
  ir::Builder b(m->AddComputation("main", true));
  auto* x = With(b.Parameter(0, Shape(DType::kF32, {a, bdim}), "x"), in);
  With(b.Reduce(x, {dim}, kind), out);
  return m;
}

TEST_CASE("table 4: Reduce AB->A with A sharded needs no collective") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t a : {16, 9}) {
      auto m = Reduce(a, 5, 1, ir::ReduceKind::kAdd, Split(2, 0, d), Split(1, 0, d));
      CHECK(PartitionAndCheck(*m, d).empty());
    }
  }
}

TEST_CASE("table 4: Reduce AB->B with A sharded is one AllReduce") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t a : {16, 15}) {  // 15: the padding is masked with the identity
      for (ir::ReduceKind kind :
           {ir::ReduceKind::kAdd, ir::ReduceKind::kMax, ir::ReduceKind::kMin}) {
        CAPTURE(d);
        CAPTURE(a);
        auto m = Reduce(a, 5, 0, kind, Split(2, 0, d), kSpmdTable4Rep);
        CHECK(PartitionAndCheck(*m, d) == Counts{{"all-reduce", 1}});
      }
    }
  }
}

TEST_CASE("table 4: Einsum GSEC,GSM->EGCM with G sharded to E sharded is one AllToAll") {
  for (int64_t d : {2, 4, 8}) {
    for (int64_t g : {8, 16}) {
      for (int64_t e : {8, 6}) {  // 6 over 4 or 8: uneven experts
        CAPTURE(d);
        CAPTURE(g);
        CAPTURE(e);
        auto m = std::make_unique<ir::Module>("dispatch");
        ir::Builder b(m->AddComputation("main", true));
        auto* mask =
            With(b.Parameter(0, Shape(DType::kF32, {g, 4, e, 2}), "dispatch_mask"), Split(4, 0, d));
        auto* x = With(b.Parameter(1, Shape(DType::kF32, {g, 4, 3}), "inputs"), Split(3, 0, d));
        Instruction* t = b.Einsum("GSEC,GSM->EGCM", mask, x);
        REQUIRE(t->opcode == ir::Opcode::kTranspose);
        With(t->operands[0], Split(4, 1, d));  // the dot, [G,E,C,M], split on E
        With(t, Split(4, 0, d));
        CHECK(PartitionAndCheck(*m, d) == Counts{{"all-to-all", 1}});
      }
    }
  }
}

TEST_CASE("table 4: Convolution with spatial X sharded is O(1) CollectivePermutes (halos)") {
  // Window 3, stride 2, padding 1 over 4 partitions. x = 16: tiles of 4 inputs and 2 outputs;
  // tile c's windows read positions 4c - 1 .. 4c + 3: one element from the left neighbour, the
  // last tile's right edge is the padding. x = 13 (uneven: tiles of 4, the last holding 1 real
  // element): the same single left halo. Over 2 partitions, 13 gives tiles of 7 inputs and 4
  // outputs: tile 0 reads positions -1..7, one from the right neighbour instead.
  ir::ConvDims cd;
  cd.input_batch = 0;
  cd.input_feature = 2;
  cd.input_spatial = {1};
  cd.kernel_spatial = {0};
  cd.kernel_input_feature = 1;
  cd.kernel_output_feature = 2;
  cd.output_batch = 0;
  cd.output_feature = 2;
  cd.output_spatial = {1};
  ir::WindowDim win;
  win.size = 3;
  win.stride = 2;
  win.pad_low = 1;
  win.pad_high = 1;
  for (int64_t d : {2, 4, 8}) {
    for (int64_t x_len : {16, 13}) {
      CAPTURE(d);
      CAPTURE(x_len);
      auto m = std::make_unique<ir::Module>("conv");
      ir::Builder b(m->AddComputation("main", true));
      auto* x = With(b.Parameter(0, Shape(DType::kF32, {2, x_len, 3}), "x"), Split(3, 1, d));
      auto* w = With(b.Parameter(1, Shape(DType::kF32, {3, 3, 5}), "w"), kSpmdTable4Rep);
      With(b.Convolution(x, w, cd, {win}), Split(3, 1, d));
      PartitionResult r = testing::Partition(*m, d);
      testing::CheckNumerics(*m, r);
      const Counts counts = CollectiveCounts(*r.module);
      REQUIRE(counts.size() == 1);
      CHECK(counts.begin()->first == "collective-permute");
      CHECK(counts.begin()->second == 1);
      CHECK(ExplainProvenance(r).find("fallback") == std::string::npos);
    }
  }
}

}  // namespace
}  // namespace podsim::partitioner
