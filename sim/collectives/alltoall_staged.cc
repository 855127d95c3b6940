// Dimension-staged all-to-all over a box group: one stage per axis, chip dimensions in ascending
// order (dim 0 first, like the topology's dimension-order routing), the core axis last. In stage
// t every member sends, to each member of its line along axis P[t], one aggregated message with
// every block it holds whose destination has that member's coordinate on P[t]; so each message
// travels between neighbours of one axis, and each block crosses each axis at most once.
//
// Invariant after stage t: member h holds the blocks (src -> dst) with dst equal to h on
// P[0..t] and src equal to h on P[t+1..]: G blocks. Intermediate stages keep them in scratch
// (two areas used alternately, each G slots of ceil(n / G) elements) in the slot order
// (dst on P[t+1], ..., dst on P[k-1], src on P[t], ..., src on P[0]), most significant first,
// so each outgoing message is contiguous at the sender; at the receiver it lands as a few runs
// (one gather/scatter transfer with segments). Stage t of member h waits for everything h
// received in stage t-1 and, before overwriting a scratch area of its receiver, for everything
// the receiver sent from that area: two zero-byte joins per member per stage keep this O(G).

#include <string>

#include "base/error.h"
#include "sim/collectives/algorithms_internal.h"
#include "sim/collectives/group_geometry.h"

namespace podsim::sim::internal {
namespace {

class StagedGroupBuilder {
 public:
  StagedGroupBuilder(const std::vector<int64_t>& group, const BoxGroup& box, int64_t n,
                     ScheduleBuilder& builder, Schedule& schedule)
      : group_(group),
        box_(box),
        n_(n),
        g_(static_cast<int64_t>(group.size())),
        builder_(builder),
        schedule_(schedule) {
    for (size_t a = 0; a < box.axes.size(); ++a) {
      if (box.axes[a].dim >= 0) order_.push_back(a);
    }
    if (!box.axes.empty() && box.axes[0].dim < 0) order_.push_back(0);
    k_ = order_.size();
    for (size_t t = 0; t < k_; ++t) size_.push_back(box.axes[order_[t]].size);
    slot_ = (n + g_ - 1) / g_;
    area_ = g_ * slot_;
    // Group index of each stage-order linear index (digit 0 fastest).
    gi_of_.resize(static_cast<size_t>(g_));
    for (int64_t i = 0; i < g_; ++i) gi_of_[static_cast<size_t>(Linear(StageCoords(i)))] = i;
  }

  std::string Build() {
    if (k_ == 0) {  // a single member: its one block stays
      builder_.AddPiece(group_[0], Buffer::kInput, group_[0], Buffer::kOutput, {0, 0, n_}, false,
                        0);
      return "a single partition";
    }
    for (int64_t member : group_)
      schedule_.scratch_elements[static_cast<size_t>(member)] = 2 * area_;
    std::vector<std::vector<int64_t>> into_prev, from_prev;  // per member: stage t-1 transfers
    for (size_t t = 0; t < k_; ++t) {
      std::vector<int64_t> join_in(static_cast<size_t>(g_), -1),
          join_out(static_cast<size_t>(g_), -1);
      if (t > 0) {
        for (int64_t h = 0; h < g_; ++h) {
          join_in[static_cast<size_t>(h)] =
              builder_.AddJoin(group_[static_cast<size_t>(h)], into_prev[static_cast<size_t>(h)],
                               static_cast<int>(t));
          if (t >= 2) {
            join_out[static_cast<size_t>(h)] =
                builder_.AddJoin(group_[static_cast<size_t>(h)], from_prev[static_cast<size_t>(h)],
                                 static_cast<int>(t));
          }
        }
      }
      std::vector<std::vector<int64_t>> into(static_cast<size_t>(g_)),
          from(static_cast<size_t>(g_));
      for (int64_t h = 0; h < g_; ++h) {
        const std::vector<int64_t> hc = StageCoords(h);
        for (int64_t c = 0; c < size_[t]; ++c) {
          std::vector<int64_t> rc = hc;
          rc[t] = c;
          const int64_t r = gi_of_[static_cast<size_t>(Linear(rc))];
          std::vector<int64_t> deps;
          if (join_in[static_cast<size_t>(h)] >= 0) deps.push_back(join_in[static_cast<size_t>(h)]);
          if (join_out[static_cast<size_t>(r)] >= 0)
            deps.push_back(join_out[static_cast<size_t>(r)]);
          const int64_t id = builder_.Add(
              group_[static_cast<size_t>(h)], t == 0 ? Buffer::kInput : Buffer::kScratch,
              group_[static_cast<size_t>(r)], t + 1 == k_ ? Buffer::kOutput : Buffer::kScratch,
              Message(hc, t, c), false, static_cast<int>(t), deps);
          if (id >= 0) {
            into[static_cast<size_t>(r)].push_back(id);
            from[static_cast<size_t>(h)].push_back(id);
          }
        }
      }
      into_prev = std::move(into);
      from_prev = std::move(from);
    }
    std::string stages;
    for (size_t a : order_) {
      const GroupAxis& axis = box_.axes[a];
      stages += (stages.empty() ? "" : ", ") +
                (axis.dim < 0 ? std::string("cores") : "dim" + std::to_string(axis.dim)) + "(" +
                std::to_string(axis.size) + ")";
    }
    return stages;
  }

 private:
  // Box coordinates of group member i, in stage order.
  std::vector<int64_t> StageCoords(int64_t i) const {
    std::vector<int64_t> c(k_);
    for (size_t t = 0; t < k_; ++t) c[t] = box_.coords[static_cast<size_t>(i)][order_[t]];
    return c;
  }
  int64_t Linear(const std::vector<int64_t>& c) const {
    int64_t index = 0;
    for (size_t t = k_; t-- > 0;) index = index * size_[t] + c[t];
    return index;
  }
  // Slot of block (src -> dst) in a member's scratch after stage t (key in the file comment).
  int64_t Slot(const std::vector<int64_t>& src, const std::vector<int64_t>& dst, size_t t) const {
    int64_t index = 0;
    for (size_t u = t + 1; u < k_; ++u) index = index * size_[u] + dst[u];
    for (size_t u = t + 1; u-- > 0;) index = index * size_[u] + src[u];
    return index;
  }
  int64_t AreaBase(size_t t) const { return (t % 2) * area_; }

  // The pieces of the stage-t message from the member at stage coordinates hc to the member
  // with coordinate c on axis t, in the sender's slot order.
  std::vector<Segment> Message(const std::vector<int64_t>& hc, size_t t, int64_t c) const {
    std::vector<int64_t> src = hc, dst = hc;
    dst[t] = c;
    // Free digits, fastest first: src[0..t-1], then dst[k-1] down to dst[t+1].
    std::vector<std::pair<bool, size_t>> free;  // (is_dst, stage axis)
    for (size_t u = 0; u < t; ++u) free.push_back({false, u});
    for (size_t u = k_; u-- > t + 1;) free.push_back({true, u});
    for (const auto& [is_dst, u] : free) (is_dst ? dst : src)[u] = 0;
    std::vector<Segment> pieces;
    while (true) {
      const int64_t dst_gi = gi_of_[static_cast<size_t>(Linear(dst))];
      const BlockRange block = BlockOf(n_, g_, dst_gi);
      Segment s;
      s.elements = block.elements;
      s.src_offset = t == 0 ? block.offset : AreaBase(t - 1) + Slot(src, dst, t - 1) * slot_;
      s.dst_offset = t + 1 == k_ ? gi_of_[static_cast<size_t>(Linear(src))] * block.elements
                                 : AreaBase(t) + Slot(src, dst, t) * slot_;
      pieces.push_back(s);
      size_t f = 0;
      for (; f < free.size(); ++f) {
        auto& digit = (free[f].first ? dst : src)[free[f].second];
        if (++digit < size_[free[f].second]) break;
        digit = 0;
      }
      if (f == free.size()) break;
    }
    return pieces;
  }

  const std::vector<int64_t>& group_;
  const BoxGroup& box_;
  int64_t n_;
  int64_t g_;
  ScheduleBuilder& builder_;
  Schedule& schedule_;
  std::vector<size_t> order_;  // box axis of each stage
  size_t k_ = 0;
  std::vector<int64_t> size_;   // members along each stage's axis
  int64_t slot_ = 0;            // scratch slot, elements
  int64_t area_ = 0;            // scratch area, elements
  std::vector<int64_t> gi_of_;  // stage-order linear index -> group index
};

}  // namespace

void BuildAllToAllStaged(const BuildContext& context, Schedule& schedule) {
  const std::vector<BoxGroup> boxes = RequireBoxGroups(context, "dim-staged", "", "direct");
  // Per stage t, each of the G members sends size_t messages plus two joins; a message holds at
  // most one segment per block it carries, and a member carries G blocks per stage.
  double transfers = 0, segments = 0;
  for (const BoxGroup& box : boxes) {
    const double g = static_cast<double>(box.size());
    for (const GroupAxis& axis : box.axes) {
      transfers += g * (static_cast<double>(axis.size) + 2);
      segments += g * g;
    }
  }
  RequireScheduleMemory(context, "dim-staged", transfers, segments);
  schedule.scratch_elements.assign(static_cast<size_t>(schedule.num_partitions), 0);
  ScheduleBuilder builder(schedule, /*track=*/false);
  std::string stages;
  for (size_t g = 0; g < context.groups.size(); ++g) {
    StagedGroupBuilder group_builder(context.groups[g], boxes[g], context.spec.elements, builder,
                                     schedule);
    const std::string axes = group_builder.Build();
    if (stages.size() < 2000) stages += "\n  group " + ShortList(context.groups[g]) + ": " + axes;
  }
  builder.Finish();
  schedule.description =
      "dimension-staged all-to-all: one stage per axis; in each stage every member sends one "
      "aggregated message to each member of its line, with the blocks bound for that member's "
      "coordinate. Stages:" +
      stages;
}

}  // namespace podsim::sim::internal
