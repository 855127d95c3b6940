#include "ir/verifier.h"

#include <cmath>
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

// A sharding `s` (the instruction's `what`: "sharding" or "tiling") of a value of `shape`.
void CheckSharding(const Computation& c, const Instruction& i, const Sharding& s,
                   const Shape& shape, const std::string& what) {
  if (s.kind == Sharding::Kind::kMaximal && s.device < 0) {
    Fail(c, &i, what + " names a negative device");
  }
  if (s.kind != Sharding::Kind::kTiled) return;
  if (shape.is_tuple) Fail(c, &i, "tiled " + what + " on a tuple-shaped value");
  int64_t expected_rank = shape.rank() + (s.last_tile_dim_replicate ? 1 : 0);
  if (static_cast<int64_t>(s.tile_dims.size()) != expected_rank) {
    Fail(c, &i, what + " " + s.ToString() + " has " + std::to_string(s.tile_dims.size()) +
                    " tile dims, shape " + shape.ToString() + " needs " +
                    std::to_string(expected_rank));
  }
  int64_t count = 1;
  for (int64_t t : s.tile_dims) {
    if (t < 1) Fail(c, &i, what + " tile dims must be >= 1");
    if (__builtin_mul_overflow(count, t, &count)) {
      Fail(c, &i, what + " " + s.ToString() + ": the product of its tile dims overflows int64");
    }
  }
  if (count != s.devices.size()) {
    Fail(c, &i, what + " " + s.ToString() + " lists " + std::to_string(s.devices.size()) +
                    " devices, tile dims need " + std::to_string(count));
  }
  if (s.devices.is_iota()) return;  // a permutation of 0..N-1 by construction
  std::set<int64_t> seen;
  for (int64_t d : s.devices) {
    if (d < 0) Fail(c, &i, what + " names negative device " + std::to_string(d));
    if (!seen.insert(d).second) {
      Fail(c, &i, what + " " + s.ToString() + " names device " + std::to_string(d) + " twice");
    }
  }
}

void CheckShardings(const Computation& c, const Instruction& i) {
  if (i.sharding) CheckSharding(c, i, *i.sharding, i.shape, "sharding");
  // A manual region's tiling describes the full (automatic) side: the operand entering it, the
  // result leaving it.
  if (i.tiling && !i.operands.empty()) {
    const Shape& full = i.opcode == Opcode::kAutoToManual ? i.operands[0]->shape : i.shape;
    CheckSharding(c, i, *i.tiling, full, "tiling");
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
    if (i.argument_range) {
      const auto [low, high] = *i.argument_range;
      if (i.opcode != Opcode::kParameter) Fail(c, &i, "only a parameter takes a range");
      if (!(std::isfinite(low) && std::isfinite(high) && low < high)) {
        Fail(c, &i, "range={low,high} needs finite low < high");
      }
    }
    if (i.opcode == Opcode::kLoop) {
      if (!i.body || i.body->parent() != &m) Fail(c, &i, "loop body is not in this module");
      if (i.body == m.entry()) Fail(c, &i, "loop body cannot be the entry computation");
      if (i.body == &c) Fail(c, &i, "loop body cannot be the computation containing the loop");
    } else if (i.body != nullptr) {
      if (i.opcode != Opcode::kCustomCall) Fail(c, &i, "only a loop or a custom-call calls a computation");
      if (i.body->parent() != &m) Fail(c, &i, "region is not a computation of this module");
      if (i.body == m.entry() || i.body == &c) {
        Fail(c, &i, "region cannot be the entry or the computation that calls it");
      }
    }
    CheckShapeDims(c, i, i.shape);
    Shape expected = InferShape(i);
    if (expected != i.shape) {
      Fail(c, &i, "shape " + i.shape.ToString() + " differs from the inferred " +
                      expected.ToString());
    }
    CheckShardings(c, i);
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

// Each donated parameter exists, is aliased once, and has the shape of its output.
void VerifyOutputAliases(const Module& module) {
  const Computation& entry = *module.entry();
  const Instruction* root = entry.root();
  const std::vector<Instruction*> params = entry.parameters();
  std::set<int64_t> outputs, parameters;
  for (const OutputAlias& a : module.output_aliases()) {
    const std::string what = "input_output_alias {" + std::to_string(a.output) + "}: (" +
                             std::to_string(a.parameter) + ")";
    if (root == nullptr || root->opcode != Opcode::kTuple || a.output < 0 ||
        a.output >= static_cast<int64_t>(root->operands.size())) {
      Fail(entry, root, what + ": the entry root has no tuple element " + std::to_string(a.output));
    }
    const Instruction* param = nullptr;
    for (const Instruction* p : params) {
      if (p->parameter_number == a.parameter) param = p;
    }
    if (param == nullptr) {
      Fail(entry, root, what + ": the entry has no parameter " + std::to_string(a.parameter));
    }
    const Shape& out = root->operand(static_cast<size_t>(a.output))->shape;
    if (out != param->shape) {
      Fail(entry, root, what + ": output " + out.ToString() + " cannot reuse %" + param->name +
                            " " + param->shape.ToString());
    }
    if (!outputs.insert(a.output).second) Fail(entry, root, what + ": output aliased twice");
    if (!parameters.insert(a.parameter).second) Fail(entry, root, what + ": parameter donated twice");
  }
}

void Verify(const Module& module) {
  if (!module.entry()) throw Error("module '" + module.name() + "' has no entry computation");
  std::set<std::string> names;
  for (const auto& c : module.computations()) VerifyComputation(module, *c, names);
  VerifyOutputAliases(module);
  // Every value the module declares, summed, fits int64 bytes: sums of live buffers (the memory
  // model, the cost analysis) then cannot overflow either.
  int64_t total = 0;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (__builtin_add_overflow(total, i->shape.ByteSize(), &total)) {
        Fail(*c, i.get(), "the module's values add up to more than 2^63 bytes");
      }
    }
  }
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

void VerifyManualTilings(const Module& module, int64_t num_partitions) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (!i->tiling || i->tiling->kind != Sharding::Kind::kTiled) continue;
      if (i->tiling->NumDevices() != num_partitions) {
        Fail(*c, i.get(), "tiling " + i->tiling->ToString() + " spans " +
                              std::to_string(i->tiling->NumDevices()) +
                              " devices but the program runs on " +
                              std::to_string(num_partitions) +
                              " partitions; a manual region's tiling covers every partition");
      }
    }
  }
}

}  // namespace podsim::ir
