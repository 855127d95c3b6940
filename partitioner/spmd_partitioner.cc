// The SPMD lowering's driver: PartitionSpmd, the visitor's walk and dispatch, and the helpers
// handlers share. Handlers live in handlers_*.cc.

#include "partitioner/spmd_partitioner.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/verifier.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;
using ir::Opcode;

SpmdVisitor::SpmdVisitor(const PartitionOptions& options, ir::Module* out,
                         std::vector<CollectiveProvenance>* log, Shared* shared)
    : options_(options),
      out_(out),
      shared_(shared ? shared : &own_shared_),
      log_(log),
      resharder_(options.cost_model, log) {}

std::string SpmdVisitor::ClaimName(const std::string& name) {
  return shared_->claimed.insert(name).second ? name : out_->UniqueName(name);
}

const PartitionedValue& SpmdVisitor::ValueOf(const Instruction* orig) const {
  auto it = values_.find(orig);
  if (it == values_.end()) throw Error("internal: %" + orig->name + " not partitioned yet");
  return it->second;
}

TileLayout SpmdVisitor::Declared(const Instruction& orig) const {
  if (orig.shape.is_tuple) {
    throw Error("internal: %" + orig.name + " is a tuple and has no layout");
  }
  if (!orig.sharding) return TileLayout::Replicated(orig.shape.rank(), num_partitions());
  if (orig.sharding->kind == ir::Sharding::Kind::kManual) {
    throw Error("%" + orig.name + ": a {manual} value has no layout (it must stay inside its "
                "manual region, which ends at a manual-to-auto)");
  }
  auto it = declared_.find(&orig);
  if (it != declared_.end()) return it->second;
  try {
    TileLayout l = TileLayout::FromSharding(*orig.sharding, orig.shape.rank(), num_partitions());
    declared_.emplace(&orig, l);
    return l;
  } catch (const Error& e) {
    throw Error("%" + orig.name + ": " + e.what());
  }
}

const ShardedValue& SpmdVisitor::Operand(const Instruction& user, int64_t k) const {
  const PartitionedValue& v = ValueOf(user.operands[k]);
  if (v.is_tuple()) {
    throw Error("%" + user.name + ": operand " + std::to_string(k) + " is a tuple");
  }
  return v.array;
}

ShardedValue SpmdVisitor::Reshard(const ShardedValue& v, const TileLayout& to,
                                  const ReshardReason& why) {
  return resharder_.Reshard(sb(), v, to, why);
}

ShardedValue SpmdVisitor::OperandAs(const Instruction& user, int64_t k, const TileLayout& target,
                                    const std::string& note) {
  return Reshard(Operand(user, k), target, {user.name, "operand " + std::to_string(k), note});
}

Instruction* SpmdVisitor::CloneLocal(const Instruction& orig, std::vector<Instruction*> operands,
                                     const ir::Shape& shape) {
  auto i = std::make_unique<Instruction>(orig);
  i->name.clear();
  i->parent = nullptr;
  i->sharding.reset();
  i->operands = std::move(operands);
  i->shape = shape;
  Instruction* local = b().Add(std::move(i));
  if (local->shape != shape) {
    throw Error("internal: local %" + local->name + " has shape " + local->shape.ToString() +
                ", expected " + shape.ToString());
  }
  return local;
}

PartitionedValue SpmdVisitor::Visit(const Instruction& i) {
  const bool boundary = ir::FamilyOf(i.opcode) == ir::OpFamily::kManualBoundary;
  if (!boundary && i.sharding && i.sharding->kind == ir::Sharding::Kind::kManual) {
    return HandleManual(i);
  }
  return ir::Accept<PartitionedValue>(i, *this);
}

PartitionedValue SpmdVisitor::DefaultAction(const Instruction& i) {
  throw Error("%" + i.name + " (" + std::string(ir::OpcodeName(i.opcode)) +
              "): not supported by the SPMD lowering" +
              (ir::IsCollective(i.opcode) ? " (collectives must not appear in its input)" : ""));
}

PartitionedValue SpmdVisitor::HandleOpaque(const Instruction& i) {
  // A kernel podsim knows only by its cost (an imported custom-call): nothing says how it
  // could run on shards, so every partition runs it whole, on replicated operands, as XLA's
  // partitioner does for a custom-call it has no rule for.
  std::vector<Instruction*> operands;
  for (int64_t k = 0; k < static_cast<int64_t>(i.operands.size()); ++k) {
    const ir::Shape& s = i.operands[static_cast<size_t>(k)]->shape;
    if (s.is_tuple) {
      throw Error("%" + i.name + " (" + std::string(ir::OpcodeName(i.opcode)) + "): operand " +
                  std::to_string(k) + " is a tuple; the SPMD lowering replicates array operands");
    }
    operands.push_back(
        OperandAs(i, k, TileLayout::Replicated(s.rank(), num_partitions()), "an opaque kernel")
            .local);
  }
  Instruction* local = CloneLocal(i, std::move(operands), i.shape);
  // Its called computation (a general reduction's, over scalars) is copied as it is.
  if (i.body != nullptr) local->body = out_->CopyComputation(*i.body);
  if (i.shape.is_tuple) return ReplicatedTuple(local);
  return ShardedValue{local, i.shape, TileLayout::Replicated(i.shape.rank(), num_partitions())};
}

PartitionedValue SpmdVisitor::ReplicatedTuple(Instruction* local) {
  PartitionedValue v;
  v.tuple = local;
  for (size_t k = 0; k < local->shape.tuple_shapes.size(); ++k) {
    const ir::Shape& e = local->shape.tuple_shapes[k];
    Instruction* element = b().GetTupleElement(local, static_cast<int64_t>(k));
    v.elements.push_back(
        e.is_tuple ? ReplicatedTuple(element)
                   : PartitionedValue(ShardedValue{
                         element, e, TileLayout::Replicated(e.rank(), num_partitions())}));
  }
  return v;
}

void SpmdVisitor::Run(const ir::Computation& in, ir::Computation* out) {
  sb_ = std::make_unique<SpmdBuilder>(out, num_partitions());
  for (const auto& owned : in.instructions()) {
    const Instruction& i = *owned;
    const size_t mark = out->instructions().size();
    // Everything built for `i`, including the collectives resharding its operands and result,
    // takes its name scope, so time breakdowns charge communication to the op that needed it.
    ir::Builder::ScopeGuard scope(b(), i.scope);
    PartitionedValue v = Visit(i);
    if (!v.is_tuple() && !v.manual) {
      Instruction* local = v.array.local;
      // Name the handler's main result after the input instruction, when it made a new one.
      if (!ir::IsCollective(local->opcode)) {
        const auto& instrs = out->instructions();
        for (size_t n = instrs.size(); n-- > mark;) {
          if (instrs[n].get() == local) {
            local->name = ClaimName(i.name);
            break;
          }
        }
      }
      v.array = Reshard(v.array, Declared(i), {i.name, "result", ""});
    }
    values_[&i] = std::move(v);
  }
  const PartitionedValue& root = ValueOf(in.root());
  out->set_root(root.is_tuple() ? root.tuple : root.array.local);
}

void SpmdVisitor::RunBody(const ir::Computation& in, ir::Computation* out,
                          const std::vector<TileLayout>& carried) {
  Run(in, out);
  const PartitionedValue& root = ValueOf(in.root());
  if (!root.is_tuple() || root.elements.size() != carried.size()) {
    throw Error("loop body %" + in.name() + ": root is not a tuple of " +
                std::to_string(carried.size()) + " values");
  }
  std::vector<Instruction*> next;
  for (size_t k = 0; k < carried.size(); ++k) {
    const PartitionedValue& e = root.elements[k];
    if (e.is_tuple()) throw Error("loop body %" + in.name() + ": nested tuples are not supported");
    next.push_back(
        Reshard(e.array, carried[k], {in.root()->name, "carried value " + std::to_string(k), ""})
            .local);
  }
  out->set_root(b().Tuple(std::move(next)));
}

PartitionResult PartitionSpmd(const ir::Module& module, const PartitionOptions& options) {
  if (options.num_partitions < 1) {
    throw Error("num_partitions must be >= 1, got " + std::to_string(options.num_partitions));
  }
  if (module.entry() == nullptr) throw Error("module '" + module.name() + "' has no entry");
  PartitionResult result;
  result.num_partitions = options.num_partitions;
  result.module = std::make_unique<ir::Module>(module.name());
  // Local results take their input instruction's name; keep the names free for them.
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) result.module->ReserveName(i->name);
  }
  ir::Computation* entry = result.module->AddComputation(module.entry()->name(), true);
  SpmdVisitor visitor(options, result.module.get(), &result.provenance);
  visitor.Run(*module.entry(), entry);
  std::function<void(const PartitionedValue&, std::vector<ir::Sharding>&)> leaves =
      [&](const PartitionedValue& v, std::vector<ir::Sharding>& out) {
        if (!v.is_tuple()) {
          out.push_back(v.array.layout.ToSharding());
          return;
        }
        for (const PartitionedValue& e : v.elements) leaves(e, out);
      };
  for (const Instruction* p : module.entry()->parameters()) {
    if (p->shape.is_tuple) {
      leaves(visitor.ValueOf(p), result.parameter_shardings);
    } else {
      result.parameter_shardings.push_back(visitor.Declared(*p).ToSharding());
    }
  }
  const PartitionedValue& root = visitor.ValueOf(module.entry()->root());
  if (root.manual) {
    throw Error("%" + module.entry()->root()->name +
                ": the entry's result is inside a manual region; end it with manual-to-auto");
  }
  leaves(root, result.output_shardings);
  // Donations carry over where the output's shard is the parameter's shard (same sharding);
  // elsewhere the output needs a buffer of its own.
  std::vector<ir::OutputAlias> aliases;
  const Instruction* out_root = entry->root();
  const std::vector<Instruction*> out_params = entry->parameters();
  for (const ir::OutputAlias& a : module.output_aliases()) {
    if (out_root == nullptr || out_root->opcode != ir::Opcode::kTuple ||
        a.output >= static_cast<int64_t>(out_root->operands.size())) {
      continue;
    }
    for (const Instruction* p : out_params) {
      if (p->parameter_number == a.parameter &&
          p->shape == out_root->operand(static_cast<size_t>(a.output))->shape) {
        aliases.push_back(a);
      }
    }
  }
  result.module->set_output_aliases(std::move(aliases));
  ir::Verify(*result.module);
  return result;
}

std::string ExplainProvenance(const PartitionResult& result) {
  if (result.provenance.empty()) return "no collectives\n";
  std::string out;
  for (const CollectiveProvenance& p : result.provenance) out += p.ToString() + "\n";
  return out;
}

PartitionResult PropagateAndPartition(ir::Module& module, int64_t num_partitions) {
  PropagateShardings(module, num_partitions);
  PartitionOptions options;
  options.num_partitions = num_partitions;
  return PartitionSpmd(module, options);
}

}  // namespace podsim::partitioner
