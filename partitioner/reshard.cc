#include "partitioner/reshard.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "ir/error.h"

namespace podsim::partitioner {

using ir::Instruction;
using ir::Shape;

std::string CollectiveProvenance::ToString() const {
  std::string out = collective + " <- %" + user + " " + use + ": " + from + " -> " + to;
  if (!note.empty()) out += " (" + note + ")";
  return out;
}

namespace {

enum class StepKind { kLocalSlice, kAllGather, kAllToAll, kPermute, kAllReduce, kReduceScatter };

struct Step {
  StepKind kind;
  int64_t dim = -1;   // all-gather, reduce-scatter: the dim; all-to-all: the source dim a
  int64_t dim2 = -1;  // all-to-all: the destination dim b
  TileLayout result;
};

struct Plan {
  std::vector<Step> steps;
  double cost = 0;
};

constexpr int kMaxDepth = 12;
// A local slice costs nothing but an instruction or two; a tiny cost prefers plans with fewer.
constexpr double kLocalStepCost = 1e-3;

// [start, end) of the real (non-padding) elements of `device`'s tile in dim d.
std::pair<int64_t, int64_t> ValidRange(const Shape& g, const TileLayout& l, int64_t device,
                                       int64_t d) {
  const int64_t start = l.ShardStart(g, device, d);
  const int64_t end = std::min(start + ShardExtent(g.dims[d], l.tiles(d)), g.dims[d]);
  return {start, std::max(start, end)};
}

// Every partition's `to` tile (its real part) lies inside its `from` tile.
bool CanLocalSlice(const Shape& g, const TileLayout& from, const TileLayout& to) {
  if (from.partial() != 1 || to.partial() != 1) return false;
  for (int64_t p = 0; p < from.num_devices(); ++p) {
    for (int64_t d = 0; d < g.rank(); ++d) {
      auto [ts, te] = ValidRange(g, to, p, d);
      if (ts == te) continue;
      const int64_t fs = from.ShardStart(g, p, d);
      const int64_t fe = fs + ShardExtent(g.dims[d], from.tiles(d));
      if (ts < fs || te > fe) return false;
    }
  }
  return true;
}

// Reduce-scatter of a partial value into dim d keeps the ceil-division geometry.
bool CanScatter(const Shape& g, const TileLayout& l, int64_t d) {
  return l.tiles(d) == 1 || ShardExtent(g.dims[d], l.tiles(d)) % l.partial() == 0;
}

class Planner {
 public:
  Planner(const Shape& g, const ReshardCostModel& cm) : g_(g), cm_(cm) {}

  Plan Best(const TileLayout& from, const TileLayout& to, int depth) const {
    if (depth > kMaxDepth) {
      throw Error("internal: no reshard plan from " + from.ToString() + " to " + to.ToString());
    }
    std::optional<Plan> best;
    auto consider = [&](std::vector<Step> head, double head_cost, const TileLayout& mid) {
      Plan rest = Best(mid, to, depth + 1);
      Plan p;
      p.steps = std::move(head);
      p.steps.insert(p.steps.end(), rest.steps.begin(), rest.steps.end());
      p.cost = head_cost + rest.cost;
      if (!best || p.cost < best->cost) best = std::move(p);
    };
    if (from.partial() > 1) {
      for (int64_t d = 0; d < g_.rank(); ++d) {
        if (!CanScatter(g_, from, d)) continue;
        TileLayout mid = from.Scattered(d);
        consider({Step{StepKind::kReduceScatter, d, -1, mid}}, ScatterCost(from, d), mid);
      }
      TileLayout mid = from.AllReduced();
      consider({Step{StepKind::kAllReduce, -1, -1, mid}}, AllReduceCost(from), mid);
      return *best;
    }
    if (from.Equivalent(to)) return Plan{};
    if (CanLocalSlice(g_, from, to))
      return Plan{{Step{StepKind::kLocalSlice, -1, -1, to}}, kLocalStepCost};
    if (from.tiles() == to.tiles()) {
      return Plan{{Step{StepKind::kPermute, -1, -1, to}}, PermuteCost(from)};
    }
    const int64_t r = g_.rank();
    // All-to-all: the split of dim a moves to dim b.
    for (int64_t a = 0; a < r; ++a) {
      if (from.tiles(a) == 1 || to.tiles(a) != 1) continue;
      for (int64_t b = 0; b < r; ++b) {
        if (b == a || from.tiles(b) != 1 || to.tiles(b) != from.tiles(a)) continue;
        TileLayout mid = from.Swapped(a, b);
        consider({Step{StepKind::kAllToAll, a, b, mid}}, AllToAllCost(from, a, b), mid);
      }
    }
    // All-gather the dims whose tiling differs, then slice.
    {
      std::vector<Step> steps;
      double cost = 0;
      TileLayout mid = from;
      for (int64_t d = 0; d < r; ++d) {
        if (from.tiles(d) > 1 && from.tiles(d) != to.tiles(d)) {
          cost += GatherCost(mid, d);
          mid = mid.Gathered(d);
          steps.push_back(Step{StepKind::kAllGather, d, -1, mid});
        }
      }
      if (!steps.empty()) consider(std::move(steps), cost, mid);
    }
    // Permute to a coarsening of the target (same tile counts as `from`), then slice.
    {
      bool coarser = true;
      TileLayout coarse = to;
      for (int64_t d = 0; d < r; ++d) {
        if (from.tiles(d) == to.tiles(d)) continue;
        if (from.tiles(d) != 1) coarser = false;
        if (coarser) coarse = coarse.Gathered(d);
      }
      if (coarser && coarse.tiles() == from.tiles() && !from.Equivalent(coarse)) {
        Plan p{{Step{StepKind::kPermute, -1, -1, coarse}, Step{StepKind::kLocalSlice, -1, -1, to}},
               PermuteCost(from) + kLocalStepCost};
        if (!best || p.cost < best->cost) best = std::move(p);
      }
    }
    if (!best) {
      // Gather everything, then slice: always possible.
      std::vector<Step> steps;
      double cost = 0;
      TileLayout mid = from;
      for (int64_t d = 0; d < r; ++d) {
        if (mid.tiles(d) == 1) continue;
        cost += GatherCost(mid, d);
        mid = mid.Gathered(d);
        steps.push_back(Step{StepKind::kAllGather, d, -1, mid});
      }
      steps.push_back(Step{StepKind::kLocalSlice, -1, -1, to});
      best = Plan{std::move(steps), cost + kLocalStepCost};
    }
    return *best;
  }

 private:
  double Bytes(const TileLayout& l) const {
    return static_cast<double>(l.ShardShape(g_).ByteSize());
  }
  double Collective(double bytes) const { return bytes + cm_.collective_latency_bytes; }
  double GatherCost(const TileLayout& l, int64_t d) const {
    const double k = static_cast<double>(l.tiles(d));
    return Collective(Bytes(l.Gathered(d)) * (k - 1) / k);
  }
  double AllToAllCost(const TileLayout& l, int64_t a, int64_t b) const {
    const double k = static_cast<double>(l.tiles(a));
    return Collective(Bytes(l) * (k - 1) / k);
  }
  double PermuteCost(const TileLayout& l) const { return Collective(Bytes(l)); }
  double AllReduceCost(const TileLayout& l) const {
    const double k = static_cast<double>(l.partial());
    return Collective(2 * Bytes(l) * (k - 1) / k);
  }
  double ScatterCost(const TileLayout& l, int64_t d) const {
    const double k = static_cast<double>(l.partial());
    return Collective(Bytes(l) * (k - 1) / k);
  }

  const Shape& g_;
  const ReshardCostModel& cm_;
};

// Source -> target pairs moving tiles from `from` to `to` (same tile counts): a partition
// that already holds its target tile keeps it; the others take one holder each, in order.
std::vector<std::pair<int64_t, int64_t>> PermutePairs(const TileLayout& from,
                                                      const TileLayout& to) {
  const int64_t n = from.num_devices();
  const int64_t slots = from.NumTiles() * from.partial();
  auto slot = [](const TileLayout& l, int64_t p) {
    int64_t s = 0;
    for (int64_t d = 0; d < l.rank(); ++d) s = s * l.tiles(d) + l.Coord(p, d);
    return s * l.partial() + l.PartialIndex(p);
  };
  std::vector<std::vector<int64_t>> sources(slots), targets(slots);
  for (int64_t p = 0; p < n; ++p) {
    sources[slot(from, p)].push_back(p);
    targets[slot(to, p)].push_back(p);
  }
  std::vector<bool> keeps(n, false);
  for (int64_t p = 0; p < n; ++p) keeps[p] = slot(from, p) == slot(to, p);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t k = 0; k < slots; ++k) {
    std::vector<int64_t> free_srcs, free_tgts;
    for (int64_t src : sources[k]) {
      if (!keeps[src]) free_srcs.push_back(src);
    }
    for (int64_t t : targets[k]) {
      if (keeps[t]) {
        pairs.emplace_back(t, t);
      } else {
        free_tgts.push_back(t);
      }
    }
    if (free_srcs.size() != free_tgts.size()) {
      throw Error("internal: permute from " + from.ToString() + " to " + to.ToString());
    }
    for (size_t i = 0; i < free_tgts.size(); ++i) pairs.emplace_back(free_srcs[i], free_tgts[i]);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

class Emitter {
 public:
  Emitter(SpmdBuilder& sb, const Shape& g, const ReshardReason& why, const std::string& from,
          const std::string& to, std::vector<CollectiveProvenance>* log)
      : sb_(sb), b_(sb.b()), g_(g), why_(why), from_(from), to_(to), log_(log) {}

  Instruction* Apply(Instruction* x, const TileLayout& cur, const Step& s) {
    switch (s.kind) {
      case StepKind::kLocalSlice:
        return LocalSlice(x, cur, s.result);
      case StepKind::kAllGather: {
        const int64_t d = s.dim;
        Instruction* y = Log(b_.AllGather(x, d, cur.GroupsAlong(d)));
        std::vector<int64_t> extents = y->shape.dims;
        extents[d] = g_.dims[d];
        return sb_.SliceLeading(y, extents);
      }
      case StepKind::kAllToAll: {
        const int64_t a = s.dim, b = s.dim2, k = cur.tiles(a);
        std::vector<int64_t> high(g_.rank(), 0);
        high[b] = k * ShardExtent(g_.dims[b], k) - x->shape.dims[b];
        x = sb_.PadHigh(x, high);
        Instruction* y = Log(b_.AllToAll(x, b, a, cur.GroupsAlong(a)));
        std::vector<int64_t> extents = y->shape.dims;
        extents[a] = g_.dims[a];
        return sb_.SliceLeading(y, extents);
      }
      case StepKind::kPermute: {
        auto pairs = PermutePairs(cur, s.result);
        bool moves = false;
        for (const auto& [src, dst] : pairs) moves = moves || src != dst;
        if (!moves) return x;
        return Log(b_.CollectivePermute(x, std::move(pairs)));
      }
      case StepKind::kAllReduce:
        return Log(b_.AllReduce(x, cur.partial_kind(), cur.GroupsAlong(TileLayout::kPartialAxis)));
      case StepKind::kReduceScatter: {
        const int64_t d = s.dim, k = cur.partial();
        std::vector<int64_t> high(g_.rank(), 0);
        if (cur.tiles(d) == 1) high[d] = k * ShardExtent(g_.dims[d], k) - x->shape.dims[d];
        x = sb_.PadHigh(x, high);
        return Log(
            b_.ReduceScatter(x, d, cur.partial_kind(), cur.GroupsAlong(TileLayout::kPartialAxis)));
      }
    }
    return x;
  }

 private:
  Instruction* LocalSlice(Instruction* x, const TileLayout& cur, const TileLayout& to) {
    const int64_t n = cur.num_devices(), r = g_.rank();
    const Shape want = to.ShardShape(g_);
    std::vector<int64_t> high(r, 0);
    std::vector<std::vector<int64_t>> offsets(r, std::vector<int64_t>(n, 0));
    bool slices = false;
    for (int64_t d = 0; d < r; ++d) {
      int64_t need = want.dims[d];
      for (int64_t p = 0; p < n; ++p) {
        auto [ts, te] = ValidRange(g_, to, p, d);
        if (ts == te) continue;
        offsets[d][p] = ts - cur.ShardStart(g_, p, d);
        need = std::max(need, offsets[d][p] + want.dims[d]);
        slices = slices || offsets[d][p] != 0;
      }
      high[d] = std::max<int64_t>(0, need - x->shape.dims[d]);
      slices = slices || want.dims[d] != x->shape.dims[d];
    }
    if (!slices) return x;
    x = sb_.PadHigh(x, high);
    std::vector<Instruction*> starts;
    for (int64_t d = 0; d < r; ++d) starts.push_back(sb_.PerPartition(offsets[d]));
    return b_.DynamicSlice(x, std::move(starts), want.dims);
  }

  Instruction* Log(Instruction* c) {
    if (log_) log_->push_back({c->name, why_.user, why_.use, from_, to_, why_.note});
    return c;
  }

  SpmdBuilder& sb_;
  ir::Builder& b_;
  const Shape& g_;
  const ReshardReason& why_;
  std::string from_, to_;
  std::vector<CollectiveProvenance>* log_;
};

}  // namespace

double Resharder::Cost(const Shape& global, const TileLayout& from, const TileLayout& to) const {
  return Planner(global, cost_model_).Best(from, to, 0).cost;
}

ShardedValue Resharder::Reshard(SpmdBuilder& sb, const ShardedValue& v, const TileLayout& to,
                                const ReshardReason& why) const {
  Plan plan = Planner(v.global, cost_model_).Best(v.layout, to, 0);
  if (plan.steps.empty()) return ShardedValue{v.local, v.global, to};
  Emitter emitter(sb, v.global, why, v.layout.ToString(), to.ToString(), log_);
  Instruction* x = v.local;
  TileLayout cur = v.layout;
  for (const Step& s : plan.steps) {
    x = emitter.Apply(x, cur, s);
    cur = s.result;
    const Shape want = cur.ShardShape(v.global);
    if (x->shape != want) {
      throw Error("internal: reshard step gave " + x->shape.ToString() + ", layout " +
                  cur.ToString() + " needs " + want.ToString());
    }
  }
  return ShardedValue{x, v.global, to};
}

}  // namespace podsim::partitioner
