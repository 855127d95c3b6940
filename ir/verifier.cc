#include "ir/verifier.h"

#include <set>
#include <unordered_set>

#include "base/error.h"
#include "ir/shape_inference.h"

namespace podsim::ir {

namespace {

[[noreturn]] void Fail(const Computation& c, const Instruction* i, const std::string& what) {
  std::string where = "computation %" + c.name();
  if (i) where += ", instruction %" + i->name;
  throw Error(where + ": " + what);
}

void CheckShapeDims(const Computation& c, const Instruction& i, const Shape& s, int depth = 0) {
  if (depth > kMaxShapeDepth) {
    Fail(c, &i, "tuple shapes nest deeper than " + std::to_string(kMaxShapeDepth) + " levels");
  }
  if (s.is_tuple) {
    for (const Shape& e : s.tuple_shapes) CheckShapeDims(c, i, e, depth + 1);
    return;
  }
  if (s.rank() > kMaxRank) {
    Fail(c, &i, "shape has " + std::to_string(s.rank()) + " dimensions, more than " +
                    std::to_string(kMaxRank));
  }
  for (int64_t d : s.dims) {
    if (d < 0) Fail(c, &i, "shape " + s.ToString() + " has a negative dimension");
  }
  try {
    s.ByteSize();  // the element count and the byte size fit int64
  } catch (const Error& e) {
    Fail(c, &i, e.what());
  }
}

void CheckSharding(const Computation& c, const Instruction& i) {
  if (!i.sharding) return;
  const Sharding& s = *i.sharding;
  if (s.kind == Sharding::Kind::kMaximal && s.device < 0) {
    Fail(c, &i, "sharding names a negative device");
  }
  if (s.kind != Sharding::Kind::kTiled) return;
  if (i.shape.is_tuple) Fail(c, &i, "tiled sharding on a tuple-shaped instruction");
  int64_t expected_rank = i.shape.rank() + (s.last_tile_dim_replicate ? 1 : 0);
  if (static_cast<int64_t>(s.tile_dims.size()) != expected_rank) {
    Fail(c, &i, "sharding " + s.ToString() + " has " + std::to_string(s.tile_dims.size()) +
                    " tile dims, shape " + i.shape.ToString() + " needs " +
                    std::to_string(expected_rank));
  }
  int64_t count = 1;
  for (int64_t t : s.tile_dims) {
    if (t < 1) Fail(c, &i, "sharding tile dims must be >= 1");
    if (__builtin_mul_overflow(count, t, &count)) {
      Fail(c, &i, "sharding " + s.ToString() + ": the product of its tile dims overflows int64");
    }
  }
  if (count != s.devices.size()) {
    Fail(c, &i, "sharding " + s.ToString() + " lists " + std::to_string(s.devices.size()) +
                    " devices, tile dims need " + std::to_string(count));
  }
  if (s.devices.is_iota()) return;  // a permutation of 0..N-1 by construction
  std::set<int64_t> seen;
  for (int64_t d : s.devices) {
    if (d < 0) Fail(c, &i, "sharding names negative device " + std::to_string(d));
    if (!seen.insert(d).second) {
      Fail(c, &i, "sharding " + s.ToString() + " names device " + std::to_string(d) + " twice");
    }
  }
}

void VerifyComputation(const Module& m, const Computation& c, std::set<std::string>& names) {
  std::unordered_set<const Instruction*> defined;
  std::set<int64_t> param_numbers;
  for (const auto& owned : c.instructions()) {
    const Instruction& i = *owned;
    if (i.parent != &c) Fail(c, &i, "instruction's parent is not this computation");
    if (!names.insert(i.name).second) Fail(c, &i, "name is used twice in the module");
    for (size_t k = 0; k < i.operands.size(); ++k) {
      if (!defined.count(i.operands[k])) {
        Fail(c, &i, "operand " + std::to_string(k) +
                        " is not defined earlier in this computation");
      }
    }
    if (i.opcode == Opcode::kParameter && !param_numbers.insert(i.parameter_number).second) {
      Fail(c, &i, "parameter number " + std::to_string(i.parameter_number) + " is used twice");
    }
    if (i.opcode == Opcode::kLoop) {
      if (!i.body || i.body->parent() != &m) Fail(c, &i, "loop body is not in this module");
      if (i.body == m.entry()) Fail(c, &i, "loop body cannot be the entry computation");
      if (i.body == &c) Fail(c, &i, "loop body cannot be the computation containing the loop");
    }
    CheckShapeDims(c, i, i.shape);
    Shape expected = InferShape(i);
    if (expected != i.shape) {
      Fail(c, &i, "shape " + i.shape.ToString() + " differs from the inferred " +
                      expected.ToString());
    }
    CheckSharding(c, i);
    defined.insert(&i);
  }
  int64_t n = 0;
  for (int64_t p : param_numbers) {
    if (p != n++) Fail(c, nullptr, "parameter numbers must be 0.." + std::to_string(
                                       param_numbers.size() - 1) + " without gaps");
  }
  if (!c.root()) Fail(c, nullptr, "computation is empty");
  if (!defined.count(c.root())) Fail(c, nullptr, "root is not an instruction of it");
}

}  // namespace

void Verify(const Module& module) {
  if (!module.entry()) throw Error("module '" + module.name() + "' has no entry computation");
  std::set<std::string> names;
  for (const auto& c : module.computations()) VerifyComputation(module, *c, names);
  // Loop bodies must not (transitively) call themselves.
  for (const auto& c : module.computations()) {
    std::vector<const Computation*> stack = {c.get()};
    std::set<const Computation*> seen;
    while (!stack.empty()) {
      const Computation* cur = stack.back();
      stack.pop_back();
      for (const auto& i : cur->instructions()) {
        if (i->opcode != Opcode::kLoop) continue;
        if (i->body == c.get()) Fail(*c, nullptr, "computation calls itself through a loop");
        if (seen.insert(i->body).second) stack.push_back(i->body);
      }
    }
  }
}

}  // namespace podsim::ir
