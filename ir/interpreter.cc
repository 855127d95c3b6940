// The interpreter driver: argument checks, the lockstep engine that runs one copy of the program
// per partition, loops and tuples, and the dispatch of every other opcode to its family's
// handler (interpreter_*.cc). Numerics are described in ir/interpreter_internal.h.

#include "ir/interpreter.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "ir/interpreter_internal.h"

namespace podsim::ir {

namespace interp {

void Fail(const Instruction& instr, const std::string& what) {
  throw Error("%" + instr.name + " (" + std::string(OpcodeName(instr.opcode)) + "): " + what);
}

double WrapS32(int64_t v) {
  return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(v)));
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) { return RowMajorStrides(dims); }

bool NextIndex(std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < dims[d]) return true;
    index[d] = 0;
  }
  return false;
}

void ForEachIndex(const std::vector<int64_t>& dims,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(dims.size(), 0);
  int64_t linear = 0;
  do {
    fn(index, linear++);
  } while (NextIndex(index, dims));
}

Literal LocalEvaluator::DefaultAction(const Instruction& i) {
  Fail(i, "the interpreter has no rule for this opcode here");
}

Literal LocalEvaluator::HandleTuple(const Instruction& i) {
  std::vector<Literal> elements;
  elements.reserve(ops_.size());
  for (const Literal* o : ops_) elements.push_back(*o);
  return Literal::Tuple(std::move(elements));
}

Literal LocalEvaluator::HandleGetTupleElement(const Instruction& i) {
  const Literal& t = Op(0);
  if (!t.shape.is_tuple || i.tuple_index < 0 ||
      i.tuple_index >= static_cast<int64_t>(t.elements.size())) {
    Fail(i, "operand has no tuple element " + std::to_string(i.tuple_index));
  }
  return t.elements[i.tuple_index];
}

}  // namespace interp

namespace {

using interp::Fail;
using interp::Operands;

// One instruction's value on every copy of the program (index = copy).
using Values = std::vector<Literal>;

// Where each instruction of a computation sits, and the last instruction that reads it (so its
// value can be dropped early).
struct Plan {
  std::unordered_map<const Instruction*, size_t> position;
  std::vector<size_t> last_use;
};

// Runs N copies of a program in lockstep: every copy evaluates instruction n before any copy
// moves on to instruction n+1, so at a collective all copies stand at the same instruction (the
// program is SPMD: every copy runs the same instruction sequence, loop bodies included) and
// exchange values there. Loops iterate all copies together.
class Lockstep {
 public:
  // Copy c runs as partition partition_ids[c]. Collectives are allowed only when the copies
  // are all the partitions (copy c = partition c).
  Lockstep(std::vector<int64_t> partition_ids, int64_t num_partitions, bool collectives_allowed)
      : partition_ids_(std::move(partition_ids)),
        num_partitions_(num_partitions),
        collectives_allowed_(collectives_allowed) {}

  // The root value of `comp` on every copy; params[number][copy] are its parameters.
  Values Run(const Computation& comp, std::vector<Values> params) {
    const Plan& plan = PlanFor(comp);
    const auto& instrs = comp.instructions();
    if (comp.root() == nullptr) throw Error("computation %" + comp.name() + " has no root");
    const size_t root = plan.position.at(comp.root());
    std::vector<Values> vals(instrs.size());
    for (size_t n = 0; n < instrs.size(); ++n) {
      const Instruction& i = *instrs[n];
      std::vector<const Values*> operands;
      operands.reserve(i.operands.size());
      for (const Instruction* o : i.operands) {
        auto it = plan.position.find(o);
        if (it == plan.position.end() || it->second >= n) {
          Fail(i, "operand %" + (o ? o->name : std::string("?")) + " is not defined before it");
        }
        operands.push_back(&vals[it->second]);
      }
      vals[n] = Step(i, operands, params);
      CheckShapes(i, vals[n]);
      for (const Instruction* o : i.operands) {
        size_t q = plan.position.at(o);
        if (plan.last_use[q] == n && q != root) vals[q] = Values();
      }
      if (plan.last_use[n] == n && n != root) vals[n] = Values();
    }
    return std::move(vals[root]);
  }

 private:
  const Plan& PlanFor(const Computation& comp) {
    auto it = plans_.find(&comp);
    if (it != plans_.end()) return it->second;
    Plan plan;
    const auto& instrs = comp.instructions();
    plan.last_use.resize(instrs.size());
    for (size_t n = 0; n < instrs.size(); ++n) {
      plan.position[instrs[n].get()] = n;
      plan.last_use[n] = n;
      for (const Instruction* o : instrs[n]->operands) {
        auto p = plan.position.find(o);
        if (p != plan.position.end()) plan.last_use[p->second] = n;
      }
    }
    return plans_.emplace(&comp, std::move(plan)).first->second;
  }

  Values Step(const Instruction& i, const std::vector<const Values*>& operands,
              std::vector<Values>& params) {
    const size_t copies = partition_ids_.size();
    if (i.opcode == Opcode::kParameter) {
      const int64_t k = i.parameter_number;
      if (k < 0 || k >= static_cast<int64_t>(params.size()) || params[k].empty()) {
        Fail(i, "no value for parameter number " + std::to_string(k));
      }
      return std::move(params[k]);
    }
    if (i.opcode == Opcode::kLoop) return RunLoop(i, operands);
    if (i.opcode == Opcode::kCustomCall && i.body != nullptr) return RunRegion(i, operands);
    if (i.opcode == Opcode::kAutoToManual) {
      Values out(copies);
      for (size_t c = 0; c < copies; ++c) {
        out[c] = interp::EvalAutoToManual(i, (*operands[0])[c], partition_ids_[c],
                                          num_partitions_);
      }
      return out;
    }
    if (i.opcode == Opcode::kManualToAuto) {
      if (!collectives_allowed_ && num_partitions_ > 1) {
        Fail(i, "leaving a manual region needs every partition: use InterpretSpmd (Interpret "
                "runs one partition of several)");
      }
      Operands inputs;
      for (const Literal& v : *operands[0]) inputs.push_back(&v);
      return Values(copies, interp::EvalManualToAuto(i, inputs));
    }
    if (IsCollective(i.opcode)) {
      if (!collectives_allowed_) {
        Fail(i, "a collective needs every partition: use InterpretSpmd (Interpret runs one "
                "partition of several)");
      }
      Operands inputs;
      for (const Literal& v : *operands[0]) inputs.push_back(&v);
      return interp::EvalCollective(i, inputs);
    }
    Values out(copies);
    Operands ops(operands.size());
    for (size_t c = 0; c < copies; ++c) {
      for (size_t k = 0; k < operands.size(); ++k) ops[k] = &(*operands[k])[c];
      interp::LocalEvaluator local(ops, partition_ids_[c]);
      out[c] = Accept<Literal>(i, local);
    }
    return out;
  }

  // A custom-call that applies its called computation (an imported general reduction, sort,
  // scatter, reduce-window or window selection): the computation runs on scalars, one partition
  // at a time.
  Values RunRegion(const Instruction& i, const std::vector<const Values*>& operands) {
    using Eval = Literal (*)(const Instruction&, const interp::Operands&, const interp::Apply&);
    static constexpr std::pair<std::string_view, Eval> kEvals[] = {
        {"xla:reduce", interp::EvalGeneralReduce},
        {"xla:sort", interp::EvalGeneralSort},
        {"xla:scatter", interp::EvalGeneralScatter},
        {"xla:reduce-window", interp::EvalGeneralReduceWindow},
        {"xla:window-select", interp::EvalWindowSelect},
    };
    Eval eval = nullptr;
    for (const auto& [target, e] : kEvals) {
      if (i.custom_call_target == target) eval = e;
    }
    if (eval == nullptr) {
      Fail(i, "custom-call \"" + i.custom_call_target + "\" is not interpretable");
    }
    const size_t copies = partition_ids_.size();
    Values out(copies);
    for (size_t c = 0; c < copies; ++c) {
      Operands ops;
      for (const Values* v : operands) ops.push_back(&(*v)[c]);
      Lockstep scalar({partition_ids_[c]}, num_partitions_, /*collectives_allowed=*/false);
      const interp::Apply apply = [&](std::vector<Literal> args) {
        std::vector<Values> params;
        for (Literal& a : args) params.push_back({std::move(a)});
        return std::move(scalar.Run(*i.body, std::move(params))[0]);
      };
      out[c] = eval(i, ops, apply);
    }
    return out;
  }

  Values RunLoop(const Instruction& i, const std::vector<const Values*>& operands) {
    if (i.body == nullptr) Fail(i, "has no body");
    const size_t copies = partition_ids_.size();
    std::vector<Values> carried;
    carried.reserve(operands.size());
    for (const Values* v : operands) carried.push_back(*v);
    for (int64_t iter = 0; iter < i.trip_count; ++iter) {
      std::vector<Values> params;
      params.reserve(carried.size() + 1);
      params.emplace_back(copies, Literal::Scalar(DType::kS32, static_cast<double>(iter)));
      for (Values& v : carried) params.push_back(std::move(v));
      Values next = Run(*i.body, std::move(params));
      for (size_t c = 0; c < copies; ++c) {
        if (next[c].elements.size() != carried.size()) {
          Fail(i, "body root is not a tuple of " + std::to_string(carried.size()) + " values");
        }
        for (size_t k = 0; k < carried.size(); ++k) {
          if (carried[k].size() != copies) carried[k].resize(copies);
          carried[k][c] = std::move(next[c].elements[k]);
        }
      }
    }
    Values out(copies);
    for (size_t c = 0; c < copies; ++c) {
      std::vector<Literal> elements;
      elements.reserve(carried.size());
      for (Values& v : carried) elements.push_back(std::move(v[c]));
      out[c] = Literal::Tuple(std::move(elements));
    }
    return out;
  }

  // Every result must have the instruction's declared shape (catches, e.g., a module built for
  // 4 partitions run on 2).
  static void CheckShapes(const Instruction& i, const Values& vals) {
    for (const Literal& v : vals) {
      if (v.shape != i.shape) {
        Fail(i, "evaluates to " + v.shape.ToString() + " but is declared " + i.shape.ToString() +
                    (IsCollective(i.opcode) ? " (was the module built for another partition "
                                              "count?)"
                                            : ""));
      }
    }
  }

  std::vector<int64_t> partition_ids_;
  int64_t num_partitions_;
  bool collectives_allowed_;
  std::unordered_map<const Computation*, Plan> plans_;
};

// Checks `arg` against `shape` (recursively for tuples) and rounds its values to their dtype.
Literal CheckedArgument(const Literal& arg, const Shape& shape, const std::string& what) {
  if (arg.shape != shape) {
    throw Error(what + ": expected " + shape.ToString() + ", got " + arg.shape.ToString());
  }
  if (shape.is_tuple) {
    if (arg.elements.size() != shape.tuple_shapes.size()) {
      throw Error(what + ": tuple has " + std::to_string(arg.elements.size()) + " elements, " +
                  shape.ToString() + " needs " + std::to_string(shape.tuple_shapes.size()));
    }
    std::vector<Literal> elements;
    for (size_t k = 0; k < arg.elements.size(); ++k) {
      elements.push_back(CheckedArgument(arg.elements[k], shape.tuple_shapes[k],
                                         what + " element " + std::to_string(k)));
    }
    return Literal::Tuple(std::move(elements));
  }
  if (arg.NumElements() != shape.NumElements()) {
    throw Error(what + ": has " + std::to_string(arg.NumElements()) + " values, " +
                shape.ToString() + " needs " + std::to_string(shape.NumElements()));
  }
  Literal out = arg;
  for (double& v : out.values) v = RoundToDType(v, shape.dtype);
  return out;
}

// The first element type in `s` the interpreter does not compute, if any.
std::optional<DType> UninterpretableType(const Shape& s) {
  if (!s.is_tuple) return IsInterpretable(s.dtype) ? std::nullopt : std::optional(s.dtype);
  for (const Shape& e : s.tuple_shapes) {
    if (auto t = UninterpretableType(e)) return t;
  }
  return std::nullopt;
}

// The module, checked to have an entry and only element types the interpreter computes.
const Computation& EntryOf(const Module& module) {
  if (module.entry() == nullptr) throw Error("module " + module.name() + " has no entry");
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (auto t = UninterpretableType(i->shape)) {
        interp::Fail(*i, "element type " + std::string(DTypeName(*t)) +
                             " is not interpretable (the interpreter computes f32, bf16, f16, "
                             "f64, s32 and pred; the cost model and simulator take every type)");
      }
    }
  }
  return *module.entry();
}

// The entry parameters, checked to be numbered 0..n-1, and matched against `count` arguments.
std::vector<Instruction*> EntryParameters(const Computation& entry, size_t count,
                                          const std::string& where) {
  std::vector<Instruction*> params = entry.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->parameter_number != static_cast<int64_t>(k)) {
      throw Error("entry %" + entry.name() + ": parameter numbers must be 0.." +
                  std::to_string(params.size() - 1));
    }
  }
  if (count != params.size()) {
    throw Error(where + "entry %" + entry.name() + " takes " + std::to_string(params.size()) +
                " argument(s), got " + std::to_string(count));
  }
  return params;
}

std::string ParameterLabel(const Instruction& p) {
  return "parameter " + std::to_string(p.parameter_number) + " (%" + p.name + ")";
}

}  // namespace

Literal Interpret(const Module& module, const std::vector<Literal>& args, int64_t partition_id,
                  int64_t num_partitions) {
  if (num_partitions < 1 || partition_id < 0 || partition_id >= num_partitions) {
    throw Error("partition id " + std::to_string(partition_id) + " is not in [0, " +
                std::to_string(num_partitions) + ")");
  }
  const Computation& entry = EntryOf(module);
  std::vector<Instruction*> params = EntryParameters(entry, args.size(), "");
  std::vector<Values> values;
  for (size_t k = 0; k < params.size(); ++k) {
    values.push_back({CheckedArgument(args[k], params[k]->shape, ParameterLabel(*params[k]))});
  }
  Lockstep engine({partition_id}, num_partitions, num_partitions == 1);
  return std::move(engine.Run(entry, std::move(values))[0]);
}

std::vector<Literal> InterpretSpmd(const Module& module,
                                   const std::vector<std::vector<Literal>>& args,
                                   int64_t num_partitions) {
  if (num_partitions < 1) {
    throw Error("num_partitions must be >= 1, got " + std::to_string(num_partitions));
  }
  if (static_cast<int64_t>(args.size()) != num_partitions) {
    throw Error("InterpretSpmd: got arguments for " + std::to_string(args.size()) +
                " partition(s), expected " + std::to_string(num_partitions));
  }
  const Computation& entry = EntryOf(module);
  std::vector<Instruction*> params;
  std::vector<Values> values;
  std::vector<int64_t> ids;
  for (int64_t p = 0; p < num_partitions; ++p) {
    const std::string where = "partition " + std::to_string(p) + ": ";
    params = EntryParameters(entry, args[p].size(), where);
    values.resize(params.size());
    for (size_t k = 0; k < params.size(); ++k) {
      values[k].push_back(
          CheckedArgument(args[p][k], params[k]->shape, where + ParameterLabel(*params[k])));
    }
    ids.push_back(p);
  }
  Lockstep engine(std::move(ids), num_partitions, /*collectives_allowed=*/true);
  return engine.Run(entry, std::move(values));
}

}  // namespace podsim::ir
