// Ring algorithms (unidirectional and bidirectional) for all-reduce, all-gather and
// reduce-scatter, and the ring phase primitives the torus algorithms reuse.
//
// Ring reduce-scatter over G members, pieces 0..G-1 (position q ends owning piece q): at step s
// (0 .. G-2) position p sends its partial sum of piece (p - s - 1) mod G to p + 1, which adds it
// to its own. After G-1 steps position q holds piece q summed over the ring.
// Ring all-gather: at step s position p forwards piece (p - s) mod G to p + 1.
// All-reduce = reduce-scatter + all-gather: 2(G-1) steps, each member sends 2(G-1)/G of the data.
//
// Dependencies. Inside the torus algorithms the builder derives them from buffer ranges. The
// ring algorithms state them (a ring over 2048 partitions is 16.8 million transfers; range
// tracking would hold millions of ranges): sub-chunk j sent by position p at step s >= 1 waits
// for the sub-chunk j that p received at step s - 1 (the one it forwards); at step 0 for what
// last wrote it (the initial copy, or for the all-reduce's all-gather the reduce-scatter's last
// reduction into p). A reduction into p + 1 also waits for p + 1's initial copy. Nothing else
// can conflict: position p + 1 sends a piece only after it has received it.

#include <functional>
#include <string>

#include "sim/collectives/algorithms_internal.h"
#include "sim/collectives/group_geometry.h"

namespace podsim::sim::internal {
namespace {

// Transfer ids of one ring step: [position][sub-chunk], -1 where the sub-chunk is empty.
using StepIds = std::vector<std::vector<int64_t>>;

// Explicit dependencies of one ring direction (null: the builder tracks them).
struct RingDeps {
  // Appends the deps of position p's step-0 send of sub-chunk j.
  std::function<void(int64_t p, int64_t j, std::vector<int64_t>& deps)> first;
  // Reduce-scatter: the initial copy of each partition's buffer (by partition id; -1: none).
  const std::vector<int64_t>* initialised = nullptr;
};

// One direction of a ring phase: `ring` in sending order, sub[q][j] = sub-chunk j of the piece
// of position q. Returns the ids of the last step.
StepIds RingOneWay(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                   const std::vector<std::vector<Ranges>>& sub, Buffer buffer, int step0,
                   bool reduce, const RingDeps* explicit_deps, SendQueues& queues, int channel) {
  const int64_t g = static_cast<int64_t>(ring.size());
  StepIds previous, current(static_cast<size_t>(g));
  std::vector<int64_t> deps;
  // Each position's queue to the next (see SendQueues).
  std::vector<int64_t*> tail(static_cast<size_t>(g));
  for (int64_t p = 0; p < g; ++p) {
    tail[static_cast<size_t>(p)] =
        &queues.Tail(channel, ring[static_cast<size_t>(p)], ring[static_cast<size_t>((p + 1) % g)]);
  }
  for (int64_t s = 0; s + 1 < g; ++s) {
    for (int64_t p = 0; p < g; ++p) {
      const int64_t piece = ((p - s - (reduce ? 1 : 0)) % g + g) % g;
      const int64_t next = (p + 1) % g;
      const std::vector<Ranges>& parts = sub[static_cast<size_t>(piece)];
      std::vector<int64_t>& ids = current[static_cast<size_t>(p)];
      ids.assign(parts.size(), -1);
      for (size_t j = 0; j < parts.size(); ++j) {
        deps.clear();
        if (explicit_deps != nullptr) {
          if (s == 0) {
            explicit_deps->first(p, static_cast<int64_t>(j), deps);
          } else {
            deps.push_back(previous[static_cast<size_t>((p + g - 1) % g)][j]);
          }
          if (reduce && explicit_deps->initialised != nullptr) {
            deps.push_back((
                *explicit_deps->initialised)[static_cast<size_t>(ring[static_cast<size_t>(next)])]);
          }
          std::erase(deps, -1);
        }
        ids[j] =
            builder.AddRanges(ring[static_cast<size_t>(p)], buffer, ring[static_cast<size_t>(next)],
                              buffer, parts[j], reduce, step0 + static_cast<int>(s), deps);
        if (ids[j] >= 0) {
          int64_t& last = *tail[static_cast<size_t>(p)];
          builder.QueueAfter(ids[j], last);
          last = ids[j];
        }
      }
    }
    std::swap(previous, current);
    current.resize(static_cast<size_t>(g));
  }
  return previous;
}

// A ring phase in one or both directions: the ring and each position's sub-chunks per direction.
struct Direction {
  std::vector<int64_t> ring;
  std::vector<std::vector<Ranges>> sub;  // [position][sub-chunk]
};

std::vector<Direction> Directions(const std::vector<int64_t>& ring,
                                  const std::vector<Ranges>& pieces, int chunks,
                                  bool bidirectional) {
  const size_t g = ring.size();
  std::vector<Direction> dirs(bidirectional ? 2 : 1);
  dirs[0].ring = ring;
  dirs[0].sub.resize(g);
  if (bidirectional) {
    dirs[1].ring.assign(ring.rbegin(), ring.rend());
    dirs[1].sub.resize(g);
  }
  for (size_t q = 0; q < g; ++q) {
    if (!bidirectional) {
      dirs[0].sub[q] = SplitRanges(pieces[q], chunks);
      continue;
    }
    const std::vector<Ranges> halves = SplitRanges(pieces[q], 2);
    dirs[0].sub[q] = SplitRanges(halves[0], chunks);
    dirs[1].sub[g - 1 - q] = SplitRanges(halves[1], chunks);  // position q is g-1-q reversed
  }
  return dirs;
}

void RingPhase(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
               const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
               bool bidirectional, bool reduce, SendQueues& queues, int channel) {
  if (ring.size() < 2) return;
  int c = channel;
  for (const Direction& d : Directions(ring, pieces, chunks, bidirectional)) {
    RingOneWay(builder, d.ring, d.sub, buffer, step0, reduce, nullptr, queues, c++);
  }
}

}  // namespace

void RingReduceScatter(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                       const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
                       bool bidirectional, SendQueues& queues, int channel) {
  RingPhase(builder, ring, pieces, buffer, step0, chunks, bidirectional, /*reduce=*/true, queues,
            channel);
}

void RingAllGather(ScheduleBuilder& builder, const std::vector<int64_t>& ring,
                   const std::vector<Ranges>& pieces, Buffer buffer, int step0, int chunks,
                   bool bidirectional, SendQueues& queues, int channel) {
  RingPhase(builder, ring, pieces, buffer, step0, chunks, bidirectional, /*reduce=*/false, queues,
            channel);
}

int64_t& SendQueues::Tail(int channel, int64_t src, int64_t dst) {
  return tail_.try_emplace(Key{channel, src, dst}, -1).first->second;
}

void BuildRing(const BuildContext& context, bool bidirectional, Schedule& schedule) {
  const int64_t n = context.spec.elements;
  const int chunks = context.options.chunks;
  const CollectiveKind kind = context.spec.kind;
  double estimate = 0;  // per member: 2(G-1) steps x 2 directions x chunks, plus two local copies
  for (const auto& group : context.groups) {
    const double g = static_cast<double>(group.size());
    estimate += g * (4 * (g - 1) * chunks + 2);
  }
  RequireScheduleMemory(context, bidirectional ? "ring-bidir" : "ring", estimate);
  schedule.transfers.reserve(static_cast<size_t>(estimate));
  ScheduleBuilder builder(schedule, /*track=*/false);
  if (kind == CollectiveKind::kReduceScatter) {
    schedule.scratch_elements.assign(static_cast<size_t>(schedule.num_partitions), 0);
  }
  std::string rings;
  std::vector<int64_t> index_of(static_cast<size_t>(schedule.num_partitions), -1);
  std::vector<int64_t> initialised(static_cast<size_t>(schedule.num_partitions), -1);
  for (const std::vector<int64_t>& group : context.groups) {
    const int64_t g = static_cast<int64_t>(group.size());
    for (int64_t i = 0; i < g; ++i)
      index_of[static_cast<size_t>(group[static_cast<size_t>(i)])] = i;
    const RingOrder ring = ChooseRingOrder(context.topology, group);
    if (rings.size() < 2000) rings += "\n  ring " + ShortList(ring.members) + ": " + ring.how;
    // Pieces by ring position, and each member's initial local copy.
    std::vector<Ranges> pieces(static_cast<size_t>(g));
    for (int64_t q = 0; q < g; ++q) {
      const int64_t member = ring.members[static_cast<size_t>(q)];
      const int64_t gi = index_of[static_cast<size_t>(member)];
      int64_t& init = initialised[static_cast<size_t>(member)];
      switch (kind) {
        case CollectiveKind::kAllReduce: {
          const BlockRange b = BlockOf(n, g, q);  // any assignment works: ring position order
          AppendRange(pieces[static_cast<size_t>(q)], b.offset, b.elements);
          init = builder.AddPiece(member, Buffer::kInput, member, Buffer::kOutput, {0, 0, n}, false,
                                  0);
          break;
        }
        case CollectiveKind::kAllGather:
          AppendRange(pieces[static_cast<size_t>(q)], gi * n, n);
          init = builder.AddPiece(member, Buffer::kInput, member, Buffer::kOutput, {0, gi * n, n},
                                  false, 0);
          break;
        case CollectiveKind::kReduceScatter: {
          const BlockRange b = BlockOf(n, g, gi);
          AppendRange(pieces[static_cast<size_t>(q)], b.offset, b.elements);
          schedule.scratch_elements[static_cast<size_t>(member)] = n;
          init = builder.AddPiece(member, Buffer::kInput, member, Buffer::kScratch, {0, 0, n},
                                  false, 0);
          break;
        }
        default: break;
      }
    }
    // Deps of the final copies of reduce-scatter: the last reductions into each member.
    std::vector<std::vector<int64_t>> final_deps(static_cast<size_t>(g));
    SendQueues queues;
    int channel = 0;
    for (const Direction& d : Directions(ring.members, pieces, chunks, bidirectional)) {
      ++channel;
      if (g < 2) break;
      RingDeps from_init;
      from_init.first = [&](int64_t p, int64_t, std::vector<int64_t>& deps) {
        deps.push_back(initialised[static_cast<size_t>(d.ring[static_cast<size_t>(p)])]);
      };
      if (kind == CollectiveKind::kAllGather) {
        RingOneWay(builder, d.ring, d.sub, Buffer::kOutput, 0, false, &from_init, queues, channel);
        continue;
      }
      from_init.initialised = &initialised;
      const Buffer buffer = kind == CollectiveKind::kAllReduce ? Buffer::kOutput : Buffer::kScratch;
      const StepIds last =
          RingOneWay(builder, d.ring, d.sub, buffer, 0, true, &from_init, queues, channel);
      if (kind == CollectiveKind::kAllReduce) {
        // Position p starts the all-gather with its own piece p, last reduced by p - 1.
        RingDeps after_rs;
        after_rs.first = [&](int64_t p, int64_t j, std::vector<int64_t>& deps) {
          deps.push_back(last[static_cast<size_t>((p + g - 1) % g)][static_cast<size_t>(j)]);
        };
        RingOneWay(builder, d.ring, d.sub, Buffer::kOutput, static_cast<int>(g) - 1, false,
                   &after_rs, queues, channel);
      } else {
        for (int64_t p = 0; p < g; ++p) {
          const int64_t member = d.ring[static_cast<size_t>(p)];
          for (int64_t id : last[static_cast<size_t>((p + g - 1) % g)]) {
            if (id >= 0)
              final_deps[static_cast<size_t>(index_of[static_cast<size_t>(member)])].push_back(id);
          }
        }
      }
    }
    if (kind == CollectiveKind::kReduceScatter) {
      for (int64_t i = 0; i < g; ++i) {
        const int64_t member = group[static_cast<size_t>(i)];
        std::vector<int64_t>& deps = final_deps[static_cast<size_t>(i)];
        if (initialised[static_cast<size_t>(member)] >= 0)
          deps.push_back(initialised[static_cast<size_t>(member)]);
        const BlockRange b = BlockOf(n, g, i);
        builder.AddPiece(member, Buffer::kScratch, member, Buffer::kOutput,
                         {b.offset, 0, b.elements}, false, g < 2 ? 0 : static_cast<int>(g) - 2,
                         deps);
      }
    }
  }
  builder.Finish();
  schedule.description =
      std::string(bidirectional ? "bidirectional ring (each piece halved, one half each way)"
                                : "unidirectional ring") +
      (kind == CollectiveKind::kAllReduce ? ": reduce-scatter then all-gather, 2(G-1) steps"
                                          : ": G-1 steps") +
      ", " + std::to_string(chunks) + " sub-chunk(s) per piece" + rings;
}

}  // namespace podsim::sim::internal
