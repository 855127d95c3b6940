// Scans and selections along a split dim (handlers_scan_gather.cc): cumsum, argmax, top-k and gather,
// each checked structurally (which collectives) and numerically through the equivalence
// harness (padding poisoned with NaN), even and uneven, on 2, 3, 4 and 8 partitions; ties and
// NaN resolved as the unpartitioned op does; sort's documented fallback.

#include <doctest/doctest.h>

#include <limits>

#include "ir/builder.h"
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

const ir::Sharding kSpmdScanRep = ir::Sharding::Replicated();

struct SpmdScanFixture : testing::SpmdFixture {
  SpmdScanFixture() : SpmdFixture("scan") {}
};

bool Has(const PartitionResult& r, const std::string& text) {
  return ExplainProvenance(r).find(text) != std::string::npos;
}

TEST_CASE("cumsum along a split dim: local scan plus the prefix of one AllGather of totals") {
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t n : {16, 13}) {
      for (bool exclusive : {false, true}) {
        for (DType t : {DType::kF32, DType::kS32, DType::kBF16}) {
          CAPTURE(d);
          CAPTURE(n);
          CAPTURE(exclusive);
          SpmdScanFixture f;
          auto* x = f.Param(0, {3, n}, Split(2, 1, d), t);
          With(f.b.Cumsum(x, 1, exclusive), Split(2, 1, d));
          PartitionResult r = f.Run(d);
          CHECK(CollectiveCounts(*r.module) == Counts{{"all-gather", 1}});
          CHECK(Has(r, "cumsum along split dim 1: tile totals"));
          CHECK(!Has(r, "fallback"));
        }
      }
    }
  }
  // 2x2 mesh: rows split on one axis (pass through), the scanned dim on the other.
  SpmdScanFixture g;
  auto* x = g.Param(0, {5, 9}, Tiles({2, 2}));
  With(g.b.Cumsum(x, 1), Tiles({2, 2}));
  PartitionResult r = g.Run(4);
  CHECK(CollectiveCounts(*r.module) == Counts{{"all-gather", 1}});
}

TEST_CASE("argmax along a split dim: global indices, first maximum wins across tiles") {
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t n : {16, 11}) {
      for (DType t : {DType::kF32, DType::kS32}) {  // s32 in [0, 8): many ties
        CAPTURE(d);
        CAPTURE(n);
        SpmdScanFixture f;
        auto* x = f.Param(0, {4, n}, Split(2, 1, d), t);
        With(f.b.Argmax(x, 1), kSpmdScanRep);
        PartitionResult r = f.Run(d);
        CHECK(CollectiveCounts(*r.module) == Counts{{"all-gather", 2}});
        CHECK(!Has(r, "fallback"));
      }
    }
  }
  // Ties across tiles go to the lower index; NaN is the maximum and the first NaN wins.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  SpmdScanFixture g;
  auto* c = With(g.b.Constant(ir::Literal(Shape(DType::kF32, {2, 7}), {1, 5, 2, 5, 5, 0, 5,  //
                                                                       1, 2, 3, nan, 9, nan, 4})),
                 Split(2, 1, 4));
  With(g.b.Argmax(c, 1), kSpmdScanRep);
  g.Run(4);
}

TEST_CASE("top-k along a split dim: candidates from every tile, then top-k again") {
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t n : {32, 29}) {
      for (int64_t k : {1, 3}) {
        for (DType t : {DType::kF32, DType::kS32}) {
          CAPTURE(d);
          CAPTURE(n);
          CAPTURE(k);
          SpmdScanFixture f;
          auto* x = f.Param(0, {3, n}, Split(2, 1, d), t);
          auto* tk = f.b.TopK(x, k);
          auto* v = With(f.b.GetTupleElement(tk, 0), kSpmdScanRep);
          auto* i = With(f.b.GetTupleElement(tk, 1), kSpmdScanRep);
          f.b.Tuple({v, i});
          PartitionResult r = f.Run(d);
          CHECK(CollectiveCounts(*r.module) == Counts{{"all-gather", 2}});
          CHECK(Has(r, "candidates per tile"));
        }
      }
    }
  }
  // k as large as a tile: no saving, documented fallback to gathering the dim.
  SpmdScanFixture g;
  auto* x = g.Param(0, {3, 8}, Split(2, 1, 4));
  auto* tk = g.b.TopK(x, 2);
  With(g.b.GetTupleElement(tk, 0), kSpmdScanRep);
  PartitionResult r = g.Run(4);
  CHECK(Has(r, "fallback: top-k needs dims {1} whole"));
}

TEST_CASE("gather along a split axis: local gathers of masked indices, then an AllReduce") {
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t rows : {8, 6}) {  // s32 indices in [0, 8): 6 rows exercises the clamp
      CAPTURE(d);
      CAPTURE(rows);
      SpmdScanFixture f;
      auto* table = f.Param(0, {rows, 5}, Split(2, 0, d));
      auto* idx = f.Param(1, {7}, kSpmdScanRep, DType::kS32);
      With(f.b.Gather(table, idx, 0), kSpmdScanRep);
      PartitionResult r = f.Run(d);
      CHECK(CollectiveCounts(*r.module) == Counts{{"all-reduce", 1}});
      CHECK(Has(r, "gather along split axis 0"));
    }
  }
  // The result wanted split over the indices: the partial rows are reduce-scattered.
  SpmdScanFixture g;
  auto* table = g.Param(0, {8, 5}, Split(2, 0, 4));
  auto* idx = g.Param(1, {2, 8}, kSpmdScanRep, DType::kS32);
  With(g.b.Gather(table, idx, 0), Split(3, 1, 4));
  PartitionResult r = g.Run(4);
  CHECK(CollectiveCounts(*r.module) == Counts{{"reduce-scatter", 1}});
  // Axis in the middle, a 2x2 mesh (columns pass through), explicit out-of-range indices, pred.
  SpmdScanFixture h;
  auto* t3 = h.Param(0, {3, 9, 4}, Tiles({1, 2, 2}));
  auto* c = h.b.Constant(ir::Literal(Shape(DType::kS32, {5}), {-3, 0, 8, 12, 4}));
  auto* g3 = With(h.b.Gather(t3, c, 1), Tiles({1, 1, 2}, 2));
  auto* tp = h.Param(1, {7, 2}, Split(2, 0, 4), DType::kPred);
  auto* gp = With(h.b.Gather(tp, c, 0), kSpmdScanRep);
  h.b.Tuple({g3, gp});
  PartitionResult rh = h.Run(4);
  CHECK(!Has(rh, "fallback"));
}

TEST_CASE("sort along a split dim falls back to gathering it (documented)") {
  SpmdScanFixture f;
  auto* x = f.Param(0, {3, 10}, Split(2, 1, 4));
  With(f.b.Sort(x, 1, true), Split(2, 1, 4));
  PartitionResult r = f.Run(4);
  CHECK(Has(r, "fallback: sort needs dims {1} whole"));
}

}  // namespace
}  // namespace podsim::partitioner
