#pragma once
// Halo exchange (GShard section 3.3.3, Figures 5, 11 and 12, Appendix A.4): the SPMD form of an
// op that slides a window along a dim split over T partitions (convolution, reduce-window, pad,
// slice, a reshape that moves data across shards). Each partition needs, besides its own tile,
// a few elements of its neighbours' tiles. Per split dim:
//
//   1. plan (PlanHalo): for every tile c that computes real outputs, the input elements its
//      outputs read; the most any tile needs from its left and right neighbour (the halo sizes
//      differ per tile, Figure 11: window 3, stride 2, padding 1 over 4 partitions gives right
//      halos 1,2,3,4 once the padding is counted; the plan takes the maximum, Figure 12);
//   2. exchange: slice the high `left` elements of the tile and pass them right, the low
//      `right` elements and pass them left (one CollectivePermute each, Resharder::Shift),
//      concatenate [from left, own tile, from right];
//   3. mask: positions outside [0, N) (the op's padding, neighbours that do not exist, the
//      padding of uneven tiles) are replaced by the op's fill (0 for convolution, the reduction
//      identity for reduce-window, the pad value for pad) with iota + compare + select;
//   4. window: pad the buffer with fill so that every tile's window fits, and dynamic-slice each
//      tile's window at a per-partition offset, affine in the tile coordinate (computed from
//      partition-id). The local op then runs with one static configuration (`HaloPlan::local`)
//      on every partition.
//
// Base (lhs) dilation (Appendix A.4): the first window start of tile c is at dilated position
// c * So * stride - pad_low. When So * stride is a multiple of the base dilation, every tile sees
// the same phase of the dilation grid, so the slice is taken in element space and the local op
// keeps the base dilation with a constant low padding. Otherwise the phase differs per tile; the
// buffer is then dilated explicitly (interior padding with fill) and sliced in dilated space,
// and the local op has no base dilation (the buffer grows by the dilation factor; a documented
// simplification of the paper's window padding). Window (rhs) dilation only widens the window.
//
// A halo larger than a neighbour's tile would need data from partitions two or more steps away:
// PlanHalo returns nullopt and the caller falls back to making the dim whole (logged as
// "fallback" in the provenance).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/instruction.h"
#include "partitioner/reshard.h"
#include "partitioner/spmd_builder.h"
#include "partitioner/tile_layout.h"

namespace podsim::partitioner {

// One split dim of a windowed op, in element positions of the global tensor.
struct HaloGeometry {
  int64_t tiles = 1;       // T: partitions along the dim, tile coordinates 0..T-1
  int64_t in_shard = 1;    // S: tile c holds input positions [c * S, (c + 1) * S)
  int64_t in_extent = 0;   // N: input positions >= N are padding
  int64_t out_shard = 1;   // So: tile c computes output positions [c * So, (c + 1) * So)
  int64_t out_extent = 0;  // O: output positions >= O are padding (their values unspecified)
  // Output o reads dilated positions o * stride + t * window_dilation - pad_low for taps
  // t < size; dilated position p is input element p / base_dilation when that divides, and the
  // fill otherwise (pad_high is implied by O and not read).
  ir::WindowDim window;
};

struct HaloPlan {
  int64_t left = 0;     // elements each tile receives from its left neighbour (<= S)
  int64_t right = 0;    // elements each tile receives from its right neighbour (<= S)
  bool mask = false;    // some tile's buffer covers positions outside [0, N)
  bool dilate = false;  // the buffer is dilated explicitly (interior padding base_dilation - 1)
  // Fill added below / above the (dilated, when `dilate`) buffer so every window fits.
  int64_t pad_low = 0, pad_high = 0;
  // Per tile (diagnostics, the paper's Figure 11): input positions its So windows reach below /
  // above its own tile, counting the op's padding; negative when they start later / end
  // earlier (also for tiles past the output, which compute padding only). `left` and `right`
  // are the maxima over the tiles with real outputs and over positions that hold data.
  std::vector<int64_t> tile_left, tile_right;
  std::vector<int64_t> buffer_start;  // per tile: input position of the buffer's first element
  // Per tile c: start of its slice in the padded buffer, offset_base + c * offset_step (tiles
  // past the output may get a start past the buffer; dynamic-slice clamps it and they compute
  // padding anyway). The program computes it from the tile coordinate, not from a table.
  std::vector<int64_t> offset;
  int64_t offset_base = 0, offset_step = 0;
  int64_t extent = 0;         // slice extent
  int64_t base_dilation = 1;  // of the op (the interior padding when `dilate`)
  // The window the local op applies to the slice: it yields exactly So outputs.
  ir::WindowDim local;

  // Collective-permutes the exchange emits (0, 1 or 2).
  int64_t permutes() const { return (left > 0 ? 1 : 0) + (right > 0 ? 1 : 0); }
};

// The plan for `g`, or nullopt when a tile would need more than a neighbour's tile (or the
// geometry is degenerate: no outputs, empty tiles).
std::optional<HaloPlan> PlanHalo(const HaloGeometry& g);

// Estimated communication of the exchange in ReshardCostModel units: halo bytes each partition
// receives plus `latency_bytes` per collective-permute. `slab_bytes` is the size of one element
// position along the dim (the product of the other local dims times the element width).
double HaloCost(const HaloPlan& plan, double slab_bytes, double latency_bytes);

// Steps 2-4 above on local value `x`, whose dim `dim` holds this partition's S positions; the
// partitions are arranged as `layout` and the dim is split along layout dim `layout_dim`.
// `fill` is a scalar of x's dtype, or null when no valid output can read a position outside
// [0, N) (slice, reshape): then nothing is masked and any padding added is zeros. Returns the
// slice, `plan.extent` long in `dim`. Collectives are logged with `why` plus the halo sizes.
ir::Instruction* ExchangeHalo(SpmdBuilder& sb, const Resharder& resharder, ir::Instruction* x,
                              int64_t dim, const TileLayout& layout, int64_t layout_dim,
                              const HaloGeometry& g, const HaloPlan& plan, ir::Instruction* fill,
                              const ReshardReason& why);

}  // namespace podsim::partitioner
