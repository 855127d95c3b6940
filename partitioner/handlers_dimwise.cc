// SPMD handler for ops that work along some dims and pass the others through unchanged:
// concatenate, reverse, dynamic-slice, dynamic-update-slice and sort; also gather, cumsum,
// argmax and top-k when the dims they work along are not split, or as their fallback
// (handlers_scan_gather.cc). Pass-through dims keep any split (each partition runs the op on its tile,
// with the op's attributes narrowed to the tile); the dims the op works along are made whole
// first. For a split worked-on dim that is correct but moves the whole dim, and it is logged as
// "fallback" in the provenance (sort along a split dim, top-k whose k covers a whole tile,
// concatenate / reverse / dynamic-(update-)slice along a split dim). Convolution,
// reduce-window, pad and slice are windowed ops (handlers_window.cc, halo exchange).

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "base/error.h"
#include "ir/visitor.h"
#include "partitioner/spmd_visitor.h"

namespace podsim::partitioner {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

namespace {

// For each operand, the output dim each of its dims passes through to (-1: worked on).
using Pass = std::vector<std::vector<int64_t>>;

// One handler per dim-wise op (ir::ConstVisitor).
class PassThroughOf : public ir::ConstVisitor<Pass> {
 public:
  Pass DefaultAction(const Instruction& i) override {
    throw Error("internal: %" + i.name + " is not a dim-wise op");
  }
  Pass HandleConcatenate(const Instruction& i) override {
    Pass pass = Start(i);
    for (size_t k = 0; k < i.operands.size(); ++k) {
      IdentityExcept(i, k, pass, [&](int64_t d) { return d == i.dimensions[0]; });
    }
    return pass;
  }
  Pass HandleReverse(const Instruction& i) override {
    Pass pass = Start(i);
    IdentityExcept(i, 0, pass, [&](int64_t d) {
      return std::find(i.dimensions.begin(), i.dimensions.end(), d) != i.dimensions.end();
    });
    return pass;
  }
  Pass HandleDynamicSlice(const Instruction& i) override {
    Pass pass = Start(i);
    const Shape& x = i.operands[0]->shape;
    IdentityExcept(i, 0, pass, [&](int64_t d) { return i.slice_sizes[d] != x.dims[d]; });
    return pass;
  }
  Pass HandleDynamicUpdateSlice(const Instruction& i) override {
    Pass pass = Start(i);
    const Shape& x = i.operands[0]->shape;
    const Shape& u = i.operands[1]->shape;
    auto worked = [&](int64_t d) { return u.dims[d] != x.dims[d]; };
    IdentityExcept(i, 0, pass, worked);
    IdentityExcept(i, 1, pass, worked);
    return pass;
  }
  Pass HandleGather(const Instruction& i) override {
    Pass pass = Start(i);
    const int64_t r = i.operands[0]->shape.rank();
    const int64_t axis = i.dimensions[0];
    const int64_t ir = i.operands[1]->shape.rank();
    for (int64_t d = 0; d < r; ++d) pass[0][d] = d < axis ? d : d > axis ? d - 1 + ir : -1;
    for (int64_t m = 0; m < ir; ++m) pass[1][m] = axis + m;
    return pass;
  }
  Pass HandleCumsum(const Instruction& i) override { return AlongDim(i, i.dimensions[0]); }
  Pass HandleSort(const Instruction& i) override { return AlongDim(i, i.dimensions[0]); }
  Pass HandleArgmax(const Instruction& i) override {
    Pass pass = Start(i);
    const int64_t r = i.operands[0]->shape.rank();
    const int64_t a = i.dimensions[0];
    for (int64_t d = 0; d < r; ++d) pass[0][d] = d < a ? d : d > a ? d - 1 : -1;
    return pass;
  }
  Pass HandleTopK(const Instruction& i) override {
    return AlongDim(i, i.operands[0]->shape.rank() - 1);
  }

 private:
  static Pass Start(const Instruction& i) {
    Pass pass;
    for (const Instruction* o : i.operands) pass.emplace_back(o->shape.rank(), -1);
    return pass;
  }
  template <typename Worked>
  static void IdentityExcept(const Instruction& i, size_t k, Pass& pass, Worked worked) {
    for (int64_t d = 0; d < i.operands[k]->shape.rank(); ++d) pass[k][d] = worked(d) ? -1 : d;
  }
  // Operand 0 works along dim `along` and passes every other dim through.
  static Pass AlongDim(const Instruction& i, int64_t along) {
    Pass pass = Start(i);
    IdentityExcept(i, 0, pass, [&](int64_t d) { return d == along; });
    return pass;
  }
};

Pass PassThrough(const Instruction& i) {
  PassThroughOf pass_through;
  return ir::Accept<Pass>(i, pass_through);
}

}  // namespace

PartitionedValue SpmdVisitor::HandleDimWise(const Instruction& i) {
  const std::vector<std::vector<int64_t>> pass = PassThrough(i);
  const Shape& out_global = i.shape.is_tuple ? i.shape.tuple_shapes[0] : i.shape;
  const int64_t out_rank = out_global.rank();
  // Output dims some operand passes through; the rest must be whole.
  std::vector<bool> passed(out_rank, false);
  for (const auto& p : pass) {
    for (int64_t o : p) {
      if (o >= 0) passed[o] = true;
    }
  }
  // Compute layout: the declared one, or operand 0's pass-through split (for a tuple result,
  // and when cheaper), with the worked-on dims whole.
  auto whole = [&](TileLayout l) {
    for (int64_t o = 0; o < out_rank; ++o) {
      if (!passed[o] && l.tiles(o) > 1) l = l.Gathered(o);
    }
    return l;
  };
  std::vector<int64_t> from_operand(out_rank, -1);
  for (size_t d = 0; d < pass[0].size(); ++d) {
    if (pass[0][d] >= 0) from_operand[pass[0][d]] = static_cast<int64_t>(d);
  }
  const ShardedValue& x = Operand(i, 0);
  TileLayout layout = whole(x.layout.Projected(from_operand));
  if (!i.shape.is_tuple) {
    const TileLayout declared = Declared(i);
    const TileLayout via_declared = whole(declared);
    Resharder costs(options_.cost_model, nullptr);
    auto total = [&](const TileLayout& c) {
      double cost = costs.Cost(i.shape, c, declared);
      for (size_t k = 0; k < i.operands.size(); ++k) {
        const ShardedValue& v = Operand(i, k);
        cost += costs.Cost(v.global, v.layout, c.Projected(pass[k]));
      }
      return cost;
    };
    if (total(via_declared) <= total(layout)) layout = via_declared;
  }

  // Operands laid out to match; worked-on dims that were split are a fallback.
  std::vector<Instruction*> locals;
  std::vector<Shape> local_shapes;
  for (size_t k = 0; k < i.operands.size(); ++k) {
    const ShardedValue& v = Operand(i, k);
    std::vector<int64_t> worked_split;
    for (int64_t d = 0; d < v.global.rank(); ++d) {
      if (pass[k][d] < 0 && v.layout.tiles(d) > 1) worked_split.push_back(d);
    }
    std::string note;
    if (!worked_split.empty()) {
      note = "fallback: " + std::string(ir::OpcodeName(i.opcode)) + " needs dims " +
             ir::DimsToString(worked_split) + " whole";
    }
    ShardedValue got = OperandAs(i, static_cast<int64_t>(k), layout.Projected(pass[k]), note);
    locals.push_back(got.local);
    local_shapes.push_back(got.local->shape);
  }

  // The op on this partition's tile: attributes narrowed on pass-through dims.
  const Shape out_local = layout.ShardShape(out_global);
  std::unique_ptr<Instruction> li = std::make_unique<Instruction>(i);
  const Shape& x_local = local_shapes[0];
  switch (i.opcode) {
    case Opcode::kDynamicSlice:
      for (int64_t d = 0; d < x_local.rank(); ++d) {
        if (pass[0][d] < 0) continue;
        li->slice_sizes[d] = x_local.dims[d];
        locals[1 + d] = sb().S32(0);
      }
      break;
    case Opcode::kDynamicUpdateSlice:
      for (int64_t d = 0; d < x_local.rank(); ++d) {
        if (pass[0][d] >= 0) locals[2 + d] = sb().S32(0);
      }
      break;
    default:
      break;
  }
  Shape local_shape = out_local;
  if (i.shape.is_tuple) {
    std::vector<Shape> elements;
    for (const Shape& e : i.shape.tuple_shapes) elements.push_back(layout.ShardShape(e));
    local_shape = Shape::Tuple(std::move(elements));
  }
  Instruction* local = CloneLocal(*li, std::move(locals), local_shape);
  PartitionedValue v;
  if (!i.shape.is_tuple) {
    v.array = ShardedValue{local, i.shape, layout};
    return v;
  }
  v.tuple = local;
  for (size_t e = 0; e < i.shape.tuple_shapes.size(); ++e) {
    PartitionedValue ev;
    ev.array = ShardedValue{b().GetTupleElement(local, static_cast<int64_t>(e)),
                            i.shape.tuple_shapes[e], layout};
    v.elements.push_back(std::move(ev));
  }
  return v;
}

}  // namespace podsim::partitioner
