#include "partitioner/mpmd.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/literal.h"
#include "ir/visitor.h"

namespace podsim::partitioner {

namespace {

using ir::Instruction;
using ir::Literal;
using ir::Opcode;

// Largest value the folder keeps as a literal (partition-id arithmetic is scalars and small
// tables; anything bigger is emitted as in the SPMD program).
constexpr int64_t kMaxFoldedElements = 64;

double FoldBinary(Opcode op, ir::DType t, double a, double b, bool* ok) {
  switch (op) {
    case Opcode::kAdd:
      return a + b;
    case Opcode::kSubtract:
      return a - b;
    case Opcode::kMultiply:
      return a * b;
    case Opcode::kDivide:
      if (t == ir::DType::kS32) {
        if (b == 0) break;
        return std::trunc(a / b);
      }
      return a / b;
    case Opcode::kMaximum:
      return std::max(a, b);
    case Opcode::kMinimum:
      return std::min(a, b);
    case Opcode::kAnd:
      return (a != 0 && b != 0) ? 1 : 0;
    case Opcode::kOr:
      return (a != 0 || b != 0) ? 1 : 0;
    default:
      break;
  }
  *ok = false;
  return 0;
}

bool Compare(ir::Comparison c, double a, double b) {
  switch (c) {
    case ir::Comparison::kEq:
      return a == b;
    case ir::Comparison::kNe:
      return a != b;
    case ir::Comparison::kLt:
      return a < b;
    case ir::Comparison::kLe:
      return a <= b;
    case ir::Comparison::kGt:
      return a > b;
    case ir::Comparison::kGe:
      return a >= b;
  }
  return false;
}

// One device's program, built computation by computation.
class Specializer {
 public:
  Specializer(const ir::Module& spmd, int64_t device, int64_t n)
      : spmd_(spmd), device_(device), n_(n) {}

  std::unique_ptr<ir::Module> Run() {
    out_ = std::make_unique<ir::Module>(spmd_.name() + ".device_" + std::to_string(device_));
    for (const auto& c : spmd_.computations()) {
      ir::Computation* nc = out_->AddComputation(c->name(), c.get() == spmd_.entry());
      bodies_[c.get()] = nc;
    }
    for (const auto& c : spmd_.computations()) Specialize(*c, bodies_[c.get()]);
    return std::move(out_);
  }

  int64_t transfers() const { return transfers_; }

 private:
  // The folded value of `i` when it is a known small constant.
  const Literal* Folded(const Instruction* i) const {
    auto it = folded_.find(i);
    return it == folded_.end() ? nullptr : &it->second;
  }

  // Evaluates `i` when all its operands are folded and it is cheap integer-style arithmetic.
  std::optional<Literal> TryFold(const Instruction& i) const {
    Folder folder(*this);
    return ir::Accept<std::optional<Literal>>(i, folder);
  }

  // The fold of one op (nullopt: not foldable): partition-id and small constants always; the
  // elementwise arithmetic, convert, reshape, scalar broadcast and 1-D dynamic-slice (a
  // per-partition table lookup) of folded operands.
  class Folder : public ir::ConstVisitor<std::optional<Literal>> {
   public:
    explicit Folder(const Specializer& s) : s_(s) {}

    std::optional<Literal> DefaultAction(const Instruction&) override { return std::nullopt; }
    std::optional<Literal> HandlePartitionId(const Instruction&) override {
      return Literal::Scalar(ir::DType::kS32, static_cast<double>(s_.device_));
    }
    std::optional<Literal> HandleConstant(const Instruction& i) override {
      if (i.literal.NumElements() > kMaxFoldedElements || i.shape.is_tuple) return std::nullopt;
      return i.literal;
    }
    std::optional<Literal> HandleElementwiseBinary(const Instruction& i) override {
      return Map(i, [&](const Ops& ops, int64_t k, bool* ok) {
        const double a = ops[0]->values[k], b = ops[1]->values[k];
        const double v = i.opcode == Opcode::kCompare ? (Compare(i.comparison, a, b) ? 1 : 0)
                                                      : FoldBinary(i.opcode, i.shape.dtype, a, b, ok);
        return ir::RoundToDType(v, i.shape.dtype);
      });
    }
    std::optional<Literal> HandleSelect(const Instruction& i) override {
      return Map(i, [](const Ops& ops, int64_t k, bool*) {
        return ops[0]->values[k] != 0 ? ops[1]->values[k] : ops[2]->values[k];
      });
    }
    std::optional<Literal> HandleConvert(const Instruction& i) override {
      return Map(i, [&](const Ops& ops, int64_t k, bool*) {
        return ir::RoundToDType(ops[0]->values[k], i.shape.dtype);
      });
    }
    std::optional<Literal> HandleNegate(const Instruction& i) override {
      return Map(i, [](const Ops& ops, int64_t k, bool*) { return -ops[0]->values[k]; });
    }
    std::optional<Literal> HandleReshape(const Instruction& i) override {
      return Map(i, [](const Ops& ops, int64_t k, bool*) { return ops[0]->values[k]; });
    }
    std::optional<Literal> HandleBroadcast(const Instruction& i) override {  // of a scalar
      const Literal* x = s_.Folded(i.operands[0]);
      if (x != nullptr && x->NumElements() != 1) return std::nullopt;
      return Map(i, [](const Ops& ops, int64_t, bool*) { return ops[0]->values[0]; });
    }
    std::optional<Literal> HandleDynamicSlice(const Instruction& i) override {
      if (i.operands[0]->shape.rank() != 1) return std::nullopt;
      return Map(i, [&](const Ops& ops, int64_t k, bool*) {
        const int64_t size = i.slice_sizes[0], extent = ops[0]->NumElements();
        const int64_t start =
            std::clamp<int64_t>(static_cast<int64_t>(ops[1]->values[0]), 0, extent - size);
        return ops[0]->values[start + k];
      });
    }

   private:
    using Ops = std::vector<const Literal*>;

    // i's value with element k = fn(operands, k, &ok), when i is a small array whose operands
    // are all folded and no element cleared ok.
    template <typename Fn>
    std::optional<Literal> Map(const Instruction& i, Fn fn) const {
      if (i.shape.is_tuple || i.shape.NumElements() > kMaxFoldedElements) return std::nullopt;
      Ops ops;
      for (const Instruction* o : i.operands) {
        const Literal* l = s_.Folded(o);
        if (l == nullptr) return std::nullopt;
        ops.push_back(l);
      }
      const int64_t count = i.shape.NumElements();
      Literal out(i.shape, std::vector<double>(count, 0));
      bool ok = true;
      for (int64_t k = 0; k < count; ++k) out.values[k] = fn(ops, k, &ok);
      return ok ? std::optional<Literal>(std::move(out)) : std::nullopt;
    }

    const Specializer& s_;
  };

  // The output instruction for input `i` (emitting a constant for a folded value).
  Instruction* Get(const Instruction* i) {
    auto it = map_.find(i);
    if (it != map_.end()) return it->second;
    const Literal* l = Folded(i);
    if (l == nullptr) throw Error("internal: mpmd: %" + i->name + " has no value");
    Instruction* c = b_->Constant(*l);
    map_[i] = c;
    return c;
  }

  void Specialize(const ir::Computation& in, ir::Computation* out) {
    ir::Builder b(out);
    b_ = &b;
    for (const auto& owned : in.instructions()) {
      const Instruction& i = *owned;
      b.set_scope(i.scope);
      if (std::optional<Literal> l = TryFold(i)) {
        folded_[&i] = std::move(*l);
        continue;
      }
      if (ir::IsCollective(i.opcode)) {
        map_[&i] = Collective(i);
        continue;
      }
      auto copy = std::make_unique<Instruction>(i);
      copy->parent = nullptr;
      copy->sharding.reset();
      for (Instruction*& o : copy->operands) o = Get(o);
      if (copy->body) copy->body = bodies_.at(copy->body);
      Instruction* added = b.Add(std::move(copy), /*infer_shape=*/false);
      map_[&i] = added;
    }
    if (in.root()) out->set_root(Get(in.root()));
    b_ = nullptr;
  }

  // The members of this device's group (all partitions when the collective names none).
  std::vector<int64_t> GroupOf(const Instruction& i) const {
    if (i.iota_replica_groups) {
      const ir::IotaReplicaGroupList& g = *i.iota_replica_groups;
      const int64_t pos = g.devices.PositionOf(device_);
      if (pos < 0) throw Error("mpmd: %" + i.name + ": device not in its replica groups");
      const int64_t first = pos / g.group_size * g.group_size;
      std::vector<int64_t> members;
      for (int64_t k = 0; k < g.group_size; ++k) members.push_back(g.devices.At(first + k));
      return members;
    }
    if (i.replica_groups.empty()) {
      std::vector<int64_t> all(n_);
      for (int64_t p = 0; p < n_; ++p) all[p] = p;
      return all;
    }
    for (const auto& group : i.replica_groups) {
      if (std::find(group.begin(), group.end(), device_) != group.end()) return group;
    }
    throw Error("mpmd: %" + i.name + ": device " + std::to_string(device_) +
                " is in no replica group");
  }

  // `x` sent to `peer`, and what `peer` sent here.
  Instruction* Exchange(Instruction* x, int64_t peer) {
    ++transfers_;
    return b_->CollectivePermute(x, {{device_, peer}, {peer, device_}});
  }

  Instruction* Reduce(ir::ReduceKind kind, Instruction* a, Instruction* b) {
    switch (kind) {
      case ir::ReduceKind::kAdd:
        return b_->Add(a, b);
      case ir::ReduceKind::kMax:
        return b_->Max(a, b);
      case ir::ReduceKind::kMin:
        return b_->Min(a, b);
      case ir::ReduceKind::kAnd:
        return b_->And(a, b);
      case ir::ReduceKind::kOr:
        return b_->Or(a, b);
    }
    return a;
  }

  // Block j of the k equal blocks of x along dim d.
  Instruction* Block(Instruction* x, int64_t d, int64_t j, int64_t k) {
    const int64_t size = x->shape.dims[d] / k;
    std::vector<int64_t> starts(x->shape.rank(), 0), limits = x->shape.dims;
    starts[d] = j * size;
    limits[d] = (j + 1) * size;
    return b_->Slice(x, starts, limits);
  }

  Instruction* Collective(const Instruction& i) {
    Instruction* x = Get(i.operands[0]);
    if (i.opcode == Opcode::kCollectivePermute) {
      Instruction* received = nullptr;
      for (const auto& [src, dst] : i.source_target_pairs) {
        if (dst != device_) continue;
        if (src == device_) {
          received = x;
        } else {
          // Exchange when the source also receives from this device; else a one-way receive.
          bool back = false;
          for (const auto& [s2, d2] : i.source_target_pairs)
            back = back || (s2 == device_ && d2 == src);
          ++transfers_;
          received = back ? b_->CollectivePermute(x, {{device_, src}, {src, device_}})
                          : b_->CollectivePermute(x, {{src, device_}});
        }
      }
      for (const auto& [src, dst] : i.source_target_pairs) {
        if (src != device_ || dst == device_) continue;
        bool exchanged = false;
        for (const auto& [s2, d2] : i.source_target_pairs)
          exchanged = exchanged || (s2 == dst && d2 == device_);
        if (exchanged) continue;  // done with the receive above
        ++transfers_;
        b_->CollectivePermute(x, {{device_, dst}});
      }
      if (received) return received;
      return b_->BroadcastScalar(b_->ConstantScalar(x->shape.dtype, 0), x->shape.dims);
    }
    GroupExpander expand(*this, x);
    return ir::Accept<Instruction*>(i, expand);
  }

  // A group collective as this device's exchanges with each member of its group: values[j] is
  // member j's contribution (this device's own for j == self).
  class GroupExpander : public ir::ConstVisitor<Instruction*> {
   public:
    GroupExpander(Specializer& s, Instruction* x) : s_(s), x_(x) {}

    Instruction* DefaultAction(const Instruction& i) override {
      throw Error("internal: mpmd: %" + i.name + " is not a collective");
    }
    Instruction* HandleAllReduce(const Instruction& i) override {
      Begin(i);
      for (int64_t j = 0; j < k_; ++j) values_[j] = j == self_ ? x_ : s_.Exchange(x_, members_[j]);
      return Sum(i);
    }
    Instruction* HandleAllGather(const Instruction& i) override {
      Begin(i);
      for (int64_t j = 0; j < k_; ++j) values_[j] = j == self_ ? x_ : s_.Exchange(x_, members_[j]);
      return k_ == 1 ? x_ : s_.b_->Concatenate(values_, i.dimensions[0]);
    }
    Instruction* HandleReduceScatter(const Instruction& i) override {
      Begin(i);
      const int64_t d = i.dimensions[0];
      for (int64_t j = 0; j < k_; ++j) {
        values_[j] = j == self_ ? s_.Block(x_, d, self_, k_)
                                : s_.Exchange(s_.Block(x_, d, j, k_), members_[j]);
      }
      return Sum(i);
    }
    Instruction* HandleAllToAll(const Instruction& i) override {
      Begin(i);
      const int64_t sd = i.split_dimension;
      for (int64_t j = 0; j < k_; ++j) {
        Instruction* block = k_ == 1 ? x_ : s_.Block(x_, sd, j, k_);
        values_[j] = j == self_ ? block : s_.Exchange(block, members_[j]);
      }
      return k_ == 1 ? values_[0] : s_.b_->Concatenate(values_, i.concat_dimension);
    }

   private:
    void Begin(const Instruction& i) {
      members_ = s_.GroupOf(i);
      k_ = static_cast<int64_t>(members_.size());
      self_ = 0;
      while (members_[self_] != s_.device_) ++self_;
      values_.assign(k_, nullptr);
    }
    Instruction* Sum(const Instruction& i) {
      Instruction* acc = values_[0];
      for (int64_t j = 1; j < k_; ++j) acc = s_.Reduce(i.reduce_kind, acc, values_[j]);
      return acc;
    }

    Specializer& s_;
    Instruction* x_;
    std::vector<int64_t> members_;
    int64_t k_ = 0, self_ = 0;
    std::vector<Instruction*> values_;
  };

  const ir::Module& spmd_;
  const int64_t device_, n_;
  std::unique_ptr<ir::Module> out_;
  ir::Builder* b_ = nullptr;
  std::unordered_map<const ir::Computation*, ir::Computation*> bodies_;
  std::unordered_map<const Instruction*, Instruction*> map_;
  std::unordered_map<const Instruction*, Literal> folded_;
  int64_t transfers_ = 0;
};

}  // namespace

std::unique_ptr<ir::Module> SpecializeForDevice(const ir::Module& spmd, int64_t device,
                                                int64_t num_partitions, int64_t* transfers) {
  if (device < 0 || device >= num_partitions) {
    throw Error("mpmd: device " + std::to_string(device) + " is not one of the " +
                std::to_string(num_partitions) + " partitions");
  }
  Specializer s(spmd, device, num_partitions);
  std::unique_ptr<ir::Module> m = s.Run();
  if (transfers) *transfers += s.transfers();
  return m;
}

MpmdResult PartitionMpmd(const ir::Module& module, const MpmdOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PartitionOptions spmd_options = options.spmd;
  spmd_options.num_partitions = options.num_partitions;
  const PartitionResult spmd = PartitionSpmd(module, spmd_options);
  MpmdResult r;
  r.num_partitions = options.num_partitions;
  for (int64_t d = 0; d < options.num_partitions; ++d) {
    std::unique_ptr<ir::Module> program =
        SpecializeForDevice(*spmd.module, d, options.num_partitions, &r.transfers);
    r.instructions += program->InstructionCount();
    r.devices_done = d + 1;
    if (options.on_program) options.on_program(d, *program);
    if (options.keep_programs) r.programs.push_back(std::move(program));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.time_budget_seconds > 0 && elapsed > options.time_budget_seconds) break;
  }
  return r;
}

}  // namespace podsim::partitioner
