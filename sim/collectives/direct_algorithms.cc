// Direct algorithms: every member sends straight to every other member at once, routed by the
// topology (one network message per pair).
//  - all-gather: member i sends its input to slot i of every other member's output (1 step);
//  - reduce-scatter: member i sends block j of its input to member j, which adds it to its own
//    block (1 step; the G-1 reductions into one block commute, so they run concurrently);
//  - all-reduce: that reduce-scatter, then member j sends its summed block j to every other
//    member (2 steps; a zero-byte join on j waits for the G-1 reductions);
//  - all-to-all: member i sends block j to member j (1 step);
//  - collective-permute: each source sends its input to its target (1 step).
// Dependencies are explicit (no range tracking): all-to-all on 2048 partitions is 4 million
// transfers.

#include <string>

#include "sim/collectives/algorithms_internal.h"

namespace podsim::sim::internal {

void BuildDirect(const BuildContext& context, Schedule& schedule) {
  const int64_t n = context.spec.elements;
  const CollectiveKind kind = context.spec.kind;
  ScheduleBuilder builder(schedule, /*track=*/false);
  if (kind == CollectiveKind::kCollectivePermute) {
    for (const auto& [src, dst] : context.spec.source_target_pairs) {
      builder.AddPiece(src, Buffer::kInput, dst, Buffer::kOutput, {0, 0, n}, false, 0);
    }
    builder.Finish();
    schedule.description =
        "direct: each source sends its input to its target; partitions that "
        "receive nothing output zeros";
    return;
  }
  double total = 0;
  for (const auto& group : context.groups) {
    total += static_cast<double>(group.size()) * static_cast<double>(group.size());
  }
  total *= kind == CollectiveKind::kAllReduce ? 2 : 1;
  RequireScheduleMemory(context, "direct", total);
  schedule.transfers.reserve(static_cast<size_t>(total));
  for (const std::vector<int64_t>& group : context.groups) {
    const int64_t g = static_cast<int64_t>(group.size());
    switch (kind) {
      case CollectiveKind::kAllGather:
        for (int64_t i = 0; i < g; ++i) {
          for (int64_t j = 0; j < g; ++j) {
            builder.AddPiece(group[static_cast<size_t>(i)], Buffer::kInput,
                             group[static_cast<size_t>(j)], Buffer::kOutput, {0, i * n, n}, false,
                             0);
          }
        }
        break;
      case CollectiveKind::kAllToAll:
        for (int64_t i = 0; i < g; ++i) {
          for (int64_t j = 0; j < g; ++j) {
            const BlockRange b = BlockOf(n, g, j);
            builder.AddPiece(group[static_cast<size_t>(i)], Buffer::kInput,
                             group[static_cast<size_t>(j)], Buffer::kOutput,
                             {b.offset, i * b.elements, b.elements}, false, 0);
          }
        }
        break;
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce: {
        const bool all_reduce = kind == CollectiveKind::kAllReduce;
        // Member j's own contribution first: its block (reduce-scatter) or whole input.
        std::vector<int64_t> own(static_cast<size_t>(g));
        for (int64_t j = 0; j < g; ++j) {
          const BlockRange b = BlockOf(n, g, j);
          const int64_t m = group[static_cast<size_t>(j)];
          own[static_cast<size_t>(j)] =
              all_reduce
                  ? builder.AddPiece(m, Buffer::kInput, m, Buffer::kOutput, {0, 0, n}, false, 0)
                  : builder.AddPiece(m, Buffer::kInput, m, Buffer::kOutput,
                                     {b.offset, 0, b.elements}, false, 0);
        }
        std::vector<std::vector<int64_t>> into(static_cast<size_t>(g));  // reductions into j
        for (int64_t i = 0; i < g; ++i) {
          for (int64_t j = 0; j < g; ++j) {
            if (i == j) continue;
            const BlockRange b = BlockOf(n, g, j);
            const int64_t wait = own[static_cast<size_t>(j)];
            const int64_t t = builder.AddPiece(
                group[static_cast<size_t>(i)], Buffer::kInput, group[static_cast<size_t>(j)],
                Buffer::kOutput, {b.offset, all_reduce ? b.offset : 0, b.elements}, true, 0,
                wait >= 0 ? std::vector<int64_t>{wait} : std::vector<int64_t>{});
            if (t >= 0) into[static_cast<size_t>(j)].push_back(t);
          }
        }
        if (!all_reduce) break;
        for (int64_t j = 0; j < g; ++j) {
          const int64_t m = group[static_cast<size_t>(j)];
          const int64_t join = builder.AddJoin(m, into[static_cast<size_t>(j)], 1);
          const BlockRange b = BlockOf(n, g, j);
          for (int64_t i = 0; i < g; ++i) {
            if (i == j) continue;
            // After the join (block j complete) and after member i's own full copy (which writes
            // block j of i's output too).
            std::vector<int64_t> deps;
            if (join >= 0) deps.push_back(join);
            if (own[static_cast<size_t>(i)] >= 0) deps.push_back(own[static_cast<size_t>(i)]);
            builder.AddPiece(m, Buffer::kOutput, group[static_cast<size_t>(i)], Buffer::kOutput,
                             {b.offset, b.offset, b.elements}, false, 1, deps);
          }
        }
        break;
      }
      default: break;
    }
  }
  builder.Finish();
  schedule.description =
      kind == CollectiveKind::kAllReduce
          ? "direct: every member sends block j to member j, which sums it (step 0), then sends "
            "its summed block to every member (step 1)"
          : "direct: every member sends to every other member at once (one message per pair)";
}

}  // namespace podsim::sim::internal
