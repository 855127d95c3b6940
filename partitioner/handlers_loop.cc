// SPMD handler for loop. Each carried value keeps one layout across iterations: the declared
// sharding of its body parameter (propagation unifies it with the loop operand, the body
// root's element and the loop's users). Operands are resharded to it on entry; the body is
// partitioned into a new computation whose root reshards each new carried value back to it.
// Loops that share a body computation and its carried layouts share the partitioned body.

#include <utility>

#include "base/error.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;

PartitionedValue SpmdVisitor::HandleLoop(const Instruction& i) {
  const ir::Computation& in_body = *i.body;
  const std::vector<Instruction*> params = in_body.parameters();
  if (params.size() != i.operands.size() + 1) {
    throw Error("%" + i.name + ": body %" + in_body.name() + " does not match the loop");
  }
  std::vector<TileLayout> carried;
  std::vector<Instruction*> init;
  for (size_t k = 0; k < i.operands.size(); ++k) {
    if (params[k + 1]->shape.is_tuple) {
      throw Error("%" + i.name + ": tuple-shaped carried values are not supported");
    }
    carried.push_back(Declared(*params[k + 1]));
    init.push_back(OperandAs(i, static_cast<int64_t>(k), carried.back()).local);
  }
  std::string key = in_body.name();
  for (const TileLayout& l : carried) key += " " + l.ToString();
  ir::Computation*& body = shared_->bodies[key];
  if (body == nullptr) {
    std::string name = in_body.name();
    while (out_->FindComputation(name) != nullptr) name += ".spmd";
    body = out_->AddComputation(name);
    SpmdVisitor child(options_, out_, log_, shared_);
    child.RunBody(in_body, body, carried);
  }
  Instruction* loop = b().Loop(std::move(init), body, i.trip_count);
  PartitionedValue v;
  v.tuple = loop;
  for (size_t k = 0; k < carried.size(); ++k) {
    PartitionedValue e;
    e.array = ShardedValue{b().GetTupleElement(loop, static_cast<int64_t>(k)), i.operands[k]->shape,
                           carried[k]};
    v.elements.push_back(std::move(e));
  }
  return v;
}

}  // namespace podsim::partitioner
