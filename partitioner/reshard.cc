#include "partitioner/reshard.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "base/error.h"

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

// Dim d of a local slice from `from` to `to`: whether every partition's `to` tile (its real
// part) lies inside its `from` tile, and if so the extent the `from` shard must be padded to so
// that every real `to` tile can be cut at offset (to start - from start). Partition by
// partition (O(D)).
std::optional<int64_t> SliceDimByPartition(const Shape& g, const TileLayout& from,
                                           const TileLayout& to, int64_t d) {
  int64_t need = ShardExtent(g.dims[d], to.tiles(d));
  for (int64_t p = 0; p < from.num_devices(); ++p) {
    auto [ts, te] = ValidRange(g, to, p, d);
    if (ts == te) continue;
    const int64_t fs = from.ShardStart(g, p, d);
    const int64_t fe = fs + ShardExtent(g.dims[d], from.tiles(d));
    if (ts < fs || te > fe) return std::nullopt;
    need = std::max(need, ts - fs + ShardExtent(g.dims[d], to.tiles(d)));
  }
  return need;
}

// The same from the compact layouts' digits, without visiting partitions: the from tile's digits
// must be among the to tile's (else a to tile would need two from tiles); when they are its
// major digits (from coordinate = to coordinate / k) the answer is arithmetic, otherwise the
// real to tiles are visited (at most G of them) until one does not fit.
std::optional<int64_t> SliceDim(const Shape& g, const TileLayout& from, const TileLayout& to,
                                int64_t d) {
  if (!from.compact() || !to.compact()) return SliceDimByPartition(g, from, to, d);
  const int64_t n = from.num_devices(), extent = g.dims[d];
  const int64_t tt = to.tiles(d), tf = from.tiles(d);
  const int64_t et = ShardExtent(extent, tt), ef = ShardExtent(extent, tf);
  if (extent == 0) return et;
  auto atoms = ir::RefineModes({from.Modes(d), to.Modes(d)}, n);
  if (!atoms) return SliceDimByPartition(g, from, to, d);
  const std::vector<ir::StridedMode>& fa = (*atoms)[0];
  const std::vector<ir::StridedMode>& ta = (*atoms)[1];
  std::vector<int64_t> where(fa.size());  // position of each from digit among the to digits
  for (size_t k = 0; k < fa.size(); ++k) {
    auto it = std::find(ta.begin(), ta.end(), fa[k]);
    if (it == ta.end()) return std::nullopt;
    where[k] = it - ta.begin();
  }
  const int64_t last = std::min(tt, (extent + et - 1) / et) - 1;  // last real to tile
  bool prefix = true;
  for (size_t k = 0; k < where.size(); ++k) prefix = prefix && where[k] == static_cast<int64_t>(k);
  if (prefix) {
    const int64_t k = tt / tf;
    if (k * et != ef && ef < extent) return std::nullopt;
    auto offset = [&](int64_t t) { return t * et - (t / k) * ef; };
    int64_t need = std::max(et, offset(last) + et);
    if (last / k >= 1) need = std::max(need, offset((last / k) * k - 1) + et);
    return need;
  }
  int64_t need = et;
  std::vector<int64_t> digit(ta.size());
  for (int64_t t = 0; t <= last; ++t) {
    for (int64_t j = static_cast<int64_t>(ta.size()) - 1, rest = t; j >= 0; --j) {
      digit[j] = rest % ta[j].size;
      rest /= ta[j].size;
    }
    int64_t f = 0;
    for (size_t k = 0; k < fa.size(); ++k) f = f * fa[k].size + digit[where[k]];
    const int64_t ts = t * et, te = std::min(ts + et, extent), fs = f * ef;
    if (ts < fs || te > fs + ef) return std::nullopt;
    need = std::max(need, ts - fs + et);
  }
  return need;
}

// Every partition's `to` tile (its real part) lies inside its `from` tile.
bool CanLocalSlice(const Shape& g, const TileLayout& from, const TileLayout& to) {
  if (from.partial() != 1 || to.partial() != 1) return false;
  for (int64_t d = 0; d < g.rank(); ++d) {
    if (!SliceDim(g, from, to, d)) return false;
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
    // All-to-all: the split of dim a moves to dim b; or its minor factor k does, becoming the
    // minor factor of b's split (a split over data x expert becoming a split over data and
    // another dim's over expert, and back), an AllToAll within the groups of k partitions
    // that differ only in that factor. A partial move needs the dims it cuts to divide evenly,
    // so that k shards of a make one shard of the coarser split and a shard of b cuts in k.
    for (int64_t a = 0; a < r; ++a) {
      if (from.tiles(a) == 1 || from.tiles(a) <= to.tiles(a) || from.tiles(a) % to.tiles(a) != 0) {
        continue;
      }
      const int64_t k = from.tiles(a) / to.tiles(a);
      for (int64_t b = 0; b < r; ++b) {
        if (b == a || to.tiles(b) != from.tiles(b) * k) continue;
        if (to.tiles(a) > 1 && g_.dims[a] % from.tiles(a) != 0) continue;
        if (from.tiles(b) > 1 && g_.dims[b] % to.tiles(b) != 0) continue;
        TileLayout mid = from.MovedFactor(a, b, k);
        consider({Step{StepKind::kAllToAll, a, b, mid}}, AllToAllCost(from, k), mid);
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
  double AllToAllCost(const TileLayout& l, int64_t group) const {
    const double k = static_cast<double>(group);
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
        auto iota = cur.IotaGroupsAlong(d);
        Instruction* y =
            Log(iota ? b_.AllGather(x, d, *iota) : b_.AllGather(x, d, cur.GroupsAlong(d)));
        std::vector<int64_t> extents = y->shape.dims;
        extents[d] = g_.dims[d];
        return sb_.SliceLeading(y, extents);
      }
      case StepKind::kAllToAll: {
        // The groups: the partitions that differ only in the moved factor (the minor factor
        // of b's new coordinate), each in that order, which is the order a's pieces
        // concatenate in and b's pieces are sent in.
        const int64_t a = s.dim, b = s.dim2, k = s.result.tiles(b) / cur.tiles(b);
        std::vector<int64_t> high(g_.rank(), 0);
        high[b] = k * ShardExtent(g_.dims[b], s.result.tiles(b)) - x->shape.dims[b];
        x = sb_.PadHigh(x, high);
        auto iota = s.result.IotaGroupsAlongMinor(b, k);
        Instruction* y = Log(iota ? b_.AllToAll(x, b, a, *iota)
                                  : b_.AllToAll(x, b, a, s.result.GroupsAlongMinor(b, k)));
        std::vector<int64_t> extents = y->shape.dims;
        extents[a] = ShardExtent(g_.dims[a], s.result.tiles(a));
        return sb_.SliceLeading(y, extents);
      }
      case StepKind::kPermute: {
        auto pairs = PermutePairs(cur, s.result);
        bool moves = false;
        for (const auto& [src, dst] : pairs) moves = moves || src != dst;
        if (!moves) return x;
        return Log(b_.CollectivePermute(x, std::move(pairs)));
      }
      case StepKind::kAllReduce: {
        auto iota = cur.IotaGroupsAlong(TileLayout::kPartialAxis);
        return Log(iota ? b_.AllReduce(x, cur.partial_kind(), *iota)
                        : b_.AllReduce(x, cur.partial_kind(),
                                       cur.GroupsAlong(TileLayout::kPartialAxis)));
      }
      case StepKind::kReduceScatter: {
        const int64_t d = s.dim, k = cur.partial();
        std::vector<int64_t> high(g_.rank(), 0);
        if (cur.tiles(d) == 1) high[d] = k * ShardExtent(g_.dims[d], k) - x->shape.dims[d];
        x = sb_.PadHigh(x, high);
        auto iota = cur.IotaGroupsAlong(TileLayout::kPartialAxis);
        return Log(iota ? b_.ReduceScatter(x, d, cur.partial_kind(), *iota)
                        : b_.ReduceScatter(x, d, cur.partial_kind(),
                                           cur.GroupsAlong(TileLayout::kPartialAxis)));
      }
    }
    return x;
  }

 private:
  Instruction* LocalSlice(Instruction* x, const TileLayout& cur, const TileLayout& to) {
    const int64_t n = cur.num_devices(), r = g_.rank();
    const Shape want = to.ShardShape(g_);
    std::vector<int64_t> high(r, 0);
    std::vector<bool> moves(r, false);  // some partition's offset may be nonzero
    bool slices = false;
    for (int64_t d = 0; d < r; ++d) {
      std::optional<int64_t> need = SliceDim(g_, cur, to, d);
      if (!need) {
        throw Error("internal: local slice from " + cur.ToString() + " to " + to.ToString());
      }
      high[d] = std::max<int64_t>(0, *need - x->shape.dims[d]);
      if (cur.compact() && to.compact()) {
        moves[d] = to.tiles(d) > 1 && !(cur.tiles(d) == to.tiles(d) &&
                                        ir::CanonicalModes(cur.Modes(d)) ==
                                            ir::CanonicalModes(to.Modes(d)));
      } else {
        for (int64_t p = 0; p < n && !moves[d]; ++p) {
          auto [ts, te] = ValidRange(g_, to, p, d);
          moves[d] = ts != te && ts != cur.ShardStart(g_, p, d);
        }
      }
      slices = slices || moves[d] || want.dims[d] != x->shape.dims[d];
    }
    if (!slices) return x;
    x = sb_.PadHigh(x, high);
    std::vector<Instruction*> starts;
    for (int64_t d = 0; d < r; ++d) {
      if (!moves[d]) {
        starts.push_back(sb_.S32(0));
      } else if (cur.compact() && to.compact()) {
        // to start - from start; an empty to tile may get any offset (dynamic-slice clamps it
        // into the buffer, and it reads only padding).
        Instruction* ts = sb_.ShardStart(g_, to, d);
        starts.push_back(cur.tiles(d) == 1 ? ts : b_.Sub(ts, sb_.ShardStart(g_, cur, d)));
      } else {
        std::vector<int64_t> offsets(n, 0);
        for (int64_t p = 0; p < n; ++p) {
          auto [ts, te] = ValidRange(g_, to, p, d);
          if (ts != te) offsets[p] = ts - cur.ShardStart(g_, p, d);
        }
        starts.push_back(sb_.PerPartition(offsets));
      }
    }
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

Instruction* Resharder::Shift(SpmdBuilder& sb, Instruction* piece, const TileLayout& layout,
                              int64_t dim, int64_t shift, const ReshardReason& why) const {
  if (shift == 0) return piece;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const std::vector<int64_t>& group : layout.GroupsAlong(dim)) {
    const int64_t k = static_cast<int64_t>(group.size());
    for (int64_t c = 0; c < k; ++c) {
      if (c + shift >= 0 && c + shift < k) pairs.emplace_back(group[c], group[c + shift]);
    }
  }
  if (pairs.empty()) return sb.Filled(piece->shape, 0);  // nobody has a neighbour that far
  std::sort(pairs.begin(), pairs.end());
  Instruction* permute = sb.b().CollectivePermute(piece, std::move(pairs));
  const std::string l = layout.ToString();
  if (log_) log_->push_back({permute->name, why.user, why.use, l, l, why.note});
  return permute;
}

}  // namespace podsim::partitioner
