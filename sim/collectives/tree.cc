// Double binary tree all-reduce (as NCCL's trees; Sanders, Speck and Träff 2009), for groups of
// a power-of-two size g = 2^m, on any topology.
//
// Tree A over group indices: node x in 1 .. g-1 sits at level ctz(x); its parent is the one of
// x - 2^l, x + 2^l at level l + 1 (exactly one is), the root g/2 has the extra node 0 above it,
// and odd nodes are leaves. Tree B is tree A over the indices shifted by one (member i is node
// i + 1 mod g): A's leaves (odd members) are B's inner nodes and the other way round, so every
// member forwards data in one tree only and each of its links carries about half the load.
//
// Tree A reduces and broadcasts the first half of the data, tree B the second, both at once.
// Each half is cut into k chunks: chunk c goes up the tree (a child's partial sum reduced into
// its parent's copy), reaches the top node, and comes back down (the parent's result written
// over the child's), each chunk as soon as its own data is there; every tree edge sends its
// chunks in order, one after the other, so the chunks pipeline through the levels. That takes
// about (2m - 1 + k) chunk times of L + D / (2 k B) (L: a hop's latency, B: a link's bandwidth,
// D: the data), least at k = sqrt((2m - 1) D / (2 B L)), the depth used unless --chunks gives
// one (> 1). Few steps for small messages; for large ones each tree carries half the data.

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/collectives/algorithms_internal.h"

namespace podsim::sim::internal {
namespace {

// Tree A's parent of node x (1 <= x < g), or 0 for the root g/2.
int64_t ParentA(int64_t x, int64_t g) {
  if (x == g / 2) return 0;
  const int l = std::countr_zero(static_cast<uint64_t>(x));
  const int64_t up = x + (int64_t{1} << l);
  return up < g && std::countr_zero(static_cast<uint64_t>(up)) == l + 1 ? up
                                                                         : x - (int64_t{1} << l);
}

}  // namespace

void BuildTree(const BuildContext& context, Schedule& schedule) {
  if (context.spec.kind != CollectiveKind::kAllReduce) {
    throw Error("algorithm: 'tree' (double binary tree) is an all-reduce algorithm, not " +
                std::string(CollectiveKindName(context.spec.kind)));
  }
  const int64_t n = context.spec.elements;
  int m_max = 0;
  for (size_t k = 0; k < context.groups.size(); ++k) {
    const int64_t g = static_cast<int64_t>(context.groups[k].size());
    if (g < 1 || (g & (g - 1)) != 0) {
      throw Error("replica_groups[" + std::to_string(k) + "]: algorithm 'tree' needs a group of " +
                  "a power-of-two size, got " + std::to_string(g) +
                  " members (use ring, ring-bidir or direct)");
    }
    m_max = std::max(m_max, std::countr_zero(static_cast<uint64_t>(g)));
  }
  // Pipelining depth (see the file comment), from the slowest ICI link's figures.
  int64_t chunks = context.options.chunks;
  if (chunks <= 1) {
    double bandwidth = 0, latency_s = 0;
    for (const topo::Link& l : context.topology.links()) {
      if (l.kind != topo::LinkKind::kIci) continue;
      bandwidth = bandwidth == 0 ? l.bandwidth.value : std::min(bandwidth, l.bandwidth.value);
      latency_s = std::max(latency_s, l.latency.seconds());
    }
    const double data = static_cast<double>(n * context.spec.element_bytes);
    const double best = bandwidth > 0 && latency_s > 0
                            ? std::sqrt((2.0 * m_max - 1) * data / (2 * bandwidth * latency_s))
                            : 1.0;
    chunks = std::clamp<int64_t>(std::llround(best), 1, 256);
  }
  chunks = std::max<int64_t>(1, std::min(chunks, std::max<int64_t>(1, n / 2)));
  double estimate = 0;
  for (const auto& group : context.groups) {
    estimate += static_cast<double>(group.size()) * (4.0 * static_cast<double>(chunks) + 1);
  }
  RequireScheduleMemory(context, "tree", estimate);
  schedule.transfers.reserve(static_cast<size_t>(estimate));

  ScheduleBuilder builder(schedule, /*track=*/context.derive_dependencies);
  for (const std::vector<int64_t>& group : context.groups) {
    const int64_t g = static_cast<int64_t>(group.size());
    const int m = std::countr_zero(static_cast<uint64_t>(g));
    for (int64_t p : group) builder.AddRanges(p, Buffer::kInput, p, Buffer::kOutput, {{0, n}}, false, 0);
    if (g == 1) continue;
    // Nodes 1 .. g-1 from the leaves up (level 0 first); node 0 is the top, above the root.
    std::vector<int64_t> up_order;
    for (int l = 0; l < m; ++l) {
      for (int64_t x = int64_t{1} << l; x < g; x += int64_t{2} << l) up_order.push_back(x);
    }
    for (int tree = 0; tree < 2; ++tree) {
      const BlockRange half = BlockOf(n, 2, tree);
      // Member at node x: tree A x itself; tree B the index one below (node 0: the last member).
      auto member = [&](int64_t x) {
        return group[static_cast<size_t>(tree == 0 ? x : (x + g - 1) % g)];
      };
      // The last transfer on each node's edge to its parent, up and down: the next chunk on
      // that edge goes after it.
      std::vector<int64_t> last_up(static_cast<size_t>(g), -1), last_down(static_cast<size_t>(g), -1);
      auto after = [](int64_t t) { return t >= 0 ? std::vector<int64_t>{t} : std::vector<int64_t>{}; };
      for (int64_t c = 0; c < chunks; ++c) {
        const BlockRange part = BlockOf(half.elements, chunks, c);
        if (part.elements == 0) continue;
        const Ranges range = {{half.offset + part.offset, part.elements}};
        for (int64_t x : up_order) {
          const int level = std::countr_zero(static_cast<uint64_t>(x));
          int64_t& last = last_up[static_cast<size_t>(x)];
          last = builder.AddRanges(member(x), Buffer::kOutput, member(ParentA(x, g)),
                                   Buffer::kOutput, range, /*reduce=*/true,
                                   static_cast<int>(c) + level, after(last));
        }
        for (auto it = up_order.rbegin(); it != up_order.rend(); ++it) {
          const int level = std::countr_zero(static_cast<uint64_t>(*it));
          int64_t& last = last_down[static_cast<size_t>(*it)];
          last = builder.AddRanges(member(ParentA(*it, g)), Buffer::kOutput, member(*it),
                                   Buffer::kOutput, range, /*reduce=*/false,
                                   static_cast<int>(c) + 2 * m - level, after(last));
        }
      }
    }
  }
  builder.Finish();
  schedule.description =
      "double binary tree: two binary trees over the group (each member an inner node of at most "
      "one), each reducing one half of the data up to its top and broadcasting it back down, in " +
      std::to_string(chunks) + " pipelined chunks per half";
}

}  // namespace podsim::sim::internal
