// Collectives, evaluated once the lockstep driver holds the operand of every partition:
// all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute (semantics in
// ir/instruction.h). Reductions fold the members' values in group order, in double (exact int64
// for s32 sums), and round once: every member of a group gets bit-identical results.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/interpreter_internal.h"

namespace podsim::ir::interp {

namespace {

using Groups = std::vector<std::vector<int64_t>>;

// The replica groups of `i` on `n` partitions (empty = one group of all, in partition order);
// every partition must be in exactly one group.
Groups GroupsOf(const Instruction& i, int64_t n) {
  if (!HasReplicaGroups(i)) {
    std::vector<int64_t> all(n);
    for (int64_t p = 0; p < n; ++p) all[p] = p;
    return {all};
  }
  Groups groups = ReplicaGroupsOf(i);
  std::vector<int> seen(n, 0);
  for (const auto& g : groups) {
    for (int64_t p : g) {
      if (p < 0 || p >= n) {
        Fail(i, "replica group names partition " + std::to_string(p) + " but there are " +
                    std::to_string(n) + " partitions");
      }
      ++seen[p];
    }
  }
  for (int64_t p = 0; p < n; ++p) {
    if (seen[p] != 1) {
      Fail(i, "partition " + std::to_string(p) + " is in " + std::to_string(seen[p]) +
                  " replica groups (needs exactly one)");
    }
  }
  return groups;
}

// The block [start, start + size) of x along dim d.
Literal SliceAlong(const Literal& x, int64_t d, int64_t start, int64_t size) {
  Shape shape = x.shape;
  shape.dims[d] = size;
  Literal out = Literal::Zeros(shape);
  const std::vector<int64_t> xs = Strides(x.shape.dims);
  ForEachIndex(shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = start * xs[d];
    for (size_t k = 0; k < idx.size(); ++k) src += idx[k] * xs[k];
    out.values[linear] = x.values[src];
  });
  return out;
}

// The pieces concatenated along dim d, in order.
Literal ConcatAlong(const std::vector<const Literal*>& pieces, int64_t d) {
  Shape shape = pieces.at(0)->shape;
  shape.dims[d] = 0;
  for (const Literal* p : pieces) shape.dims[d] += p->shape.dims[d];
  Literal out = Literal::Zeros(shape);
  const std::vector<int64_t> os = Strides(shape.dims);
  int64_t offset = 0;
  for (const Literal* p : pieces) {
    ForEachIndex(p->shape.dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
      int64_t dst = offset * os[d];
      for (size_t k = 0; k < idx.size(); ++k) dst += idx[k] * os[k];
      out.values[dst] = p->values[linear];
    });
    offset += p->shape.dims[d];
  }
  return out;
}

// The elementwise reduction of the group members' inputs, folded in group order.
Literal ReduceGroup(const Instruction& i, const Operands& inputs,
                    const std::vector<int64_t>& group) {
  const Literal& first = *inputs[group[0]];
  Literal out = Literal::Zeros(first.shape);
  for (size_t k = 0; k < out.values.size(); ++k) {
    Accumulator acc(i.reduce_kind, first.shape.dtype);
    for (int64_t p : group) acc.Add(inputs[p]->values[k]);
    out.values[k] = acc.Result();
  }
  return out;
}

void RequireSameShapes(const Instruction& i, const Operands& inputs) {
  for (size_t p = 1; p < inputs.size(); ++p) {
    if (inputs[p]->shape != inputs[0]->shape) {
      Fail(i, "partition " + std::to_string(p) + " holds " + inputs[p]->shape.ToString() +
                  ", partition 0 holds " + inputs[0]->shape.ToString());
    }
  }
}

// Block size of dim d split into g pieces.
int64_t BlockSize(const Instruction& i, const Literal& x, int64_t d, int64_t g) {
  if (x.shape.dims.at(d) % g != 0) {
    Fail(i, "dim " + std::to_string(d) + " (" + std::to_string(x.shape.dims[d]) +
                ") does not divide into " + std::to_string(g) + " pieces");
  }
  return x.shape.dims[d] / g;
}

}  // namespace

std::vector<Literal> EvalCollective(const Instruction& i, const Operands& inputs) {
  const int64_t n = static_cast<int64_t>(inputs.size());
  RequireSameShapes(i, inputs);
  std::vector<Literal> out(n);
  if (i.opcode == Opcode::kCollectivePermute) {
    for (int64_t p = 0; p < n; ++p) out[p] = Literal::Zeros(inputs[p]->shape);
    for (const auto& [source, target] : i.source_target_pairs) {
      if (source < 0 || source >= n || target < 0 || target >= n) {
        Fail(i, "pair {" + std::to_string(source) + "," + std::to_string(target) +
                    "} names a partition outside [0, " + std::to_string(n) + ")");
      }
      out[target] = *inputs[source];
    }
    return out;
  }
  for (const std::vector<int64_t>& group : GroupsOf(i, n)) {
    const int64_t g = static_cast<int64_t>(group.size());
    switch (i.opcode) {
      case Opcode::kAllReduce: {
        const Literal sum = ReduceGroup(i, inputs, group);
        for (int64_t p : group) out[p] = sum;
        break;
      }
      case Opcode::kAllGather: {
        std::vector<const Literal*> pieces;
        for (int64_t p : group) pieces.push_back(inputs[p]);
        const Literal all = ConcatAlong(pieces, i.dimensions.at(0));
        for (int64_t p : group) out[p] = all;
        break;
      }
      case Opcode::kReduceScatter: {
        const int64_t d = i.dimensions.at(0);
        const Literal sum = ReduceGroup(i, inputs, group);
        const int64_t block = BlockSize(i, sum, d, g);
        for (int64_t j = 0; j < g; ++j) out[group[j]] = SliceAlong(sum, d, j * block, block);
        break;
      }
      case Opcode::kAllToAll: {
        // Member j splits its input into g pieces along split_dimension and sends piece q to
        // member q; member q concatenates what it receives along concat_dimension in source
        // order.
        const int64_t sd = i.split_dimension, cd = i.concat_dimension;
        std::vector<std::vector<Literal>> pieces(g);  // pieces[source][target]
        for (int64_t j = 0; j < g; ++j) {
          const Literal& x = *inputs[group[j]];
          const int64_t block = BlockSize(i, x, sd, g);
          for (int64_t q = 0; q < g; ++q) pieces[j].push_back(SliceAlong(x, sd, q * block, block));
        }
        for (int64_t q = 0; q < g; ++q) {
          std::vector<const Literal*> received;
          for (int64_t j = 0; j < g; ++j) received.push_back(&pieces[j][q]);
          out[group[q]] = ConcatAlong(received, cd);
        }
        break;
      }
      default:
        Fail(i, "not a collective");
    }
  }
  return out;
}

}  // namespace podsim::ir::interp
