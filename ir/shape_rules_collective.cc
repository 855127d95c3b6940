// Shape rules of collectives, loops, tuples and the manual-region boundaries (ir/shape_rules.h).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/shape_rules.h"

namespace podsim::ir::internal {

Shape ShapeRules::HandleAllReduce(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  CheckReplicaGroups(c, i);
  return c.Op(0);
}

Shape ShapeRules::HandleAllGather(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  CheckReplicaGroups(c, i);
  Shape a = c.Op(0);
  c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
  c.Dim(i.dimensions[0], a.rank(), "all-gather dimension");
  int64_t g = GroupSize(i);
  if (g == 0) {
    // All partitions: the result extent fixes the group size.
    c.Require(a.dims[i.dimensions[0]] > 0 && i.shape.rank() == a.rank() &&
                  i.shape.dims[i.dimensions[0]] % a.dims[i.dimensions[0]] == 0,
              "result dim must be a multiple of the operand dim");
    g = i.shape.dims[i.dimensions[0]] / a.dims[i.dimensions[0]];
  }
  a.dims[i.dimensions[0]] = c.Mul(a.dims[i.dimensions[0]], g, "the gathered extent");
  return a;
}

Shape ShapeRules::HandleReduceScatter(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  CheckReplicaGroups(c, i);
  Shape a = c.Op(0);
  c.Require(i.dimensions.size() == 1, "needs dimensions={d}");
  int64_t d = i.dimensions[0];
  c.Dim(d, a.rank(), "reduce-scatter dimension");
  int64_t g = GroupSize(i);
  if (g == 0) {
    c.Require(i.shape.rank() == a.rank() && i.shape.dims[d] > 0 &&
                  a.dims[d] % i.shape.dims[d] == 0,
              "operand dim must be a multiple of the result dim");
    g = a.dims[d] / i.shape.dims[d];
  }
  c.Require(a.dims[d] % g == 0, "dim " + std::to_string(d) + " (" + std::to_string(a.dims[d]) +
                                    ") does not divide into " + std::to_string(g) + " blocks");
  a.dims[d] /= g;
  return a;
}

Shape ShapeRules::HandleAllToAll(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  CheckReplicaGroups(c, i);
  Shape a = c.Op(0);
  c.Dim(i.split_dimension, a.rank(), "split_dimension");
  c.Dim(i.concat_dimension, a.rank(), "concat_dimension");
  int64_t g = GroupSize(i);
  if (g == 0) {
    if (i.split_dimension == i.concat_dimension) return a;
    c.Require(i.shape.rank() == a.rank() && a.dims[i.concat_dimension] > 0 &&
                  i.shape.dims[i.concat_dimension] % a.dims[i.concat_dimension] == 0,
              "result concat dim must be a multiple of the operand's");
    g = i.shape.dims[i.concat_dimension] / a.dims[i.concat_dimension];
  }
  c.Require(a.dims[i.split_dimension] % g == 0,
            "split dim " + std::to_string(i.split_dimension) + " (" +
                std::to_string(a.dims[i.split_dimension]) + ") does not divide into " +
                std::to_string(g) + " pieces");
  a.dims[i.split_dimension] /= g;
  a.dims[i.concat_dimension] = c.Mul(a.dims[i.concat_dimension], g, "the concatenated extent");
  return a;
}

Shape ShapeRules::HandleCollectivePermute(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  std::set<int64_t> srcs, dsts;
  for (const auto& [s, d] : i.source_target_pairs) {
    c.Require(s >= 0 && d >= 0, "negative partition in source_target_pairs");
    c.Require(srcs.insert(s).second, "source " + std::to_string(s) + " appears twice");
    c.Require(dsts.insert(d).second, "target " + std::to_string(d) + " appears twice");
  }
  return c.Op(0);
}

Shape ShapeRules::HandleLoop(const Instruction& i) {
  const Checker& c = c_;
  c.Require(i.body != nullptr, "needs body=");
  c.Require(i.trip_count >= 0, "trip_count must be >= 0");
  std::vector<Instruction*> params = i.body->parameters();
  c.Require(params.size() == i.operands.size() + 1,
            "body %" + i.body->name() + " has " + std::to_string(params.size()) +
                " parameters, needs iteration + " + std::to_string(i.operands.size()));
  c.Require(params[0]->shape == Shape(DType::kS32, {}),
            "body parameter 0 (iteration) must be s32[]");
  std::vector<Shape> carried;
  for (size_t k = 0; k < i.operands.size(); ++k) {
    c.Require(params[k + 1]->parameter_number == static_cast<int64_t>(k + 1) &&
                  params[k + 1]->shape == i.operands[k]->shape,
              "body parameter " + std::to_string(k + 1) + " does not match operand " +
                  std::to_string(k));
    carried.push_back(i.operands[k]->shape);
  }
  Shape out = Shape::Tuple(carried);
  const Instruction* root = i.body->root();
  c.Require(root && root->shape == out, "body root must be " + out.ToString());
  return out;
}

Shape ShapeRules::HandleTuple(const Instruction& i) {
  std::vector<Shape> shapes;
  for (const Instruction* o : i.operands) shapes.push_back(o->shape);
  return Shape::Tuple(shapes);
}

Shape ShapeRules::HandleManualBoundary(const Instruction& i) {
  const Checker& c = c_;
  const Opcode op = i.opcode;
  c.Operands(1);
  const Shape& x = c.Op(0);
  const bool enter = op == Opcode::kAutoToManual;
  c.Require(!i.shape.is_tuple || enter, "result must be an array");
  const Shape full = enter ? x : i.shape;
  c.Require(i.tiling.has_value(), "needs tiling={...}");
  const Sharding& t = *i.tiling;
  c.Require(t.kind == Sharding::Kind::kTiled || t.kind == Sharding::Kind::kReplicated,
            "tiling " + t.ToString() + " must be tiled or replicated");
  const int64_t tile_rank = full.rank() + (t.last_tile_dim_replicate ? 1 : 0);
  c.Require(t.kind != Sharding::Kind::kTiled ||
                static_cast<int64_t>(t.tile_dims.size()) == tile_rank,
            "tiling " + t.ToString() + " has " + std::to_string(t.tile_dims.size()) +
                " tile dims, the full shape " + full.ToString() + " needs " +
                std::to_string(tile_rank));
  for (int64_t d : t.tile_dims) c.Require(d >= 1, "tiling tile dims must be >= 1");
  const Shape shard(full.dtype, t.ShardDims(full.dims));
  if (enter) return shard;
  c.Require(x == shard, "manual region shapes do not match: the operand is " + x.ToString() +
                            ", but the shard of " + full.ToString() + " under " +
                            t.ToString() + " is " + shard.ToString());
  return i.shape;
}

Shape ShapeRules::HandleGetTupleElement(const Instruction& i) {
  const Checker& c = c_;
  c.Operands(1);
  const Shape& t = i.operands[0]->shape;
  c.Require(t.is_tuple, "operand is not a tuple");
  c.Require(i.tuple_index >= 0 && i.tuple_index < static_cast<int64_t>(t.tuple_shapes.size()),
            "index " + std::to_string(i.tuple_index) + " out of range");
  return t.tuple_shapes[i.tuple_index];
}

namespace {

// The importer's region forms whose operands determine the result (ir/instruction.h):
// "xla:scatter" (tables, an index array, updates) and the windowed "xla:reduce-window" and
// "xla:window-select". A form that does not fit is an error here, not in the interpreter.
void CheckRegionForm(const Checker& c, const Instruction& i) {
  auto shape = [&](size_t k) -> const Shape& {
    const Shape& s = i.operands[k]->shape;
    c.Require(!s.is_tuple, "operand " + std::to_string(k) + " is a tuple");
    return s;
  };
  const size_t n = i.operands.size() / 2;
  auto results = [&](const std::vector<int64_t>& dims, size_t first_typed) {
    std::vector<Shape> outs;
    for (size_t k = 0; k < n; ++k) outs.emplace_back(shape(first_typed + k).dtype, dims);
    const Shape want = n == 1 ? outs[0] : Shape::Tuple(outs);
    c.Require(i.shape == want,
              "its operands give " + want.ToString() + ", not " + i.shape.ToString());
  };
  const std::string& t = i.custom_call_target;
  if (t == "xla:scatter") {
    c.Require(n >= 1 && i.operands.size() % 2 == 1,
              "a scatter takes tables, one index array and as many updates");
    const Shape& table = shape(0);
    c.Require(table.rank() >= 1, "a scatter's table needs rank >= 1");
    c.Require(IsInteger(shape(n).dtype), "a scatter's index array must be integer");
    std::vector<int64_t> updates = shape(n).dims;
    updates.insert(updates.end(), table.dims.begin() + 1, table.dims.end());
    for (size_t k = 0; k < n; ++k) {
      c.Require(shape(k).dims == table.dims, "a scatter's tables differ in shape");
      c.Require(shape(n + 1 + k).dims == updates,
                "update " + std::to_string(k) + " is " + shape(n + 1 + k).ToString() +
                    "; the index array and the table's rows give " + DimsToString(updates));
    }
    results(table.dims, 0);
    return;
  }
  const bool select = t == "xla:window-select";
  if (!select && t != "xla:reduce-window") return;
  c.Require(select ? i.operands.size() == 1 : n >= 1 && i.operands.size() % 2 == 0,
            select ? "a window selection takes one array"
                   : "a reduce-window takes inputs and as many scalar inits");
  const Shape& in = shape(0);
  c.Require(i.window.size() == in.dims.size(), "needs one region_window dim per input dim");
  CheckWindow(c, i.window);
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    const int64_t e = WindowedExtent(c, in.dims[d], i.window[d]);
    c.Require(e >= 0, "the window does not fit dim " + std::to_string(d));
    out.push_back(e);
  }
  if (select) {
    c.Require(i.shape == Shape(DType::kS32, out),
              "a window selection gives " + Shape(DType::kS32, out).ToString());
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    c.Require(shape(k).dims == in.dims, "a reduce-window's inputs differ in shape");
    c.Require(shape(n + k).rank() == 0, "a reduce-window's inits must be scalars");
  }
  results(out, n);
}

}  // namespace

// Whatever it was declared to give; it needs a target to be told apart. A region form the
// interpreter evaluates must fit its operands.
Shape ShapeRules::HandleCustomCall(const Instruction& i) {
  const Checker& c = c_;
  c.Require(!i.custom_call_target.empty(), "needs custom_call_target=\"...\"");
  c.Require(i.custom_call_flops >= 0 && std::isfinite(i.custom_call_flops),
            "flops must be a finite number >= 0");
  if (i.body != nullptr) CheckRegionForm(c, i);
  return i.shape;
}

}  // namespace podsim::ir::internal
