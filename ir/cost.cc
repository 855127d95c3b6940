// Cost analysis: one visitor, one Handle* per op family. Every formula is documented at its
// handler and in docs/cost-model.md. Notation: E = result elements, B(x) = bytes of x
// (Shape::ByteSize, tuples summed), G = collective group size.
//
// Conventions shared by all handlers:
//   - flops count 2 per multiply-add in contractions, 1 per elementwise or reduction step;
//     transcendental ops (exp, log, sqrt, rsqrt, tanh, power) count in `transcendentals`
//     instead of `flops` (as XLA's HloCostAnalysis does).
//   - bytes_read is the sum of operand bytes, bytes_written the result bytes, except where a
//     handler says otherwise (slices read only what they output; dynamic-update-slice works in
//     place; bookkeeping ops move nothing).
//   - network_bytes is what one partition sends, independent of the collective algorithm.

#include "ir/cost.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "base/error.h"
#include "ir/visitor.h"

namespace podsim::ir {

std::string_view UnitName(Unit u) {
  switch (u) {
    case Unit::kNone: return "none";
    case Unit::kMatrix: return "matrix";
    case Unit::kVector: return "vector";
    case Unit::kMemory: return "memory";
    case Unit::kNetwork: return "network";
  }
  return "?";
}

Cost& Cost::operator+=(const Cost& o) {
  flops += o.flops;
  transcendentals += o.transcendentals;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  network_bytes += o.network_bytes;
  return *this;
}

namespace {

// A cumsum as XLA compiles it. tf.cumsum / jnp.cumsum become a reduce-window whose window spans
// the whole scanned dim (n taps per element, quadratic), which XLA's ReduceWindowRewriter
// replaces by a tree when n > b: pad n to n' = b * ceil(n / b), view the rows as [n' / b, b],
// window-sum each b-block (b taps per element), slice out each block's total, scan those
// (recursively), broadcast them back and add. b is the pass's base_length; the open-source
// pipeline registers it with 16 (the TPU compiler's value is not published; docs/cost-model.md).
// Flops count every tap, as reduce-window does. extra_bytes: what the tree moves through memory
// beyond reading the operand and writing the result (the padded copy, the block sums written
// and read back by the add, the totals' slice and their scan).
constexpr int64_t kScanBaseLength = 16;
struct ScanCost {
  double flops = 0;
  double extra_bytes = 0;
};
ScanCost XlaScanCost(double rows, int64_t n, double element_bytes) {
  const double nd = static_cast<double>(n);
  if (n <= kScanBaseLength) return {rows * nd * std::max(0.0, nd - 1), 0};
  const int64_t columns = (n + kScanBaseLength - 1) / kScanBaseLength;
  const double padded = rows * static_cast<double>(columns * kScanBaseLength);
  const double totals = rows * static_cast<double>(columns);
  const ScanCost inner = XlaScanCost(rows, columns, element_bytes);
  ScanCost c;
  c.flops = padded * static_cast<double>(kScanBaseLength - 1) + padded + inner.flops;
  c.extra_bytes = 2 * padded * element_bytes + 4 * totals * element_bytes + inner.extra_bytes;
  if (columns * kScanBaseLength != n) c.extra_bytes += 2 * padded * element_bytes;
  return c;
}

constexpr int kNumUnits = 5;
static_assert(sizeof(ModuleCost::per_unit) / sizeof(Cost) == kNumUnits &&
              static_cast<int>(Unit::kNetwork) == kNumUnits - 1);

Cost Scaled(Cost c, double factor) {
  c.flops *= factor;
  c.transcendentals *= factor;
  c.bytes_read *= factor;
  c.bytes_written *= factor;
  c.network_bytes *= factor;
  return c;
}

double Elements(const Shape& s) { return static_cast<double>(s.NumElements()); }
double Bytes(const Shape& s) { return static_cast<double>(s.ByteSize()); }

double OperandBytes(const Instruction& i, size_t first = 0) {
  double sum = 0;
  for (size_t k = first; k < i.operands.size(); ++k) sum += Bytes(i.operand(k)->shape);
  return sum;
}

bool IsTranscendental(Opcode op) {
  return op == Opcode::kExp || op == Opcode::kLog || op == Opcode::kSqrt ||
         op == Opcode::kRsqrt || op == Opcode::kTanh || op == Opcode::kPower ||
         op == Opcode::kSine || op == Opcode::kCosine || op == Opcode::kLogistic;
}

class CostVisitor : public ConstVisitor<Cost> {
 public:
  explicit CostVisitor(int64_t num_partitions) : num_partitions_(num_partitions) {}

  // Cost of one execution of `i`.
  Cost Visit(const Instruction& i) { return Accept<Cost>(i, *this); }

  Cost DefaultAction(const Instruction& i) override {
    throw Error("%" + i.name + ": no cost rule for " + std::string(OpcodeName(i.opcode)));
  }
  // Bookkeeping (parameter, constant, partition-id, tuple, get-tuple-element, and the
  // manual-region boundaries, a view of the partition's shard that the SPMD lowering makes an
  // identity): values already in memory or aliased.
  Cost HandleLeaf(const Instruction&) override { return Cost{}; }
  Cost HandleControl(const Instruction&) override { return Cost{}; }
  Cost HandleManualBoundary(const Instruction&) override { return Cost{}; }
  Cost HandleIota(const Instruction& i) override { return Generator(i); }
  Cost HandleRandomUniform(const Instruction& i) override { return Generator(i); }
  Cost HandleDataMovement(const Instruction& i) override { return Copy(i); }
  Cost HandleSlice(const Instruction& i) override { return SliceLike(i); }
  Cost HandleDynamicSlice(const Instruction& i) override { return SliceLike(i); }
  Cost HandleGather(const Instruction& i) override { return SliceLike(i); }
  Cost HandleArgmax(const Instruction& i) override { return HandleReduce(i); }
  Cost HandleTopK(const Instruction& i) override { return HandleSort(i); }
  // The cost it was given: its flops on the matrix unit (a fused kernel of matrix products, as
  // the custom-calls of imported programs are), its operands read and its result written once.
  Cost HandleCustomCall(const Instruction& i) override {
    Cost c;
    c.unit = Unit::kMatrix;
    c.flops = i.custom_call_flops;
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // Cost of one execution of computation `c` (the sum over its instructions), memoized.
  const Cost& ComputationCost(const Computation& c) {
    auto it = computation_cost_.find(&c);
    if (it != computation_cost_.end()) return it->second;
    Cost sum;
    for (const auto& i : c.instructions()) sum += Visit(*i);
    return computation_cost_[&c] = sum;
  }

 private:
  // Reads operands, writes the result, no arithmetic.
  static Cost Movement(const Instruction& i, double read, double written) {
    Cost c;
    c.unit = Unit::kMemory;
    c.bytes_read = read;
    c.bytes_written = written;
    return c;
  }

  // iota: writes E values, computes nothing countable (flops 0).
  // random-uniform: 1 flop per element (one counter-based hash), reads its scalar offsets.
  static Cost Generator(const Instruction& i) {
    Cost c;
    c.unit = Unit::kVector;
    if (i.opcode == Opcode::kRandomUniform) c.flops = Elements(i.shape);
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // Unary, binary, select: 1 flop per output element, or 1 transcendental for exp, log, sqrt,
  // rsqrt, tanh and power. Convert, compare, and/or, abs, negate and select count as flops.
  Cost HandleElementwise(const Instruction& i) override {
    Cost c;
    c.unit = Unit::kVector;
    (IsTranscendental(i.opcode) ? c.transcendentals : c.flops) = Elements(i.shape);
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // broadcast, reshape, transpose, pad, concatenate, reverse: read every operand (the pad value
  // too), write the result. A reshape counts as a copy: the IR has no layouts to prove it free.
  static Cost Copy(const Instruction& i) {
    return Movement(i, OperandBytes(i), Bytes(i.shape));
  }

  // slice, dynamic-slice, gather read only what they output, plus their index operands
  // (dynamic-slice start scalars, gather indices): read = B(result) + B(indices).
  static Cost SliceLike(const Instruction& i) {
    return Movement(i, Bytes(i.shape) + OperandBytes(i, 1), Bytes(i.shape));
  }

  // dynamic-update-slice works in place: it reads the update and the start scalars and writes
  // only the update's bytes (the rest of the buffer is aliased, not copied).
  Cost HandleDynamicUpdateSlice(const Instruction& i) override {
    double update = Bytes(i.operand(1)->shape);
    return Movement(i, update + OperandBytes(i, 2), update);
  }

  // dot: flops = 2 * E * K, with E = batch * M * N and K = product of contracting dim sizes
  // (2 * batch * M * N * K). Matrix unit.
  Cost HandleDot(const Instruction& i) override {
    double contracted = 1;
    for (int64_t d : i.dot.lhs_contracting) contracted *= i.operand(0)->shape.dims[d];
    Cost c;
    c.unit = Unit::kMatrix;
    c.flops = 2 * Elements(i.shape) * contracted;
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // convolution (dense formula): flops = 2 * E * taps * in_features / groups, where E = batch *
  // out_features * output spatial size, taps = product of kernel spatial sizes, and
  // in_features / groups = the kernel's input-feature dim. Every tap counts, also taps that
  // fall on padding or between dilated input elements. Matrix unit.
  Cost HandleConvolution(const Instruction& i) override {
    const Shape& kernel = i.operand(1)->shape;
    double per_output = static_cast<double>(kernel.dims[i.conv.kernel_input_feature]);
    for (int64_t d : i.conv.kernel_spatial) per_output *= kernel.dims[d];
    Cost c;
    c.unit = Unit::kMatrix;
    c.flops = 2 * Elements(i.shape) * per_output;
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // reduce, argmax: flops = input elements - output elements (n - 1 steps to combine n values).
  Cost HandleReduce(const Instruction& i) override {
    Cost c;
    c.unit = Unit::kVector;
    c.flops = std::max(0.0, Elements(i.operand(0)->shape) - Elements(i.shape));
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // reduce-window: flops = E * (taps - 1), taps = product of window sizes (dense, like conv).
  Cost HandleReduceWindow(const Instruction& i) override {
    double taps = 1;
    for (const WindowDim& w : i.window) taps *= static_cast<double>(w.size);
    Cost c;
    c.unit = Unit::kVector;
    c.flops = Elements(i.shape) * (taps - 1);
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // cumsum: as XLA runs it (ReduceWindowRewriter; ScanCost below): a window sum of b taps per
  // element, the scan of the b-blocks' totals, and the broadcast add, with the intermediate
  // values' round trips through memory on top of reading the operand and writing the result.
  Cost HandleCumsum(const Instruction& i) override {
    const int64_t n = i.shape.dims[i.dimensions[0]];
    const double e = Elements(i.shape);
    const ScanCost scan = XlaScanCost(n > 0 ? e / static_cast<double>(n) : 0, n,
                                      static_cast<double>(ByteWidth(i.shape.dtype)));
    Cost c;
    c.unit = Unit::kVector;
    c.flops = scan.flops;
    c.bytes_read = OperandBytes(i) + scan.extra_bytes / 2;
    c.bytes_written = Bytes(i.shape) + scan.extra_bytes / 2;
    return c;
  }

  // sort along dim d, top-k along the last dim: a comparison sort of each row of n elements,
  // flops = rows * n * log2(n) = E_in * log2(n) (0 when n <= 1). Top-k counts as a full sort
  // of its rows; it writes values and s32 indices.
  Cost HandleSort(const Instruction& i) override {
    const Shape& in = i.operand(0)->shape;
    int64_t dim = i.opcode == Opcode::kSort ? i.dimensions[0] : in.rank() - 1;
    double n = static_cast<double>(in.dims[dim]);
    Cost c;
    c.unit = Unit::kVector;
    c.flops = n > 1 ? Elements(in) * std::log2(n) : 0;
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // Collectives, per partition, with V = B(operand) and G the group size:
  //   all-reduce          network 2 (G-1)/G V   flops (G-1)/G E  (its share of the reduction)
  //   all-gather          network (G-1) V
  //   reduce-scatter      network (G-1)/G V     flops (G-1)/G E_in
  //   all-to-all          network (G-1)/G V
  //   collective-permute  network V (assumes the partition is a source; 0 with no pairs)
  // Each reads its operand and writes its result. Network unit. G is the replica groups' size;
  // for empty groups (all partitions) the shapes' ratio where it fixes G (all-gather,
  // reduce-scatter, all-to-all with split != concat), else num_partitions.
  Cost HandleAllReduce(const Instruction& i) override {
    Cost c = CollectiveIo(i);
    const double share = Share(GroupOr(i, num_partitions_));
    c.network_bytes = 2 * share * Bytes(i.operand(0)->shape);
    c.flops = share * Elements(i.operand(0)->shape);
    return c;
  }
  Cost HandleAllGather(const Instruction& i) override {
    Cost c = CollectiveIo(i);
    const int64_t d = i.dimensions[0];
    const double g = static_cast<double>(GroupOr(i, Ratio(i.shape.dims[d], i.operand(0)->shape.dims[d])));
    c.network_bytes = std::max(0.0, g - 1) * Bytes(i.operand(0)->shape);
    return c;
  }
  Cost HandleReduceScatter(const Instruction& i) override {
    Cost c = CollectiveIo(i);
    const int64_t d = i.dimensions[0];
    const double share = Share(GroupOr(i, Ratio(i.operand(0)->shape.dims[d], i.shape.dims[d])));
    c.network_bytes = share * Bytes(i.operand(0)->shape);
    c.flops = share * Elements(i.operand(0)->shape);
    return c;
  }
  Cost HandleAllToAll(const Instruction& i) override {
    Cost c = CollectiveIo(i);
    const int64_t d = i.concat_dimension;
    const int64_t g = i.split_dimension == d
                          ? GroupOr(i, num_partitions_)
                          : GroupOr(i, Ratio(i.shape.dims[d], i.operand(0)->shape.dims[d]));
    c.network_bytes = Share(g) * Bytes(i.operand(0)->shape);
    return c;
  }
  Cost HandleCollectivePermute(const Instruction& i) override {
    Cost c = CollectiveIo(i);
    c.network_bytes = i.source_target_pairs.empty() ? 0 : Bytes(i.operand(0)->shape);
    return c;
  }

  // loop: trip_count * (cost of one execution of the body). Its unit is none: the body's
  // instructions carry their own units. Carried values stay in place (no copy).
  Cost HandleLoop(const Instruction& i) override {
    if (!i.body) throw Error("%" + i.name + ": loop has no body");
    Cost c = Scaled(ComputationCost(*i.body), static_cast<double>(i.trip_count));
    c.unit = Unit::kNone;
    return c;
  }

  // A collective's memory traffic: it reads its operand and writes its result.
  static Cost CollectiveIo(const Instruction& i) {
    Cost c;
    c.unit = Unit::kNetwork;
    c.bytes_read = Bytes(i.operand(0)->shape);
    c.bytes_written = Bytes(i.shape);
    return c;
  }
  // The replica groups' size, or `all` when the groups are empty (all partitions).
  static int64_t GroupOr(const Instruction& i, int64_t all) {
    return HasReplicaGroups(i) ? ReplicaGroupSizeOf(i) : all;
  }
  // num / den, or num_partitions when the ratio is undefined.
  int64_t Ratio(int64_t num, int64_t den) const { return den > 0 ? num / den : num_partitions_; }
  // (G-1)/G: the fraction of the data that leaves a partition.
  static double Share(int64_t g) { return g > 0 ? static_cast<double>(g - 1) / static_cast<double>(g) : 0; }

  int64_t num_partitions_;
  std::unordered_map<const Computation*, Cost> computation_cost_;
};

}  // namespace

Cost InstructionCost(const Instruction& instr, int64_t num_partitions) {
  return CostVisitor(num_partitions).Visit(instr);
}

ModuleCost AnalyzeCost(const Module& module, int64_t num_partitions) {
  if (!module.entry()) throw Error("module '" + module.name() + "' has no entry computation");
  CostVisitor visitor(num_partitions);
  ModuleCost result;
  // Walks `c`, executed `times` times in all: records per-execution costs of its instructions
  // and adds leaf costs, scaled, to their unit's total.
  std::function<void(const Computation&, double)> walk = [&](const Computation& c,
                                                              double times) {
    for (const auto& owned : c.instructions()) {
      const Instruction& i = *owned;
      result.per_instruction[&i] = visitor.Visit(i);
      if (i.opcode == Opcode::kLoop) {
        walk(*i.body, times * static_cast<double>(i.trip_count));
      } else {
        Cost& unit_total = result.per_unit[static_cast<int>(result.per_instruction[&i].unit)];
        unit_total += Scaled(result.per_instruction[&i], times);
      }
    }
  };
  walk(*module.entry(), 1);
  for (int u = 0; u < kNumUnits; ++u) {
    result.per_unit[u].unit = static_cast<Unit>(u);
    result.total += result.per_unit[u];
  }
  return result;
}

}  // namespace podsim::ir
