#include "sim/program/functional_run.h"

#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>

#include "base/error.h"
#include "ir/interpreter.h"
#include "ir/visitor.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/functional.h"

namespace podsim::sim {

double MaxAbsDifference(const ir::Literal& a, const ir::Literal& b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.shape != b.shape) return kInf;
  double worst = 0;
  if (a.shape.is_tuple) {
    for (size_t k = 0; k < a.elements.size() && k < b.elements.size(); ++k) {
      worst = std::max(worst, MaxAbsDifference(a.elements[k], b.elements[k]));
    }
    return worst;
  }
  for (size_t k = 0; k < a.values.size() && k < b.values.size(); ++k) {
    const double x = a.values[k], y = b.values[k];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return kInf;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return kInf;
      continue;
    }
    worst = std::max(worst, std::abs(x - y));
  }
  return worst;
}

namespace {

using ir::Instruction;
using ir::Literal;
using ir::Opcode;
using Values = std::vector<Literal>;  // one per partition

// Row-major offset of `index` in a shape of `dims` laid out in the dim order `order`.
int64_t OffsetInOrder(const std::vector<int64_t>& index, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& order) {
  int64_t offset = 0;
  for (int64_t d : order) offset = offset * dims[static_cast<size_t>(d)] + index[static_cast<size_t>(d)];
  return offset;
}

// Dim order with `first` moved to the front.
std::vector<int64_t> MajorFirst(int64_t rank, int64_t first) {
  std::vector<int64_t> order = {first};
  for (int64_t d = 0; d < rank; ++d) {
    if (d != first) order.push_back(d);
  }
  return order;
}

// Calls f(index, linear) over a shape's elements in row-major order.
template <typename F>
void ForEachIndex(const std::vector<int64_t>& dims, F&& f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    f(index, linear);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

// The collective's operand as the flat buffer the schedule semantics expect (collective.h):
// the gathered / scattered / split dimension made major.
std::vector<float> ToFlat(const Instruction& i, const Literal& x) {
  std::vector<float> out(x.values.size());
  int64_t major = -1;
  if (i.opcode == Opcode::kAllGather || i.opcode == Opcode::kReduceScatter) major = i.dimensions.at(0);
  if (i.opcode == Opcode::kAllToAll) major = i.split_dimension;
  if (major <= 0) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(x.values[k]);
    return out;
  }
  const std::vector<int64_t> order = MajorFirst(x.shape.rank(), major);
  ForEachIndex(x.shape.dims, [&](const std::vector<int64_t>& index, int64_t linear) {
    out[static_cast<size_t>(OffsetInOrder(index, x.shape.dims, order))] =
        static_cast<float>(x.values[static_cast<size_t>(linear)]);
  });
  return out;
}

// The schedule's output buffer back in the collective's result shape.
Literal FromFlat(const Instruction& i, const std::vector<float>& flat, int64_t group_size) {
  Literal out = Literal::Zeros(i.shape);
  const auto& dims = i.shape.dims;
  auto value = [&](int64_t offset) {
    return ir::RoundToDType(static_cast<double>(flat[static_cast<size_t>(offset)]), i.shape.dtype);
  };
  if (i.opcode == Opcode::kAllToAll) {
    // Buffer: blocks from each source in group order; block j holds the source's piece in
    // split-major order, of shape `block` (the result with the concat dim divided by G).
    const int64_t s = i.split_dimension, c = i.concat_dimension;
    std::vector<int64_t> block = dims;
    block[static_cast<size_t>(c)] /= group_size;
    int64_t block_elements = 1;
    for (int64_t d : block) block_elements *= d;
    const std::vector<int64_t> order = MajorFirst(i.shape.rank(), s);
    ForEachIndex(dims, [&](const std::vector<int64_t>& index, int64_t linear) {
      std::vector<int64_t> local = index;
      const int64_t source = index[static_cast<size_t>(c)] / block[static_cast<size_t>(c)];
      local[static_cast<size_t>(c)] = index[static_cast<size_t>(c)] % block[static_cast<size_t>(c)];
      out.values[static_cast<size_t>(linear)] =
          value(source * block_elements + OffsetInOrder(local, block, order));
    });
    return out;
  }
  int64_t major = -1;
  if (i.opcode == Opcode::kAllGather || i.opcode == Opcode::kReduceScatter) major = i.dimensions.at(0);
  if (major <= 0) {
    for (size_t k = 0; k < out.values.size(); ++k) out.values[k] = value(static_cast<int64_t>(k));
    return out;
  }
  const std::vector<int64_t> order = MajorFirst(i.shape.rank(), major);
  ForEachIndex(dims, [&](const std::vector<int64_t>& index, int64_t linear) {
    out.values[static_cast<size_t>(linear)] = value(OffsetInOrder(index, dims, order));
  });
  return out;
}

class FunctionalRunner {
 public:
  FunctionalRunner(const ProgramPlan& plan, const topo::Topology& topology)
      : plan_(plan), topology_(topology), n_(plan.num_partitions) {
    for (size_t k = 0; k < plan.collectives.size(); ++k) {
      collective_index_[plan.collectives[k].instr] = static_cast<int32_t>(k);
      CollectiveCheck check;
      check.instruction = plan.collectives[k].instr->name;
      check.checked = false;
      checks_.push_back(check);
    }
  }

  Values Run(const ir::Computation& comp, std::vector<Values> params) {
    Env env;
    StepVisitor step(*this, env, params);
    for (const auto& owned : comp.instructions()) {
      const Instruction& i = *owned;
      env[&i] = ir::Accept<Values>(i, step);
    }
    return env.at(comp.root());
  }

  std::vector<CollectiveCheck> TakeChecks() { return std::move(checks_); }

 private:
  using Env = std::unordered_map<const Instruction*, Values>;

  // One instruction's values on every partition, given the values of the ones before it.
  class StepVisitor : public ir::ConstVisitor<Values> {
   public:
    StepVisitor(FunctionalRunner& runner, const Env& env, const std::vector<Values>& params)
        : runner_(runner), env_(env), params_(params) {}

    Values HandleParameter(const Instruction& i) override {
      return params_.at(static_cast<size_t>(i.parameter_number));
    }
    Values HandleTuple(const Instruction& i) override {
      Values out(static_cast<size_t>(runner_.n_));
      for (size_t p = 0; p < out.size(); ++p) {
        std::vector<Literal> elements;
        for (const Instruction* o : i.operands) elements.push_back(env_.at(o)[p]);
        out[p] = Literal::Tuple(std::move(elements));
      }
      return out;
    }
    Values HandleGetTupleElement(const Instruction& i) override {
      Values out(static_cast<size_t>(runner_.n_));
      for (size_t p = 0; p < out.size(); ++p) {
        out[p] = env_.at(i.operand(0))[p].elements.at(static_cast<size_t>(i.tuple_index));
      }
      return out;
    }
    Values HandleLoop(const Instruction& i) override { return runner_.RunLoop(i, env_); }
    Values HandleCollective(const Instruction& i) override {
      return runner_.Collective(i, env_.at(i.operand(0)));
    }
    // Everything else runs on each partition alone.
    Values DefaultAction(const Instruction& i) override { return runner_.Local(i, env_); }

   private:
    FunctionalRunner& runner_;
    const Env& env_;
    const std::vector<Values>& params_;
  };

  Values RunLoop(const Instruction& i, const Env& env) {
    std::vector<Values> carried;
    for (const Instruction* o : i.operands) carried.push_back(env.at(o));
    for (int64_t iter = 0; iter < i.trip_count; ++iter) {
      std::vector<Values> params;
      params.emplace_back(static_cast<size_t>(n_), Literal::Scalar(ir::DType::kS32, static_cast<double>(iter)));
      for (Values& v : carried) params.push_back(std::move(v));
      Values next = Run(*i.body, std::move(params));
      for (size_t k = 0; k < carried.size(); ++k) {
        carried[k].assign(static_cast<size_t>(n_), Literal());
        for (int64_t p = 0; p < n_; ++p) {
          carried[k][static_cast<size_t>(p)] = next[static_cast<size_t>(p)].elements.at(k);
        }
      }
    }
    Values out(static_cast<size_t>(n_));
    for (int64_t p = 0; p < n_; ++p) {
      std::vector<Literal> elements;
      for (const Values& v : carried) elements.push_back(v[static_cast<size_t>(p)]);
      out[static_cast<size_t>(p)] = Literal::Tuple(std::move(elements));
    }
    return out;
  }

  // A module computing `i` alone from parameters that stand for its operands.
  const ir::Module& Single(const Instruction& i) {
    auto it = single_.find(&i);
    if (it != single_.end()) return *it->second;
    auto m = std::make_unique<ir::Module>("single_" + i.name);
    ir::Computation* c = m->AddComputation("main", /*is_entry=*/true);
    std::vector<Instruction*> params;
    for (size_t k = 0; k < i.operands.size(); ++k) {
      auto p = std::make_unique<Instruction>();
      p->opcode = Opcode::kParameter;
      p->parameter_number = static_cast<int64_t>(k);
      p->shape = i.operand(k)->shape;
      p->name = "operand." + std::to_string(k);
      params.push_back(c->Add(std::move(p)));
    }
    auto copy = std::make_unique<Instruction>(i);
    copy->operands = params;
    copy->sharding.reset();
    c->set_root(c->Add(std::move(copy)));
    return *single_.emplace(&i, std::move(m)).first->second;
  }

  Values Local(const Instruction& i, const std::unordered_map<const Instruction*, Values>& env) {
    const ir::Module& m = Single(i);
    Values out(static_cast<size_t>(n_));
    for (int64_t p = 0; p < n_; ++p) {
      std::vector<Literal> args;
      for (const Instruction* o : i.operands) args.push_back(env.at(o)[static_cast<size_t>(p)]);
      out[static_cast<size_t>(p)] = ir::Interpret(m, args, p, n_);
    }
    return out;
  }

  Values Collective(const Instruction& i, const Values& operand) {
    std::vector<std::vector<Literal>> args;
    for (const Literal& v : operand) args.push_back({v});
    Values exact = ir::InterpretSpmd(Single(i), args, n_);
    Check(i, operand, exact);
    return exact;
  }

  // Runs the collective's schedule on the operands and compares with the interpreter.
  void Check(const Instruction& i, const Values& operand, const Values& exact) {
    const int32_t id = collective_index_.at(&i);
    const CollectivePlan& c = plan_.collectives[static_cast<size_t>(id)];
    CollectiveCheck& check = checks_[static_cast<size_t>(id)];
    ++check.executions;
    const ir::DType dtype = i.operand(0)->shape.dtype;
    const bool reduces = i.opcode == Opcode::kAllReduce || i.opcode == Opcode::kReduceScatter;
    if (reduces && i.reduce_kind != ir::ReduceKind::kAdd) {
      check.note = "reduce kind " + std::string(ir::ReduceKindName(i.reduce_kind)) +
                   ": schedules model sums only; values from the interpreter";
      return;
    }
    double magnitude = 0;
    for (const Literal& v : operand) {
      for (double x : v.values) magnitude = std::max(magnitude, std::abs(x));
    }
    for (const Literal& v : exact) {
      for (double x : v.values) magnitude = std::max(magnitude, std::abs(x));
    }
    if ((dtype == ir::DType::kS32 || !std::isfinite(magnitude)) && !(magnitude < 16777216.0)) {
      check.note = "values beyond float32's exact integers: not checked against the schedule";
      return;
    }
    auto it = schedules_.find(id);
    if (it == schedules_.end()) {
      it = schedules_.emplace(id, BuildSchedule(c.spec, topology_, c.algorithm)).first;
    }
    const Schedule& schedule = it->second;
    PartitionBuffers inputs(static_cast<size_t>(schedule.num_partitions));
    for (int64_t p = 0; p < schedule.num_partitions; ++p) {
      if (p < n_) {
        inputs[static_cast<size_t>(p)] = ToFlat(i, operand[static_cast<size_t>(p)]);
      }
      inputs[static_cast<size_t>(p)].resize(static_cast<size_t>(schedule.input_elements[static_cast<size_t>(p)]), 0.0f);
    }
    const PartitionBuffers outputs = RunFunctional(schedule, inputs);
    const int64_t group_size = c.groups.empty() ? 1 : static_cast<int64_t>(c.groups[0].size());
    double worst = 0;
    for (int64_t p = 0; p < n_; ++p) {
      Literal got;
      if (c.group_of[static_cast<size_t>(p)] < 0 && i.opcode != Opcode::kCollectivePermute) {
        continue;  // takes no part
      }
      const auto& flat = outputs[static_cast<size_t>(p)];
      if (static_cast<int64_t>(flat.size()) != i.shape.NumElements()) {
        if (i.opcode == Opcode::kCollectivePermute && flat.empty()) {
          got = Literal::Zeros(i.shape);
        } else {
          worst = std::numeric_limits<double>::infinity();
          check.note = "schedule output of partition " + std::to_string(p) + " has " +
                       std::to_string(flat.size()) + " elements, expected " +
                       std::to_string(i.shape.NumElements());
          continue;
        }
      } else {
        got = FromFlat(i, flat, group_size);
      }
      worst = std::max(worst, MaxAbsDifference(got, exact[static_cast<size_t>(p)]));
    }
    check.checked = true;
    check.max_abs_error = std::max(check.max_abs_error, worst);
    // Float sums in another order: a few units of roundoff per member, relative to the largest
    // magnitude (0 for integers and pure data movement of exact values).
    const double tol = 4 * ir::UnitRoundoff(dtype) * static_cast<double>(group_size) * (1 + magnitude);
    check.tolerance = std::max(check.tolerance, reduces ? tol : 0.0);
  }

  const ProgramPlan& plan_;
  const topo::Topology& topology_;
  const int64_t n_;
  std::unordered_map<const Instruction*, std::unique_ptr<ir::Module>> single_;
  std::unordered_map<const Instruction*, int32_t> collective_index_;
  std::unordered_map<int32_t, Schedule> schedules_;
  std::vector<CollectiveCheck> checks_;
};

}  // namespace

FunctionalResult RunFunctionalProgram(const ir::Module& module, const ProgramPlan& plan,
                                      const topo::Topology& topology, const SimOptions& options) {
  const int64_t n = plan.num_partitions;
  if (n > kMaxFunctionalPartitions) {
    throw Error("functional mode is for small pods: " + std::to_string(n) + " partitions (at most " +
                std::to_string(kMaxFunctionalPartitions) + ")");
  }
  std::vector<std::vector<Literal>> args = options.functional_args;
  if (args.empty()) {
    for (int64_t p = 0; p < n; ++p) {
      args.push_back(ir::RandomArguments(module, options.functional_seed + static_cast<uint64_t>(p)));
    }
  }
  if (static_cast<int64_t>(args.size()) != n) {
    throw Error("functional_args: arguments for " + std::to_string(args.size()) +
                " partitions, the program runs on " + std::to_string(n));
  }
  const std::vector<Instruction*> params = module.entry()->parameters();
  std::vector<Values> by_parameter(params.size(), Values(static_cast<size_t>(n)));
  for (int64_t p = 0; p < n; ++p) {
    if (args[static_cast<size_t>(p)].size() != params.size()) {
      throw Error("functional_args[" + std::to_string(p) + "]: " +
                  std::to_string(args[static_cast<size_t>(p)].size()) + " arguments, the entry takes " +
                  std::to_string(params.size()));
    }
    for (size_t k = 0; k < params.size(); ++k) {
      const Literal& a = args[static_cast<size_t>(p)][k];
      if (a.shape != params[k]->shape) {
        throw Error("functional_args[" + std::to_string(p) + "][" + std::to_string(k) + "]: expected " +
                    params[k]->shape.ToString() + ", got " + a.shape.ToString());
      }
      Literal rounded = a;
      for (double& v : rounded.values) v = ir::RoundToDType(v, a.shape.dtype);
      by_parameter[k][static_cast<size_t>(p)] = std::move(rounded);
    }
  }
  FunctionalRunner runner(plan, topology);
  FunctionalResult result;
  result.outputs = runner.Run(*module.entry(), std::move(by_parameter));
  result.collectives = runner.TakeChecks();
  const std::vector<Literal> expected = ir::InterpretSpmd(module, args, n);
  for (int64_t p = 0; p < n; ++p) {
    result.max_error_vs_interpreter =
        std::max(result.max_error_vs_interpreter,
                 MaxAbsDifference(result.outputs[static_cast<size_t>(p)], expected[static_cast<size_t>(p)]));
  }
  return result;
}

}  // namespace podsim::sim
