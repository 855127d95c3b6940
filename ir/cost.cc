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
         op == Opcode::kRsqrt || op == Opcode::kTanh || op == Opcode::kPower;
}

class CostVisitor {
 public:
  explicit CostVisitor(int64_t num_partitions) : num_partitions_(num_partitions) {}

  // Cost of one execution of `i`.
  Cost Visit(const Instruction& i) {
    const Opcode op = i.opcode;
    if (IsElementwise(op)) return HandleElementwise(i);
    if (IsCollective(op)) return HandleCollective(i);
    switch (op) {
      case Opcode::kParameter:
      case Opcode::kConstant:
      case Opcode::kPartitionId:
      case Opcode::kTuple:
      case Opcode::kGetTupleElement:
      case Opcode::kAutoToManual:   // a view of the partition's shard (the SPMD lowering
      case Opcode::kManualToAuto:   // makes both an identity)
        return Cost{};  // bookkeeping: values already in memory or aliased
      case Opcode::kIota:
      case Opcode::kRandomUniform:
        return HandleGenerator(i);
      case Opcode::kBroadcast:
      case Opcode::kReshape:
      case Opcode::kTranspose:
      case Opcode::kPad:
      case Opcode::kConcatenate:
      case Opcode::kReverse:
        return HandleCopy(i);
      case Opcode::kSlice:
      case Opcode::kDynamicSlice:
      case Opcode::kGather:
        return HandleSliceLike(i);
      case Opcode::kDynamicUpdateSlice:
        return HandleDynamicUpdateSlice(i);
      case Opcode::kDot:
        return HandleDot(i);
      case Opcode::kConvolution:
        return HandleConvolution(i);
      case Opcode::kReduce:
      case Opcode::kArgmax:
        return HandleReduce(i);
      case Opcode::kReduceWindow:
        return HandleReduceWindow(i);
      case Opcode::kCumsum:
        return HandleCumsum(i);
      case Opcode::kSort:
      case Opcode::kTopK:
        return HandleSort(i);
      case Opcode::kLoop:
        return HandleLoop(i);
      default:
        break;
    }
    throw Error("%" + i.name + ": no cost rule for " + std::string(OpcodeName(op)));
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
  static Cost HandleGenerator(const Instruction& i) {
    Cost c;
    c.unit = Unit::kVector;
    if (i.opcode == Opcode::kRandomUniform) c.flops = Elements(i.shape);
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // Unary, binary, select: 1 flop per output element, or 1 transcendental for exp, log, sqrt,
  // rsqrt, tanh and power. Convert, compare, and/or, abs, negate and select count as flops.
  static Cost HandleElementwise(const Instruction& i) {
    Cost c;
    c.unit = Unit::kVector;
    (IsTranscendental(i.opcode) ? c.transcendentals : c.flops) = Elements(i.shape);
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // broadcast, reshape, transpose, pad, concatenate, reverse: read every operand (the pad value
  // too), write the result. A reshape counts as a copy: the IR has no layouts to prove it free.
  static Cost HandleCopy(const Instruction& i) {
    return Movement(i, OperandBytes(i), Bytes(i.shape));
  }

  // slice, dynamic-slice, gather read only what they output, plus their index operands
  // (dynamic-slice start scalars, gather indices): read = B(result) + B(indices).
  static Cost HandleSliceLike(const Instruction& i) {
    return Movement(i, Bytes(i.shape) + OperandBytes(i, 1), Bytes(i.shape));
  }

  // dynamic-update-slice works in place: it reads the update and the start scalars and writes
  // only the update's bytes (the rest of the buffer is aliased, not copied).
  static Cost HandleDynamicUpdateSlice(const Instruction& i) {
    double update = Bytes(i.operand(1)->shape);
    return Movement(i, update + OperandBytes(i, 2), update);
  }

  // dot: flops = 2 * E * K, with E = batch * M * N and K = product of contracting dim sizes
  // (2 * batch * M * N * K). Matrix unit.
  static Cost HandleDot(const Instruction& i) {
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
  static Cost HandleConvolution(const Instruction& i) {
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
  static Cost HandleReduce(const Instruction& i) {
    Cost c;
    c.unit = Unit::kVector;
    c.flops = std::max(0.0, Elements(i.operand(0)->shape) - Elements(i.shape));
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // reduce-window: flops = E * (taps - 1), taps = product of window sizes (dense, like conv).
  static Cost HandleReduceWindow(const Instruction& i) {
    double taps = 1;
    for (const WindowDim& w : i.window) taps *= static_cast<double>(w.size);
    Cost c;
    c.unit = Unit::kVector;
    c.flops = Elements(i.shape) * (taps - 1);
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // cumsum: flops = E - E / n for n = the scanned dim's size (n - 1 adds per row of n).
  static Cost HandleCumsum(const Instruction& i) {
    double n = static_cast<double>(i.shape.dims[i.dimensions[0]]);
    double e = Elements(i.shape);
    Cost c;
    c.unit = Unit::kVector;
    c.flops = n > 0 ? e - e / n : 0;
    c.bytes_read = OperandBytes(i);
    c.bytes_written = Bytes(i.shape);
    return c;
  }

  // sort along dim d, top-k along the last dim: a comparison sort of each row of n elements,
  // flops = rows * n * log2(n) = E_in * log2(n) (0 when n <= 1). Top-k counts as a full sort
  // of its rows; it writes values and s32 indices.
  static Cost HandleSort(const Instruction& i) {
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

  // Group size: the replica groups' size; for empty groups (all partitions) the shapes' ratio
  // where it fixes G (all-gather, reduce-scatter, all-to-all with split != concat), else
  // num_partitions.
  int64_t GroupSize(const Instruction& i) const {
    if (HasReplicaGroups(i)) return ReplicaGroupSizeOf(i);
    const Shape& in = i.operand(0)->shape;
    auto ratio = [&](int64_t num, int64_t den) { return den > 0 ? num / den : num_partitions_; };
    switch (i.opcode) {
      case Opcode::kAllGather:
        return ratio(i.shape.dims[i.dimensions[0]], in.dims[i.dimensions[0]]);
      case Opcode::kReduceScatter:
        return ratio(in.dims[i.dimensions[0]], i.shape.dims[i.dimensions[0]]);
      case Opcode::kAllToAll:
        if (i.split_dimension == i.concat_dimension) return num_partitions_;
        return ratio(i.shape.dims[i.concat_dimension], in.dims[i.concat_dimension]);
      default:
        return num_partitions_;
    }
  }

  // Collectives, per partition, with V = B(operand) and G the group size:
  //   all-reduce          network 2 (G-1)/G V   flops (G-1)/G E  (its share of the reduction)
  //   all-gather          network (G-1) V
  //   reduce-scatter      network (G-1)/G V     flops (G-1)/G E_in
  //   all-to-all          network (G-1)/G V
  //   collective-permute  network V (assumes the partition is a source; 0 with no pairs)
  // Each reads its operand and writes its result. Network unit.
  Cost HandleCollective(const Instruction& i) const {
    const double v = Bytes(i.operand(0)->shape);
    const double g = static_cast<double>(GroupSize(i));
    const double share = g > 0 ? (g - 1) / g : 0;  // fraction of the data that leaves
    Cost c;
    c.unit = Unit::kNetwork;
    c.bytes_read = v;
    c.bytes_written = Bytes(i.shape);
    switch (i.opcode) {
      case Opcode::kAllReduce:
        c.network_bytes = 2 * share * v;
        c.flops = share * Elements(i.operand(0)->shape);
        break;
      case Opcode::kAllGather:
        c.network_bytes = std::max(0.0, g - 1) * v;
        break;
      case Opcode::kReduceScatter:
        c.network_bytes = share * v;
        c.flops = share * Elements(i.operand(0)->shape);
        break;
      case Opcode::kAllToAll:
        c.network_bytes = share * v;
        break;
      case Opcode::kCollectivePermute:
        c.network_bytes = i.source_target_pairs.empty() ? 0 : v;
        break;
      default:
        break;
    }
    return c;
  }

  // loop: trip_count * (cost of one execution of the body). Its unit is none: the body's
  // instructions carry their own units. Carried values stay in place (no copy).
  Cost HandleLoop(const Instruction& i) {
    if (!i.body) throw Error("%" + i.name + ": loop has no body");
    Cost c = Scaled(ComputationCost(*i.body), static_cast<double>(i.trip_count));
    c.unit = Unit::kNone;
    return c;
  }

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
