// Halo exchange (partitioner/halo.h, handlers_window.cc, handlers_reshape.cc): the plan for the
// paper's Figure 11 derived by hand, then convolution, reduce-window, pad, slice and reshape over
// split dims, each checked structurally (only CollectivePermutes, at most two per split dim) and
// numerically through the equivalence harness (padding poisoned with NaN), even and uneven, on
// 2, 3, 4 and 8 partitions.

#include <doctest/doctest.h>

#include <optional>

#include "ir/builder.h"
#include "partitioner/halo.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Shape;
using ir::WindowDim;
using testing::CollectiveCounts;
using testing::Split;
using testing::Tiles;
using testing::With;
using Counts = std::map<std::string, int64_t>;

const ir::Sharding kRep = ir::Sharding::Replicated();

struct SpmdHaloFixture : testing::SpmdFixture {
  SpmdHaloFixture() : SpmdFixture("halo") {}
};

bool Has(const PartitionResult& r, const std::string& text) {
  return ExplainProvenance(r).find(text) != std::string::npos;
}

// Only collective-permutes, at most `max` of them.
bool OnlyPermutes(const PartitionResult& r, int64_t max) {
  const Counts c = CollectiveCounts(*r.module);
  if (c.empty()) return true;
  return c.size() == 1 && c.begin()->first == "collective-permute" && c.begin()->second <= max;
}

// Input [batch, x, feature], kernel [window, in feature, out feature], output [batch, x, out].
ir::ConvDims Conv1D() {
  ir::ConvDims cd;
  cd.input_batch = 0;
  cd.input_spatial = {1};
  cd.input_feature = 2;
  cd.kernel_spatial = {0};
  cd.kernel_input_feature = 1;
  cd.kernel_output_feature = 2;
  cd.output_batch = 0;
  cd.output_spatial = {1};
  cd.output_feature = 2;
  return cd;
}

// Output extent of a window over n elements (the shape rule).
int64_t WindowOut(int64_t n, const WindowDim& w) {
  const int64_t dilated = (n - 1) * w.base_dilation + 1 + w.pad_low + w.pad_high;
  const int64_t span = (w.size - 1) * w.window_dilation + 1;
  return dilated < span ? 0 : (dilated - span) / w.stride + 1;
}

// The plan PartitionSpmd uses for one split dim of extent n (output o) over t tiles.
std::optional<HaloPlan> Plan(int64_t n, int64_t o, int64_t t, const WindowDim& w) {
  HaloGeometry g;
  g.tiles = t;
  g.in_extent = n;
  g.in_shard = ShardExtent(n, t);
  g.out_extent = o;
  g.out_shard = ShardExtent(o, t);
  g.window = w;
  return PlanHalo(g);
}

TEST_CASE("halo plan: the paper's Figure 11 (window 3, stride 2, padding 1, 4 partitions)") {
  // 12 elements, tiles of S = 3; 6 outputs, So = 2 per tile. Tile c's first window starts at
  // dilated position 2 * 2c - 1 = 4c - 1 and its two windows span 5 positions, up to 4c + 3.
  // Below its tile start 3c that is 1 - c positions; above its tile end 3c + 2, c + 1: right
  // halos 1, 2, 3, 4. (Tile 3 holds outputs 6 and 7, past the 6 real ones: it computes padding
  // only and needs nothing.)
  const WindowDim w{3, 2, 1, 1, 1, 1};
  std::optional<HaloPlan> p = Plan(12, WindowOut(12, w), 4, w);
  REQUIRE(p);
  CHECK(WindowOut(12, w) == 6);
  CHECK(p->tile_right == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(p->tile_left == std::vector<int64_t>{1, 0, -1, -2});
  // Exchanged: the most any tile with real outputs reads from a neighbour. Tile 0's left halo
  // is the convolution's padding, so nothing comes from the left; tile 2 reads 3 from tile 3.
  CHECK(p->left == 0);
  CHECK(p->right == 3);
  // Figure 12: buffers [3c, 3c + 6), all real data (no mask), padded by one fill element below
  // (position -1 for tile 0); tile c's windows start at 4c - 1, that is c into its padded
  // buffer of 7 (tile 3's 3 is clamped to 2 by the dynamic-slice: it computes padding only).
  CHECK(!p->mask);
  CHECK(p->buffer_start == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(p->offset == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(p->offset_base == 0);
  CHECK(p->offset_step == 1);
  CHECK(p->pad_low == 1);
  CHECK(p->pad_high == 0);
  CHECK(p->extent == 5);
  CHECK(p->local == WindowDim{3, 2, 0, 0, 1, 1});

  SpmdHaloFixture f;
  auto* x = f.Param(0, {2, 12, 3}, Split(3, 1, 4));
  auto* k = f.Param(1, {3, 3, 5}, kRep);
  With(f.b.Convolution(x, k, Conv1D(), {w}), Split(3, 1, 4));
  PartitionResult r = f.Run(4);
  CHECK(CollectiveCounts(*r.module) == Counts{{"collective-permute", 1}});
  CHECK(Has(r, "halo exchange: 3 elements from the right neighbour along dim 1"));
  CHECK(!Has(r, "fallback"));
}

TEST_CASE("halo plan: a halo larger than a neighbour's tile has no plan") {
  // 8 elements on 8 tiles of 1: a window of 5 reads 2 tiles away.
  CHECK(!Plan(8, 8, 8, WindowDim{5, 1, 2, 2, 1, 1}));
  CHECK(Plan(8, 8, 8, WindowDim{3, 1, 1, 1, 1, 1}));
  // Base dilation 2, stride 1: So * stride = 2 * 1 is a multiple of 2, element space.
  std::optional<HaloPlan> a = Plan(8, 15, 2, WindowDim{1, 1, 0, 0, 2, 1});
  REQUIRE(a);
  CHECK(!a->dilate);
  // 15 outputs over 4 tiles: So = 4, stride 1: each tile starts on the dilation grid.
  std::optional<HaloPlan> b = Plan(8, 15, 4, WindowDim{1, 1, 0, 0, 2, 1});
  REQUIRE(b);
  CHECK(!b->dilate);
  // 15 outputs over 3 tiles: So = 5, odd: the tiles start on different phases of the
  // dilation grid, so the buffer is dilated explicitly.
  std::optional<HaloPlan> c = Plan(8, 15, 3, WindowDim{1, 1, 0, 0, 2, 1});
  REQUIRE(c);
  CHECK(c->dilate);
}

TEST_CASE("table 4: convolution over spatial X is O(1) CollectivePermutes, even and uneven") {
  const WindowDim windows[] = {{3, 1, 1, 1, 1, 1}, {3, 2, 1, 1, 1, 1}, {5, 1, 2, 2, 1, 1},
                               {2, 2, 0, 0, 1, 1}, {4, 3, 0, 1, 1, 1}, {3, 1, 0, 0, 1, 1}};
  int64_t native = 0;
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t n : {16, 13, 29}) {
      for (const WindowDim& w : windows) {
        CAPTURE(d);
        CAPTURE(n);
        CAPTURE(w.size);
        CAPTURE(w.stride);
        SpmdHaloFixture f;
        auto* x = f.Param(0, {2, n, 3}, Split(3, 1, d));
        auto* k = f.Param(1, {w.size, 3, 4}, kRep);
        With(f.b.Convolution(x, k, Conv1D(), {w}), Split(3, 1, d));
        PartitionResult r = f.Run(d);
        if (Plan(n, WindowOut(n, w), d, w)) {
          ++native;
          CHECK(OnlyPermutes(r, 2));
          CHECK(!Has(r, "fallback"));
        } else {
          CHECK(Has(r, "is larger than a tile"));
        }
      }
    }
  }
  // Of 72 cases 4 fall back: window 4, stride 3 makes 2 outputs (6 positions) per tile of 4
  // inputs at d = 4, so tiles drift 2 positions apart per tile, more than a tile by the last.
  CHECK(native == 68);
}

TEST_CASE("convolution with base (lhs) and window (rhs) dilation") {
  for (int64_t d : {2, 3, 4}) {
    for (int64_t n : {12, 11}) {
      for (int64_t bd : {2, 3}) {
        for (int64_t stride : {1, 2, 3}) {
          for (int64_t wd : {1, 2}) {
            CAPTURE(d);
            CAPTURE(n);
            CAPTURE(bd);
            CAPTURE(stride);
            CAPTURE(wd);
            const WindowDim w{3, stride, 1, 2, bd, wd};
            SpmdHaloFixture f;
            auto* x = f.Param(0, {1, n, 2}, Split(3, 1, d));
            auto* k = f.Param(1, {3, 2, 3}, kRep);
            With(f.b.Convolution(x, k, Conv1D(), {w}), Split(3, 1, d));
            PartitionResult r = f.Run(d);
            if (Plan(n, WindowOut(n, w), d, w)) CHECK(OnlyPermutes(r, 2));
          }
        }
      }
    }
  }
}

TEST_CASE("2-D convolution split on both spatial dims and on batch: corners come along") {
  ir::ConvDims cd;  // b01f_01io->b01f
  cd.input_batch = 0;
  cd.input_spatial = {1, 2};
  cd.input_feature = 3;
  cd.kernel_spatial = {0, 1};
  cd.kernel_input_feature = 2;
  cd.kernel_output_feature = 3;
  cd.output_batch = 0;
  cd.output_spatial = {1, 2};
  cd.output_feature = 3;
  const WindowDim w{3, 1, 1, 1, 1, 1};
  for (int64_t h : {8, 9}) {
    SpmdHaloFixture f;
    auto* x = f.Param(0, {2, h, 10, 2}, Tiles({1, 2, 2, 1}));
    auto* k = f.Param(1, {3, 3, 2, 3}, kRep);
    With(f.b.Convolution(x, k, cd, {w, w}), Tiles({1, 2, 2, 1}));
    PartitionResult r = f.Run(4);
    CHECK(CollectiveCounts(*r.module) == Counts{{"collective-permute", 4}});
  }
  // Batch on one mesh axis, a spatial dim on the other, strided: halos only along the latter.
  SpmdHaloFixture g;
  auto* x = g.Param(0, {4, 11, 7, 2}, Tiles({2, 2, 1, 1}));
  auto* k = g.Param(1, {3, 2, 2, 3}, kRep);
  With(g.b.Convolution(x, k, cd, {WindowDim{3, 2, 1, 1, 1, 1}, WindowDim{2, 1, 0, 1, 1, 1}}),
       Tiles({2, 2, 1, 1}));
  PartitionResult r = g.Run(4);
  CHECK(OnlyPermutes(r, 2));
}

TEST_CASE("depthwise convolution (feature groups) over a split spatial dim") {
  // 4 groups of one feature each: output features are not a pass-through dim (made whole),
  // the spatial split still exchanges halos.
  for (int64_t d : {2, 4}) {
    SpmdHaloFixture f;
    auto* x = f.Param(0, {2, 11, 4}, Split(3, 1, d));
    auto* k = f.Param(1, {3, 1, 4}, kRep);
    With(f.b.Convolution(x, k, Conv1D(), {WindowDim{3, 1, 1, 1, 1, 1}}, 4), Split(3, 1, d));
    PartitionResult r = f.Run(d);
    CHECK(CollectiveCounts(*r.module) == Counts{{"collective-permute", 2}});
  }
}

TEST_CASE("convolution: halo larger than a tile falls back to gathering the dim") {
  SpmdHaloFixture f;
  auto* x = f.Param(0, {1, 8, 2}, Split(3, 1, 8));
  auto* k = f.Param(1, {7, 2, 2}, kRep);
  With(f.b.Convolution(x, k, Conv1D(), {WindowDim{7, 1, 3, 3, 1, 1}}), Split(3, 1, 8));
  PartitionResult r = f.Run(8);
  CHECK(Has(r, "fallback: convolution halo along dims {1} is larger than a tile"));
}

TEST_CASE("reduce-window (pooling) with padding: max, min, add, s32, 2-D, dilated") {
  struct Case {
    WindowDim w;
    ir::ReduceKind kind;
    DType t;
  };
  const Case cases[] = {
      {{3, 2, 1, 1, 1, 1}, ir::ReduceKind::kMax, DType::kF32},   // max pool 3/2, pad 1
      {{2, 2, 0, 1, 1, 1}, ir::ReduceKind::kAdd, DType::kF32},   // sum pool 2/2, pad high
      {{3, 1, 2, 0, 1, 1}, ir::ReduceKind::kMin, DType::kF32},   // causal min
      {{3, 2, 1, 1, 1, 1}, ir::ReduceKind::kMax, DType::kS32},   // padding is INT_MIN
      {{2, 1, 1, 1, 2, 1}, ir::ReduceKind::kAdd, DType::kF32},   // base dilation
      {{2, 2, 1, 0, 1, 2}, ir::ReduceKind::kMax, DType::kBF16},  // window dilation
  };
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t n : {16, 15}) {
      for (const Case& c : cases) {
        CAPTURE(d);
        CAPTURE(n);
        CAPTURE(c.w.size);
        SpmdHaloFixture f;
        auto* x = f.Param(0, {n, 3}, Split(2, 0, d), c.t);
        With(f.b.ReduceWindow(x, {c.w, WindowDim{}}, c.kind), Split(2, 0, d));
        PartitionResult r = f.Run(d);
        if (Plan(n, WindowOut(n, c.w), d, c.w)) CHECK(OnlyPermutes(r, 2));
      }
    }
  }
  // 2-D pooling split on both dims.
  SpmdHaloFixture g;
  auto* x = g.Param(0, {9, 10}, Tiles({2, 2}));
  With(g.b.ReduceWindow(x, {WindowDim{3, 2, 1, 1, 1, 1}, WindowDim{2, 2, 0, 0, 1, 1}},
                        ir::ReduceKind::kMax),
       Tiles({2, 2}));
  PartitionResult r = g.Run(4);
  CHECK(OnlyPermutes(r, 4));
}

TEST_CASE("pad over a split dim realigns the tiles (Figure 5b)") {
  const ir::PadDim pads[] = {{2, 1, 0}, {0, 3, 0}, {-1, 2, 0}, {1, 1, 1}, {-2, -1, 0}, {0, 0, 2}};
  for (int64_t d : {2, 3, 4, 8}) {
    for (int64_t n : {16, 13}) {
      for (const ir::PadDim& p : pads) {
        CAPTURE(d);
        CAPTURE(n);
        CAPTURE(p.low);
        CAPTURE(p.high);
        CAPTURE(p.interior);
        SpmdHaloFixture f;
        auto* x = f.Param(0, {n, 2}, Split(2, 0, d));
        auto* v = f.Param(1, {}, kRep);  // the pad value, at run time
        With(f.b.Pad(x, v, {p, ir::PadDim{}}), Split(2, 0, d));
        PartitionResult r = f.Run(d);
        const int64_t out = n + p.low + p.high + (n - 1) * p.interior;
        const WindowDim w{1, 1, p.low, p.high, p.interior + 1, 1};
        if (Plan(n, out, d, w)) {
          CHECK(OnlyPermutes(r, 2));
        } else {
          CHECK(Has(r, "fallback"));
        }
      }
    }
  }
}

TEST_CASE("slice over a split dim shifts instead of gathering when it stays local-ish") {
  for (int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    SpmdHaloFixture f;
    auto* x = f.Param(0, {16, 3}, Split(2, 0, d));
    auto* a = With(f.b.Slice(x, {1, 0}, {15, 3}), Split(2, 0, d));
    auto* b = With(f.b.Slice(x, {1, 0}, {16, 3}, {2, 1}), Split(2, 0, d));
    f.b.Tuple({a, b});
    PartitionResult r = f.Run(d);
    CHECK(OnlyPermutes(r, 4));
  }
  // The last 4 rows onto 4 partitions: tile 0 wants row 12, three tiles away: fallback.
  SpmdHaloFixture g;
  auto* x = g.Param(0, {16, 3}, Split(2, 0, 4));
  With(g.b.Slice(x, {12, 0}, {16, 3}), Split(2, 0, 4));
  PartitionResult r = g.Run(4);
  CHECK(Has(r, "fallback: slice halo along dims {0} is larger than a tile"));
}

TEST_CASE("reshape that moves data across shards (Figure 5c): [3,2] -> [6] over 2") {
  // Tiles of the operand: rows {0,1} and {2, padding}; of the result: {0,1,2} and {3,4,5}.
  // Partition 1 needs element 3 (row 1, column 1) from partition 0: one CollectivePermute.
  SpmdHaloFixture f;
  auto* x = f.Param(0, {3, 2}, Split(2, 0, 2));
  With(f.b.Reshape(x, {6}), Split(1, 0, 2));
  PartitionResult r = f.Run(2);
  CHECK(CollectiveCounts(*r.module) == Counts{{"collective-permute", 1}});
  CHECK(Has(r, "reshape of uneven tiles realigned"));
  // And back, and larger meshes.
  for (int64_t d : {2, 3, 4}) {
    CAPTURE(d);
    SpmdHaloFixture g;
    auto* y = g.Param(0, {6}, Split(1, 0, d));
    auto* z = With(g.b.Reshape(y, {3, 2}), Split(2, 0, d));
    auto* u = g.Param(1, {5, 2, 3}, Split(3, 0, d));
    auto* v = With(g.b.Reshape(u, {10, 3}), Split(2, 0, d));
    g.b.Tuple({z, v});
    PartitionResult rg = g.Run(d);
    CHECK(OnlyPermutes(rg, 3));
  }
  // 9 rows of 2 over 8: tiles of 4 elements, results of 3; tile 5 is 5 elements behind.
  SpmdHaloFixture h;
  auto* w = h.Param(0, {9, 2}, Split(2, 0, 8));
  With(h.b.Reshape(w, {18}), Split(1, 0, 8));
  PartitionResult rh = h.Run(8);
  CHECK(Has(rh, "fallback: reshape"));
}

TEST_CASE("halo programs do not grow with D") {
  // 8d - 1 elements: tiles of 8 (the last with 7) and 4 outputs per tile at every d, so the
  // halo plans have the same shape; only constants (extents, permute pairs) change.
  auto size = [](int64_t d) {
    SpmdHaloFixture f;
    auto* x = f.Param(0, {2, 8 * d - 1, 3}, Split(3, 1, d));
    auto* k = f.Param(1, {3, 3, 4}, kRep);
    auto* c = With(f.b.Convolution(x, k, Conv1D(), {WindowDim{3, 2, 1, 1, 1, 1}}), Split(3, 1, d));
    With(f.b.ReduceWindow(c, {WindowDim{}, WindowDim{3, 1, 1, 1, 1, 1}, WindowDim{}},
                          ir::ReduceKind::kMax),
         Split(3, 1, d));
    PartitionResult r = f.Run(d);
    return r.module->InstructionCount();
  };
  // (From 4 on: at 2 the output extent 4d equals the tile extent 8 and shares its constant.)
  const int64_t base = size(4);
  CHECK(size(8) == base);
  CHECK(size(16) == base);
}

}  // namespace
}  // namespace podsim::partitioner
