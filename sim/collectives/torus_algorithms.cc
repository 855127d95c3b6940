// Dimension-wise torus algorithms for all-reduce, all-gather and reduce-scatter over box groups
// (a whole torus, a sub-torus, one axis, a sub-block of a mesh; the cores of a chip are an axis).
//
// The data is cut into G slots, one per member. Reduce-scatter runs one phase per axis, in the
// phase order P: in phase t every line along axis P[t] (members equal on every other axis) runs a
// ring reduce-scatter over the slots its members still share (those whose owners match them on
// P[0..t-1]), split by the owner's coordinate on P[t]. After the last phase each member holds its
// own slot summed over the group. All-gather runs the same phases in reverse order (P[k-1]
// first), each line gathering the slots its members hold. All-reduce = reduce-scatter then
// all-gather over "virtual" slots laid out so that every piece is contiguous.
//
// Both ring directions: the data is cut in two halves, each running all its phases in one
// direction (the second on the reversed rings), so every link carries data both ways. Each half
// is a collective of its own: a piece waits only for data of its half, which arrived from one
// direction, so a member's waits do not depend on its ring position (with every piece halved
// phase by phase instead, a member's next piece arrives partly from the one side and partly
// from the other, by position) and the schedule is the same seen from every chip of a torus
// (what the symmetric timing uses: symmetric_timing.h).
//
// Phase order:
//  - all-reduce: the core axis first (its on-chip links are fast and halve what the ICI phases
//    carry), then chip dimensions from the largest to the smallest (equal sizes: the last
//    first), an order that does not depend on how the dimensions are numbered;
//  - reduce-scatter / all-gather: the core axis first (all-gather: last), as for all-reduce: a
//    chip's cores then exchange over ICI only the slots they do not share, not one copy per
//    core. Then the chip axes: slot i is group member i's block, so pieces are contiguous when
//    reduce-scatter starts with the chip axis along which the group order varies slowest
//    (all-gather ends with it); for a group whose order is not a mixed radix of its axes: chip
//    dimensions in ascending order. (With the cores first, a core's pieces are strided; they
//    travel as segmented messages.)
// Each line's ring follows the axis coordinate order: a closed axis (whole wrapped ring) uses its
// wraparound link; a line (mesh or partial axis) sends its closing hop back along the line.
//
// All axes at once: with R >= 2 chip axes the data is cut into R parts (the "rotations"), each
// running the phases above on its own with the chip axes of the phase order rotated cyclically
// by r (the core axis keeps its place). On a 2D grid one half goes dim1 then dim0, the other
// dim0 then dim1, so both axes' links are busy in every phase, as the scaling book's multi-axis
// formula (T = V / (W * n_axes)) assumes; with one rotation only one axis's links would carry
// data at a time and the collective would take up to R times longer. The rotations touch
// disjoint ranges, so the builder's range tracking lets them run concurrently. Each rotation's
// part is proportional to its speed (TorusRotationShares in closed_form.h): a rotation whose
// first phase runs along a line (one direction's worth of bandwidth, against a ring's two) or a
// slower axis gets less, so that the rotations finish together.

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include "base/error.h"
#include "sim/collectives/algorithms_internal.h"
#include "sim/collectives/closed_form.h"
#include "sim/collectives/group_geometry.h"

namespace podsim::sim::internal {
namespace {

// Axis indices of `box`, in reduce-scatter phase order for `kind` (see the file comment).
std::vector<size_t> PhaseOrder(const topo::Topology& topology, const BoxGroup& box,
                               CollectiveKind kind) {
  const size_t k = box.axes.size();
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), 0);  // axes: cores first, then dims ascending
  if (kind == CollectiveKind::kAllReduce) {
    // Chip dims from the largest to the smallest (equal sizes: last dim first), so that the
    // order, like the ring order, does not depend on how the dimensions are numbered.
    std::reverse(order.begin(), order.end());
    if (k > 0 && box.axes[0].dim < 0) std::rotate(order.begin(), order.end() - 1, order.end());
    // Equal sizes: an axis with two links per neighbour direction (a whole wrapped ring) first.
    const topo::GridShape* grid = topology.grid();
    auto ring = [&](size_t a) {
      const GroupAxis& x = box.axes[a];
      return x.dim >= 0 && x.closed &&
             (x.size > 2 || grid->wraparound[static_cast<size_t>(x.dim)]);
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const bool core_a = box.axes[a].dim < 0, core_b = box.axes[b].dim < 0;
      if (core_a != core_b) return core_a;
      if (box.axes[a].size != box.axes[b].size) return box.axes[a].size > box.axes[b].size;
      return ring(a) && !ring(b);
    });
    return order;
  }
  // Mixed radix? group index == base + sum_a coord_a * stride_a for every member.
  std::vector<int64_t> zero(k, 0);
  const int64_t base = box.MemberAt(zero);
  std::vector<int64_t> stride(k);
  for (size_t a = 0; a < k; ++a) {
    std::vector<int64_t> unit = zero;
    unit[a] = 1;
    stride[a] = box.MemberAt(unit) - base;
  }
  bool mixed_radix = true;
  for (size_t i = 0; i < box.coords.size() && mixed_radix; ++i) {
    int64_t expect = base;
    for (size_t a = 0; a < k; ++a) expect += box.coords[i][a] * stride[a];
    mixed_radix = expect == static_cast<int64_t>(i);
  }
  if (mixed_radix) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::abs(stride[a]) > std::abs(stride[b]); });
  } else if (k > 0 && box.axes[0].dim < 0) {
    std::rotate(order.begin(), order.begin() + 1, order.end());
  }
  // The core axis reduces first (all-gather: gathers last), whatever the layout: on-chip links
  // are fast, and a chip's cores then exchange over ICI only the slots they do not share, not a
  // copy for each core (on a v3 slice that halves the bytes on every ICI link).
  const auto core = std::find_if(order.begin(), order.end(),
                                 [&](size_t a) { return box.axes[a].dim < 0; });
  if (core != order.end()) std::rotate(order.begin(), core, core + 1);
  return order;
}

// The phase orders of the rotations (see the file comment): rotation r moves the chip axes of
// `base` cyclically by r among the positions chip axes hold; at least one rotation.
std::vector<std::vector<size_t>> Rotations(const BoxGroup& box, const std::vector<size_t>& base) {
  std::vector<size_t> chip_positions;
  for (size_t t = 0; t < base.size(); ++t) {
    if (box.axes[base[t]].dim >= 0) chip_positions.push_back(t);
  }
  const size_t count = std::max<size_t>(1, chip_positions.size());
  std::vector<std::vector<size_t>> orders;
  for (size_t r = 0; r < count; ++r) {
    std::vector<size_t> order = base;
    for (size_t i = 0; i < chip_positions.size(); ++i) {
      order[chip_positions[i]] = base[chip_positions[(i + r) % chip_positions.size()]];
    }
    orders.push_back(std::move(order));
  }
  return orders;
}

// `twisted`: the axis is of a TwistedView (its ring runs through the twisted wraparound).
std::string AxisLabel(const GroupAxis& axis, bool twisted) {
  return (axis.dim < 0 ? std::string("cores") : "dim" + std::to_string(axis.dim)) + "(" +
         std::to_string(axis.size) +
         (axis.closed ? (twisted ? ", ring through the twisted wrap)" : ", ring)") : ", line)");
}

}  // namespace

std::vector<std::vector<AnalyticAxis>> TorusRotations::Axes(const topo::Topology& topology) const {
  std::vector<std::vector<AnalyticAxis>> in_order;
  for (size_t r = 0; r < orders.size(); ++r) {
    const std::vector<AnalyticAxis> axes = BoxAxes(topology, *boxes[r]);
    in_order.emplace_back();
    for (size_t a : orders[r]) in_order.back().push_back(axes[a]);
  }
  return in_order;
}

TorusRotations PlanTorusRotations(const topo::Topology& topology, const BoxGroup& box,
                                  CollectiveKind kind) {
  TorusRotations plan;
  plan.box = &box;
  plan.orders = Rotations(box, PhaseOrder(topology, box, kind));
  for (const std::vector<size_t>& order : plan.orders) {
    const BoxGroup* view = &box;
    const auto first_chip =
        std::find_if(order.begin(), order.end(), [&](size_t a) { return box.axes[a].dim >= 0; });
    if (first_chip != order.end()) {
      if (std::optional<BoxGroup> twisted = TwistedView(topology, box, *first_chip)) {
        view = &plan.twisted_views.emplace_back(std::move(*twisted));
      }
    }
    plan.boxes.push_back(view);
  }
  return plan;
}

namespace {

// Runs the torus phases for one box group.
class TorusGroupBuilder {
 public:
  TorusGroupBuilder(const BuildContext& context, const std::vector<int64_t>& group,
                    const BoxGroup& box, ScheduleBuilder& builder, Schedule& schedule)
      : context_(context),
        group_(group),
        box_(&box),
        builder_(builder),
        schedule_(schedule),
        kind_(context.spec.kind),
        n_(context.spec.elements),
        g_(static_cast<int64_t>(group.size())),
        plan_(PlanTorusRotations(context.topology, box, kind_)),
        shares_(TorusRotationShares(plan_.Axes(context.topology))) {}

  std::string Build() {
    const Buffer buffer =
        kind_ == CollectiveKind::kReduceScatter ? Buffer::kScratch : Buffer::kOutput;
    int last_step = 0;
    const int64_t parts = 2 * static_cast<int64_t>(plan_.orders.size());
    for (int64_t k = 0; k < parts; ++k) {  // rotation k / 2, ring direction k % 2
      order_ = plan_.orders[static_cast<size_t>(k / 2)];
      box_ = plan_.boxes[static_cast<size_t>(k / 2)];
      channel_ = static_cast<int>(k);  // the part's send queues
      reverse_ = k % 2 == 1;
      SetUpSlots(k);
      int step = 0;
      if (kind_ != CollectiveKind::kAllGather) {
        for (size_t t = 0; t < order_.size(); ++t) step = Phase(t, buffer, step, /*reduce=*/true);
      }
      if (kind_ != CollectiveKind::kReduceScatter) {
        for (size_t t = order_.size(); t-- > 0;) step = Phase(t, buffer, step, /*reduce=*/false);
      }
      last_step = std::max(last_step, step);
    }
    if (kind_ == CollectiveKind::kReduceScatter) {
      for (int64_t i = 0; i < g_; ++i) {
        const int64_t member = group_[static_cast<size_t>(i)];
        if (!Near(member)) continue;
        const BlockRange b = BlockOf(n_, g_, i);
        builder_.AddPiece(member, Buffer::kScratch, member, Buffer::kOutput,
                          {b.offset, 0, b.elements}, false, std::max(0, last_step - 1));
      }
    }
    std::string text;
    for (size_t r = 0; r < plan_.orders.size(); ++r) {
      std::string axes;
      for (size_t a : plan_.orders[r]) {
        axes += (axes.empty() ? "" : ", ") + AxisLabel(plan_.boxes[r]->axes[a], plan_.Twisted(r));
      }
      text += (text.empty() ? "" : " | ") + (axes.empty() ? "a single partition" : axes);
    }
    return text;
  }

 private:
  // Part k's share of n elements (rotation k / 2's share, halved between its ring directions),
  // rounded down at the boundaries; an all-reduce's boundaries to whole slots (multiples of the
  // group size), so that when n is one too all the slots of a part have one size and every chip
  // of a torus moves the same bytes (what the symmetric timing needs: symmetric_timing.h), as
  // when a runtime pads each part to whole slots. (One rule for every n keeps the time
  // monotone in n.)
  BlockRange PartOf(int64_t n, int64_t k) const {
    const auto share = [&](int64_t q) { return shares_[static_cast<size_t>(q / 2)] / 2; };
    double before = 0;
    for (int64_t q = 0; q < k; ++q) before += share(q);
    const bool last = k + 1 == 2 * static_cast<int64_t>(shares_.size());
    const int64_t unit = kind_ == CollectiveKind::kAllReduce ? g_ : 1;
    const int64_t units = n / unit;
    const auto at = [&](double fraction) {
      return unit * std::min(units, static_cast<int64_t>(static_cast<double>(units) * fraction));
    };
    const int64_t begin = k == 0 ? 0 : at(before);
    const int64_t end = last ? n : at(before + share(k));
    return {begin, std::max<int64_t>(0, end - begin)};
  }

  // Slot ranges of part r (see Build), and (for r == 0) the initial local copies.
  void SetUpSlots(int64_t r) {
    const size_t k = order_.size();
    slots_.resize(static_cast<size_t>(g_));
    for (int64_t i = 0; i < g_; ++i) {
      const int64_t member = group_[static_cast<size_t>(i)];
      switch (kind_) {
        case CollectiveKind::kAllReduce: {
          int64_t virtual_index = 0;  // mixed radix over the phase order, P[0] most significant
          for (size_t t = 0; t < k; ++t) {
            const size_t a = order_[t];
            virtual_index =
                virtual_index * box_->axes[a].size + box_->coords[static_cast<size_t>(i)][a];
          }
          const BlockRange part = PartOf(n_, r);
          const BlockRange b = BlockOf(part.elements, g_, virtual_index);
          slots_[static_cast<size_t>(i)] = {part.offset + b.offset, b.elements};
          if (r == 0 && Near(member)) {
            builder_.AddRanges(member, Buffer::kInput, member, Buffer::kOutput, {{0, n_}}, false,
                               0);
          }
          break;
        }
        case CollectiveKind::kAllGather: {
          const BlockRange part = PartOf(n_, r);
          slots_[static_cast<size_t>(i)] = {i * n_ + part.offset, part.elements};
          if (r == 0 && Near(member)) {
            builder_.AddPiece(member, Buffer::kInput, member, Buffer::kOutput, {0, i * n_, n_},
                              false, 0);
          }
          break;
        }
        case CollectiveKind::kReduceScatter: {
          const BlockRange b = BlockOf(n_, g_, i);
          const BlockRange part = PartOf(b.elements, r);
          slots_[static_cast<size_t>(i)] = {b.offset + part.offset, part.elements};
          if (r == 0) schedule_.scratch_elements[static_cast<size_t>(member)] = n_;
          if (r == 0 && Near(member)) {
            builder_.AddRanges(member, Buffer::kInput, member, Buffer::kScratch, {{0, n_}}, false,
                               0);
          }
          break;
        }
        default: break;
      }
    }
  }

  // Whether to build what `partition` sends or receives (BuildContext::near_chips).
  bool Near(int64_t partition) const {
    const std::vector<char>* near = context_.near_chips;
    return near == nullptr ||
           (*near)[static_cast<size_t>(context_.topology.ChipOfCore(partition))] != 0;
  }

  // Ranges of the slots whose owners have `fixed` coordinates on axes order_[0..t] (the other
  // entries of `fixed` are ignored), sorted by offset and merged.
  Ranges PieceOf(const std::vector<int64_t>& fixed, size_t t) const {
    std::vector<size_t> free_axes(order_.begin() + static_cast<std::ptrdiff_t>(t) + 1,
                                  order_.end());
    std::vector<int64_t> c = fixed;
    for (size_t a : free_axes) c[a] = 0;
    std::vector<Range> found;
    while (true) {
      found.push_back(slots_[static_cast<size_t>(box_->MemberAt(c))]);
      size_t f = 0;
      for (; f < free_axes.size(); ++f) {
        if (++c[free_axes[f]] < box_->axes[free_axes[f]].size) break;
        c[free_axes[f]] = 0;
      }
      if (f == free_axes.size()) break;
    }
    std::sort(found.begin(), found.end(),
              [](const Range& a, const Range& b) { return a.offset < b.offset; });
    Ranges piece;
    for (const Range& r : found) AppendRange(piece, r.offset, r.elements);
    return piece;
  }

  // One phase along axis order_[t] for every line; returns the next free step label.
  int Phase(size_t t, Buffer buffer, int step0, bool reduce) {
    const size_t axis = order_[t];
    const int64_t size = box_->axes[axis].size;
    // A line's pieces depend only on its coordinates on order_[0..t-1]: computed once per prefix.
    std::map<int64_t, std::vector<Ranges>> pieces_of_prefix;
    for (int64_t i = 0; i < g_; ++i) {
      const std::vector<int64_t>& rep = box_->coords[static_cast<size_t>(i)];
      if (rep[axis] != 0) continue;  // one representative per line
      int64_t prefix = 0;
      for (size_t u = 0; u < t; ++u) prefix = prefix * box_->axes[order_[u]].size + rep[order_[u]];
      auto [it, fresh] = pieces_of_prefix.try_emplace(prefix);
      std::vector<int64_t> c = rep;
      if (fresh) {
        for (int64_t q = 0; q < size; ++q) {
          c[axis] = q;
          it->second.push_back(PieceOf(c, t));
        }
      }
      std::vector<int64_t> ring(static_cast<size_t>(size));
      bool near = false;
      for (int64_t q = 0; q < size; ++q) {
        c[axis] = q;
        ring[static_cast<size_t>(q)] = group_[static_cast<size_t>(box_->MemberAt(c))];
        near = near || Near(ring[static_cast<size_t>(q)]);
      }
      if (!near) continue;
      // The part's ring direction: the reverse ring has position q at size - 1 - q.
      std::vector<Ranges> reversed;
      if (reverse_) {
        std::reverse(ring.begin(), ring.end());
        reversed.assign(it->second.rbegin(), it->second.rend());
      }
      const std::vector<Ranges>& pieces = reverse_ ? reversed : it->second;
      if (reduce) {
        RingReduceScatter(builder_, ring, pieces, buffer, step0, context_.options.chunks, false,
                          queues_, channel_);
      } else {
        RingAllGather(builder_, ring, pieces, buffer, step0, context_.options.chunks, false,
                      queues_, channel_);
      }
    }
    return step0 + static_cast<int>(size) - 1;
  }

  const BuildContext& context_;
  const std::vector<int64_t>& group_;
  const BoxGroup* box_;  // the current rotation's
  ScheduleBuilder& builder_;
  Schedule& schedule_;
  CollectiveKind kind_;
  int64_t n_;
  int64_t g_;
  TorusRotations plan_;                      // per rotation: its phase order and the box it runs on
  std::vector<double> shares_;               // per rotation: its share of the data
  std::vector<size_t> order_;  // the current rotation's axis indices in reduce-scatter phase order
  std::vector<Range> slots_;   // [group index]
  int channel_ = 0;            // the current part's send-queue channel
  bool reverse_ = false;       // the current part runs its rings in reverse order
  SendQueues queues_;
};

}  // namespace

void BuildTorus(const BuildContext& context, Schedule& schedule) {
  const std::vector<BoxGroup> boxes = RequireBoxGroups(
      context, "torus", ", e.g. a row or a sub-torus", "ring, ring-bidir or direct");
  if (context.spec.kind == CollectiveKind::kReduceScatter) {
    schedule.scratch_elements.assign(static_cast<size_t>(schedule.num_partitions), 0);
  }
  // Upper bound on the transfers: per member, rotation and axis, (s - 1) steps x 2 directions x
  // chunks, for each of the reduce-scatter and all-gather phases, plus two local copies.
  double estimate = 0;
  for (const BoxGroup& box : boxes) {
    int64_t steps = 0, rotations = 0;
    for (const GroupAxis& axis : box.axes) {
      steps += axis.size - 1;
      if (axis.dim >= 0) ++rotations;
    }
    rotations = std::max<int64_t>(1, rotations);
    estimate += static_cast<double>(box.size()) *
                (4.0 * static_cast<double>(steps * rotations) * context.options.chunks + 2);
  }
  if (context.near_chips == nullptr) {
    RequireScheduleMemory(context, "torus", estimate);
    schedule.transfers.reserve(static_cast<size_t>(estimate));
  }
  ScheduleBuilder builder(schedule, /*track=*/context.derive_dependencies);
  std::string phases;
  for (size_t g = 0; g < context.groups.size(); ++g) {
    TorusGroupBuilder group_builder(context, context.groups[g], boxes[g], builder, schedule);
    const std::string axes = group_builder.Build();
    if (phases.size() < 2000) phases += "\n  group " + ShortList(context.groups[g]) + ": " + axes;
  }
  builder.Finish();
  const char* what =
      context.spec.kind == CollectiveKind::kAllReduce
          ? "reduce-scatter along each axis in turn, then all-gather in reverse order"
      : context.spec.kind == CollectiveKind::kReduceScatter
          ? "reduce-scatter along each axis in turn"
          : "all-gather along each axis in turn";
  schedule.description =
      std::string("dimension-wise torus: ") + what +
      "; a ring per line, the data cut into one part per chip axis, each "
      "with the axes rotated (all axes busy at once) and halved between the "
      "ring directions, " +
      std::to_string(context.options.chunks) +
      " sub-chunk(s) per piece; reduce-scatter phase orders (one per part):" + phases;
}

}  // namespace podsim::sim::internal
