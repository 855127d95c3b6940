#include "partitioner/equivalence.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "partitioner/annotations.h"
#include "partitioner/tile_layout.h"

namespace podsim::partitioner {

using ir::DType;
using ir::Instruction;
using ir::Literal;
using ir::Opcode;
using ir::Shape;

namespace {

// Calls fn(global linear index, local linear index) for the real (non-padding) elements of
// `device`'s shard.
template <typename Fn>
void ForEachShardElement(const Shape& global, const TileLayout& layout, int64_t device, Fn fn) {
  const Shape local = layout.ShardShape(global);
  const int64_t r = global.rank();
  std::vector<int64_t> start(r), extent(r);
  for (int64_t d = 0; d < r; ++d) {
    start[d] = layout.ShardStart(global, device, d);
    extent[d] = std::max<int64_t>(0, std::min(local.dims[d], global.dims[d] - start[d]));
    if (extent[d] == 0) return;
  }
  const std::vector<int64_t> gs = ir::RowMajorStrides(global.dims);
  const std::vector<int64_t> ls = ir::RowMajorStrides(local.dims);
  std::vector<int64_t> idx(r, 0);
  while (true) {
    int64_t g = 0, l = 0;
    for (int64_t d = 0; d < r; ++d) {
      g += (start[d] + idx[d]) * gs[d];
      l += idx[d] * ls[d];
    }
    fn(g, l);
    int64_t d = r - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

double Poison(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kBF16:
      return std::numeric_limits<double>::quiet_NaN();
    case DType::kPred:
      return 1;
    default:
      return ir::IsFloating(t) ? std::numeric_limits<double>::quiet_NaN() : -1234567;
  }
}

double Difference(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<double>::infinity();
  }
  if (a == b) return 0;  // also equal infinities
  return std::fabs(a - b);
}

bool IsReduction(Opcode op) {
  return op == Opcode::kDot || op == Opcode::kConvolution || op == Opcode::kReduce ||
         op == Opcode::kReduceWindow || op == Opcode::kCumsum;
}

// The reductions one run of `c` executes: its own, and a loop's body's (recursively) once per
// trip, since a value carried through a loop takes on each trip's rounding again.
double ReductionsRun(const ir::Computation& c) {
  double n = 0;
  for (const auto& i : c.instructions()) {
    if (IsReduction(i->opcode)) ++n;
    if (i->body) n += static_cast<double>(i->trip_count) * ReductionsRun(*i->body);
  }
  return n;
}

// Reductions executed in the operand cone of `root` (loops as ReductionsRun counts them).
double ReductionsFeeding(const Instruction* root) {
  std::unordered_set<const Instruction*> seen;
  std::vector<const Instruction*> stack = {root};
  double n = 0;
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second) continue;
    if (IsReduction(i->opcode)) ++n;
    if (i->body) n += static_cast<double>(i->trip_count) * ReductionsRun(*i->body);
    for (const Instruction* o : i->operands) stack.push_back(o);
  }
  return n;
}

// For each float reduction of the entry (not inside loops or manual regions), the largest
// value of the same reduction over the operands' absolute values: a bound on every partial sum
// any split of it can form (a sum's rounding error is at most u times the sum of its terms'
// magnitudes). Empty for a module with a manual region (its reference is a lockstep run).
std::unordered_map<const Instruction*, double> PartialSumScales(const ir::Module& global,
                                                               const std::vector<Literal>& args,
                                                               bool manual) {
  std::unordered_map<const Instruction*, double> scales;
  if (manual) return scales;
  std::unique_ptr<ir::Module> m = global.Clone();
  ir::Computation* entry = m->entry();
  std::vector<const Instruction*> sources;  // in global
  std::vector<Instruction*> maxima;
  ir::Builder b(entry);
  const auto& gi = global.entry()->instructions();
  const size_t n = entry->instructions().size();
  for (size_t k = 0; k < n; ++k) {
    Instruction* r = entry->instructions()[k].get();
    if (!IsReduction(r->opcode) || r->shape.is_tuple ||
        (r->shape.dtype != DType::kF32 && r->shape.dtype != DType::kBF16) ||
        (r->opcode == Opcode::kReduce && r->reduce_kind != ir::ReduceKind::kAdd) ||
        (r->opcode == Opcode::kReduceWindow && r->reduce_kind != ir::ReduceKind::kAdd)) {
      continue;
    }
    auto copy = std::make_unique<Instruction>(*r);
    copy->name.clear();
    copy->sharding.reset();
    for (Instruction*& o : copy->operands) {
      if (o->shape.dtype == DType::kF32 || o->shape.dtype == DType::kBF16) o = b.Abs(o);
    }
    Instruction* abs_sum = b.Add(std::move(copy), /*infer_shape=*/false);
    std::vector<int64_t> all(static_cast<size_t>(abs_sum->shape.rank()));
    for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
    maxima.push_back(all.empty() ? abs_sum : b.Reduce(abs_sum, all, ir::ReduceKind::kMax));
    sources.push_back(gi[k].get());
  }
  if (maxima.empty()) return scales;
  entry->set_root(b.Tuple(maxima));
  m->RemoveDeadCode();
  const Literal values = ir::Interpret(*m, args);
  for (size_t k = 0; k < sources.size(); ++k) {
    const double v = values.elements[k].values.at(0);
    scales[sources[k]] = std::isfinite(v) ? v : 0;
  }
  return scales;
}

// The largest partial-sum scale of the reductions in the operand cone of `root`.
double PartialScaleFeeding(const Instruction* root,
                           const std::unordered_map<const Instruction*, double>& scales) {
  std::unordered_set<const Instruction*> seen;
  std::vector<const Instruction*> stack = {root};
  double s = 0;
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second) continue;
    const auto it = scales.find(i);
    if (it != scales.end()) s = std::max(s, it->second);
    for (const Instruction* o : i->operands) stack.push_back(o);
  }
  return s;
}

bool HasManualRegion(const ir::Module& global) {
  for (const auto& c : global.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode == Opcode::kAutoToManual) return true;
    }
  }
  return false;
}

// The unpartitioned result. A module with a manual region is per-partition code there: it runs
// on every partition in lockstep, each with the whole arguments (the results then agree), with
// partition-id the partition's inside the region and 0 outside, as the partitioner reads it
// (IsolateRegionPartitionIds).
Literal Reference(const ir::Module& global, const std::vector<Literal>& args, int64_t n) {
  if (!HasManualRegion(global)) return ir::Interpret(global, args);
  std::unique_ptr<ir::Module> m = global.Clone();
  IsolateRegionPartitionIds(*m);
  const std::unordered_set<const Instruction*> region = ManualRegion(*m);
  for (const auto& c : m->computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode != Opcode::kPartitionId || region.count(i.get())) continue;
      i->opcode = Opcode::kConstant;
      i->literal = Literal::Scalar(DType::kS32, 0);
    }
  }
  return ir::InterpretSpmd(*m, std::vector<std::vector<Literal>>(n, args), n)[0];
}

}  // namespace

bool EquivalenceReport::ok() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const OutputComparison& o) { return o.ok(); });
}

std::string EquivalenceReport::ToString() const {
  std::ostringstream out;
  for (const OutputComparison& o : outputs) {
    out << "output " << o.index << " " << o.shape.ToString() << " " << o.sharding.ToString()
        << ": max error " << o.max_abs_error << (o.ok() ? " <= " : " > ") << o.tolerance
        << (o.ok() ? " ok" : " MISMATCH") << "\n";
  }
  return out.str();
}

Literal ShardOf(const Literal& value, const ir::Sharding& sharding, int64_t device,
                int64_t num_partitions, double fill) {
  const TileLayout layout = TileLayout::FromSharding(sharding, value.shape.rank(), num_partitions);
  const Shape local = layout.ShardShape(value.shape);
  Literal out(local, std::vector<double>(local.NumElements(), ir::RoundToDType(fill, local.dtype)));
  ForEachShardElement(value.shape, layout, device,
                      [&](int64_t g, int64_t l) { out.values[l] = value.values[g]; });
  return out;
}

Literal Reassemble(const std::vector<Literal>& shards, const ir::Sharding& sharding,
                   const Shape& global) {
  const int64_t n = static_cast<int64_t>(shards.size());
  const TileLayout layout = TileLayout::FromSharding(sharding, global.rank(), n);
  Literal out = Literal::Zeros(global);
  std::vector<bool> done(out.values.size(), false);
  for (int64_t p = 0; p < n; ++p) {
    ForEachShardElement(global, layout, p, [&](int64_t g, int64_t l) {
      if (done[g]) return;
      out.values[g] = shards[p].values.at(l);
      done[g] = true;
    });
  }
  return out;
}

namespace {

// The shards of `value` for `device`: an array by the next sharding in `shardings` (from
// `next`), a tuple element by element.
Literal ShardTree(const Literal& value, const std::vector<ir::Sharding>& shardings, size_t& next,
                  int64_t device, int64_t n, const EquivalenceOptions& options) {
  if (value.shape.is_tuple) {
    std::vector<Literal> elements;
    for (const Literal& e : value.elements) {
      elements.push_back(ShardTree(e, shardings, next, device, n, options));
    }
    return Literal::Tuple(std::move(elements));
  }
  if (next >= shardings.size()) throw Error("ShardArguments: more arrays than shardings");
  const double fill = options.poison_padding ? Poison(value.shape.dtype) : 0.0;
  return ShardOf(value, shardings[next++], device, n, fill);
}

// The arrays of `value`, depth first.
void Leaves(const Literal& value, std::vector<const Literal*>& out) {
  if (!value.shape.is_tuple) {
    out.push_back(&value);
    return;
  }
  for (const Literal& e : value.elements) Leaves(e, out);
}

// The instruction computing each array of `i`'s value, depth first: through tuples, else `i`.
void LeafSources(const Instruction* i, const Shape& shape, std::vector<const Instruction*>& out) {
  if (!shape.is_tuple) {
    out.push_back(i);
    return;
  }
  for (size_t k = 0; k < shape.tuple_shapes.size(); ++k) {
    const bool through = i->opcode == Opcode::kTuple;
    LeafSources(through ? i->operands[k] : i, shape.tuple_shapes[k], out);
  }
}

}  // namespace

std::vector<std::vector<Literal>> ShardArguments(const PartitionResult& spmd,
                                                 const std::vector<Literal>& args,
                                                 const EquivalenceOptions& options) {
  const int64_t n = spmd.num_partitions;
  std::vector<const Literal*> arrays;
  for (const Literal& a : args) Leaves(a, arrays);
  if (arrays.size() != spmd.parameter_shardings.size()) {
    throw Error("ShardArguments: " + std::to_string(arrays.size()) + " argument arrays for " +
                std::to_string(spmd.parameter_shardings.size()) + " parameter arrays");
  }
  std::vector<std::vector<Literal>> shard_args(n);
  for (int64_t p = 0; p < n; ++p) {
    size_t next = 0;
    for (const Literal& a : args) {
      shard_args[p].push_back(ShardTree(a, spmd.parameter_shardings, next, p, n, options));
    }
  }
  return shard_args;
}

EquivalenceReport CompareOutputs(const ir::Module& global, const PartitionResult& spmd,
                                 const std::vector<Literal>& args,
                                 const std::vector<Literal>& results,
                                 const EquivalenceOptions& options) {
  const int64_t n = spmd.num_partitions;
  if (static_cast<int64_t>(results.size()) != n) {
    throw Error("CompareOutputs: " + std::to_string(results.size()) + " results for " +
                std::to_string(n) + " partitions");
  }
  const Literal expected = Reference(global, args, n);
  const std::unordered_map<const Instruction*, double> partial_scales =
      PartialSumScales(global, args, HasManualRegion(global));
  const Instruction* root = global.entry()->root();
  std::vector<const Literal*> wanted;
  Leaves(expected, wanted);
  std::vector<std::vector<const Literal*>> got(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) Leaves(results[p], got[p]);
  std::vector<const Instruction*> sources;
  LeafSources(root, root->shape, sources);
  if (wanted.size() != spmd.output_shardings.size() || sources.size() != wanted.size()) {
    throw Error("CompareOutputs: " + std::to_string(wanted.size()) + " output arrays for " +
                std::to_string(spmd.output_shardings.size()) + " output shardings");
  }
  EquivalenceReport report;
  report.num_partitions = n;
  for (size_t k = 0; k < wanted.size(); ++k) {
    const Literal& want = *wanted[k];
    OutputComparison c;
    c.index = static_cast<int64_t>(k);
    c.shape = want.shape;
    c.sharding = spmd.output_shardings[k];
    const TileLayout layout = TileLayout::FromSharding(c.sharding, want.shape.rank(), n);
    double scale = 0;
    for (double v : want.values) {
      if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    }
    for (int64_t p = 0; p < n; ++p) {
      const Literal& mine = *got[p].at(k);
      ForEachShardElement(want.shape, layout, p, [&](int64_t g, int64_t l) {
        c.max_abs_error = std::max(c.max_abs_error, Difference(mine.values.at(l), want.values[g]));
      });
    }
    const double reductions = ReductionsFeeding(sources[k]);
    scale = std::max(scale, PartialScaleFeeding(sources[k], partial_scales));
    c.tolerance = options.tolerance_factor * ir::UnitRoundoff(want.shape.dtype) *
                  static_cast<double>(n) * reductions * (1 + scale);
    report.outputs.push_back(std::move(c));
  }
  return report;
}

EquivalenceReport CompareSpmd(const ir::Module& global, const PartitionResult& spmd,
                              const std::vector<Literal>& args, const EquivalenceOptions& options) {
  const std::vector<Literal> results =
      ir::InterpretSpmd(*spmd.module, ShardArguments(spmd, args, options), spmd.num_partitions);
  return CompareOutputs(global, spmd, args, results, options);
}

EquivalenceReport CheckEquivalence(const ir::Module& global, const PartitionOptions& options,
                                   uint64_t seed, const EquivalenceOptions& eq_options) {
  PartitionResult spmd = PartitionSpmd(global, options);
  return CompareSpmd(global, spmd, ir::RandomArguments(global, seed), eq_options);
}

}  // namespace podsim::partitioner
