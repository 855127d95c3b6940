// Recursive halving-doubling (Rabenseifner; Thakur, Rabenseifner and Gropp 2005) for groups of
// a power-of-two size g = 2^m, on any topology. The data is cut into g blocks (BlockOf; for
// all-gather, the members' inputs). Member i pairs, in each step, with the member whose group
// index differs from i in one bit d:
//  - reduce-scatter by recursive halving, d = 1, 2, ..., g/2: of the blocks it still holds, i
//    keeps those whose bit d equals its own and sends the others to its partner, which adds them
//    to its copy. The data halves every step; after m steps member i holds block i, summed.
//  - all-gather by recursive doubling, d = g/2, ..., 2, 1: i sends every block it holds to its
//    partner; the data doubles every step.
//  - all-reduce: the two in turn (2m steps), in the output buffer.
// m steps instead of the ring's g - 1; on a hypercube every exchange is one hop. The data is cut
// into m parts, each with the bit order rotated by its index (part r starts with bit r), so that
// in every step the parts exchange along all m bits at once: on a hypercube every link of a chip
// is busy, as in the torus algorithm's rotations. Blocks a member holds are strided after the
// first step: each exchange is one message of several pieces. Sub-chunks (--chunks) do not
// apply: every step is one message per pair and part.

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/collectives/algorithms_internal.h"

namespace podsim::sim::internal {
namespace {

bool PowerOfTwo(int64_t g) { return g >= 1 && (g & (g - 1)) == 0; }

}  // namespace

void BuildHalvingDoubling(const BuildContext& context, Schedule& schedule) {
  const CollectiveKind kind = context.spec.kind;
  const int64_t n = context.spec.elements;
  double estimate = 0;
  double segments = 0;
  for (size_t k = 0; k < context.groups.size(); ++k) {
    const int64_t g = static_cast<int64_t>(context.groups[k].size());
    if (!PowerOfTwo(g)) {
      throw Error("replica_groups[" + std::to_string(k) + "]: algorithm 'halving-doubling' needs " +
                  "a group of a power-of-two size, got " + std::to_string(g) +
                  " members (use ring, ring-bidir or direct)");
    }
    int64_t m = 0;
    while ((int64_t{1} << m) < g) ++m;
    const double parts = static_cast<double>(std::max<int64_t>(1, m));
    estimate += static_cast<double>(g) * parts * static_cast<double>(2 * m + 2);
    // The blocks a member sends are strided: one piece each. Over the reduce-scatter's steps it
    // sends g/2 + g/4 + ... + 1 = g - 1 blocks of each part, the all-gather's as many.
    const double phases = kind == CollectiveKind::kAllReduce ? 2 : 1;
    segments += static_cast<double>(g) * parts * static_cast<double>(g - 1) * phases;
  }
  RequireScheduleMemory(context, "halving-doubling", estimate, segments);

  const bool scatter = kind == CollectiveKind::kReduceScatter;
  // Reduce-scatter works in a scratch copy of the input: its output holds one block only.
  const Buffer work = scatter ? Buffer::kScratch : Buffer::kOutput;
  if (scatter) schedule.scratch_elements.assign(static_cast<size_t>(schedule.num_partitions), 0);
  ScheduleBuilder builder(schedule, /*track=*/context.derive_dependencies);
  for (const std::vector<int64_t>& group : context.groups) {
    const int64_t g = static_cast<int64_t>(group.size());
    int64_t m = 0;
    while ((int64_t{1} << m) < g) ++m;
    auto member = [&](int64_t i) { return group[static_cast<size_t>(i)]; };
    // Block b: member b's output block (all-reduce, reduce-scatter) or input (all-gather).
    auto block = [&](int64_t b) {
      if (kind == CollectiveKind::kAllGather) return Range{b * n, n};
      const BlockRange r = BlockOf(n, g, b);
      return Range{r.offset, r.elements};
    };
    for (int64_t i = 0; i < g; ++i) {
      const int64_t p = member(i);
      if (kind == CollectiveKind::kAllGather) {
        builder.AddPiece(p, Buffer::kInput, p, Buffer::kOutput, {0, i * n, n}, false, 0);
      } else {
        if (scatter) schedule.scratch_elements[static_cast<size_t>(p)] = n;
        builder.AddPiece(p, Buffer::kInput, p, work, {0, 0, n}, false, 0);
      }
    }
    // m parts, each 1/m of every block, each with the bit order rotated by its index: in every
    // step the parts exchange along m different bits at once (on a hypercube, all of a chip's
    // links), as the torus algorithm's rotations do.
    const int64_t parts = std::max<int64_t>(1, m);
    for (int64_t r = 0; r < parts; ++r) {
      auto piece = [&](int64_t b) {  // part r of block b
        const Range whole = block(b);
        const BlockRange sub = BlockOf(whole.elements, parts, r);
        return Range{whole.offset + sub.offset, sub.elements};
      };
      auto ranges_of = [&](const std::vector<int64_t>& blocks) {
        Ranges ranges;
        for (int64_t b : blocks) AppendRange(ranges, piece(b).offset, piece(b).elements);
        return ranges;
      };
      auto bit = [&](int64_t k) { return int64_t{1} << ((k + r) % m); };  // step k's distance
      std::vector<std::vector<int64_t>> held(static_cast<size_t>(g));
      for (int64_t i = 0; i < g; ++i) {
        if (kind == CollectiveKind::kAllGather) {
          held[static_cast<size_t>(i)] = {i};
        } else {
          for (int64_t b = 0; b < g; ++b) held[static_cast<size_t>(i)].push_back(b);
        }
      }
      int step = 0;
      if (kind != CollectiveKind::kAllGather) {
        for (int64_t k = 0; k < m; ++k, ++step) {
          const int64_t d = bit(k);
          std::vector<std::vector<int64_t>> keep(static_cast<size_t>(g));
          for (int64_t i = 0; i < g; ++i) {
            std::vector<int64_t> send;
            for (int64_t b : held[static_cast<size_t>(i)]) {
              ((b & d) == (i & d) ? keep[static_cast<size_t>(i)] : send).push_back(b);
            }
            builder.AddRanges(member(i), work, member(i ^ d), work, ranges_of(send),
                              /*reduce=*/true, step);
          }
          held = std::move(keep);
        }
        if (scatter) {
          for (int64_t i = 0; i < g; ++i) {
            const Range q = piece(i);
            builder.AddPiece(member(i), work, member(i), Buffer::kOutput,
                             {q.offset, q.offset - block(i).offset, q.elements}, false,
                             step > 0 ? step - 1 : 0);
          }
        }
      }
      if (kind != CollectiveKind::kReduceScatter) {
        for (int64_t k = m - 1; k >= 0; --k, ++step) {
          const int64_t d = bit(k);
          for (int64_t i = 0; i < g; ++i) {
            builder.AddRanges(member(i), Buffer::kOutput, member(i ^ d), Buffer::kOutput,
                              ranges_of(held[static_cast<size_t>(i)]), /*reduce=*/false, step);
          }
          std::vector<std::vector<int64_t>> grown = held;
          for (int64_t i = 0; i < g; ++i) {
            auto& mine = grown[static_cast<size_t>(i)];
            const auto& other = held[static_cast<size_t>(i ^ d)];
            mine.insert(mine.end(), other.begin(), other.end());
            std::sort(mine.begin(), mine.end());
          }
          held = std::move(grown);
        }
      }
    }
  }
  builder.Finish();
  schedule.description =
      std::string("recursive halving-doubling: ") +
      (kind == CollectiveKind::kAllGather
           ? "all-gather by recursive doubling, partners at group-index distance g/2 .. 2, 1"
           : kind == CollectiveKind::kReduceScatter
                 ? "reduce-scatter by recursive halving, partners at group-index distance 1, 2 .. g/2"
                 : "reduce-scatter by recursive halving (distance 1, 2 .. g/2), then all-gather by "
                   "recursive doubling (g/2 .. 2, 1)") +
      "; log2(g) steps each, one message per pair and step";
}

}  // namespace podsim::sim::internal
