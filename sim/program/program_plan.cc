#include "sim/program/program_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

#include "base/error.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "sim/collectives/closed_form.h"

namespace podsim::sim {

std::string CategoryOf(const std::string& scope, int depth) {
  if (scope.empty()) return "unscoped";
  size_t pos = 0;
  for (int d = 0; d < std::max(1, depth); ++d) {
    pos = scope.find('/', d == 0 ? 0 : pos + 1);
    if (pos == std::string::npos) return scope;
  }
  return scope.substr(0, pos);
}

namespace {

using ir::Instruction;

// The schedule kind of a collective instruction.
class CollectiveKindOf : public ir::ConstVisitor<CollectiveKind> {
 public:
  CollectiveKind DefaultAction(const Instruction& i) override {
    throw Error("%" + i.name + " (" + std::string(ir::OpcodeName(i.opcode)) +
                ") is not a collective");
  }
  CollectiveKind HandleAllReduce(const Instruction&) override { return CollectiveKind::kAllReduce; }
  CollectiveKind HandleAllGather(const Instruction&) override { return CollectiveKind::kAllGather; }
  CollectiveKind HandleReduceScatter(const Instruction&) override {
    return CollectiveKind::kReduceScatter;
  }
  CollectiveKind HandleAllToAll(const Instruction&) override { return CollectiveKind::kAllToAll; }
  CollectiveKind HandleCollectivePermute(const Instruction&) override {
    return CollectiveKind::kCollectivePermute;
  }
};

// Whether a group of `size` members fits a collective's shapes: the result shape fixes the
// group size of all-gather, reduce-scatter and all-to-all. `expects` is the size the shapes
// mean, when they fix one.
struct GroupFit {
  bool ok = true;
  std::string expects;
};

class GroupFitOf : public ir::ConstVisitor<GroupFit> {
 public:
  explicit GroupFitOf(int64_t size) : size_(size) {}

  GroupFit DefaultAction(const Instruction&) override { return {}; }
  GroupFit HandleAllGather(const Instruction& i) override {
    const size_t d = static_cast<size_t>(i.dimensions.at(0));
    const ir::Shape& in = i.operand(0)->shape;
    return {i.shape.dims[d] == in.dims[d] * size_, Ratio(i.shape.dims[d], in.dims[d])};
  }
  GroupFit HandleReduceScatter(const Instruction& i) override {
    const size_t d = static_cast<size_t>(i.dimensions.at(0));
    const ir::Shape& in = i.operand(0)->shape;
    return {in.dims[d] == i.shape.dims[d] * size_, Ratio(in.dims[d], i.shape.dims[d])};
  }
  GroupFit HandleAllToAll(const Instruction& i) override {
    const size_t sd = static_cast<size_t>(i.split_dimension);
    const size_t cd = static_cast<size_t>(i.concat_dimension);
    const ir::Shape& in = i.operand(0)->shape;
    const ir::Shape& out = i.shape;
    return {in.dims[sd] % size_ == 0 && (sd == cd || out.dims[cd] == in.dims[cd] * size_),
            sd != cd ? Ratio(out.dims[cd], in.dims[cd]) : ""};
  }

 private:
  static std::string Ratio(int64_t num, int64_t den) {
    return den > 0 ? std::to_string(num / den) : "";
  }
  int64_t size_;
};

// Connected components of a permute's pairs, each sorted, ordered by smallest member.
std::vector<std::vector<int64_t>> PermuteComponents(
    const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::map<int64_t, int64_t> parent;
  std::function<int64_t(int64_t)> find = [&](int64_t x) {
    auto it = parent.find(x);
    if (it == parent.end()) return parent[x] = x;
    if (it->second == x) return x;
    return it->second = find(it->second);
  };
  for (const auto& [s, t] : pairs) {
    const int64_t a = find(s), b = find(t);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::map<int64_t, std::vector<int64_t>> by_root;
  for (const auto& entry : parent) by_root[find(entry.first)].push_back(entry.first);
  std::vector<std::vector<int64_t>> out;
  for (auto& [root, members] : by_root) out.push_back(std::move(members));
  return out;
}

class PlanBuilder {
 public:
  PlanBuilder(const ir::Module& module, const topo::Topology& topology, const PlanOptions& options)
      : module_(module), topology_(topology), options_(options),
        costs_(ir::AnalyzeCost(module, options.num_partitions)) {}

  ProgramPlan Build() {
    // Categories first (sorted, so indices are stable), from every instruction's scope.
    std::set<std::string> names;
    std::function<void(const ir::Computation&)> collect = [&](const ir::Computation& c) {
      for (const auto& i : c.instructions()) {
        names.insert(CategoryOf(i->scope, options_.category_depth));
        if (i->opcode == ir::Opcode::kLoop && i->body) collect(*i->body);
      }
    };
    collect(*module_.entry());
    plan_.categories.assign(names.begin(), names.end());
    for (size_t k = 0; k < plan_.categories.size(); ++k) {
      category_index_[plan_.categories[k]] = static_cast<int32_t>(k);
    }
    plan_.num_partitions = options_.num_partitions;
    plan_.computations.emplace_back();
    PlanComputation(*module_.entry(), 0);
    return std::move(plan_);
  }

 private:
  int32_t Category(const Instruction& i) const {
    return category_index_.at(CategoryOf(i.scope, options_.category_depth));
  }

  const ir::Cost& CostOf(const Instruction* i) const { return costs_.per_instruction.at(i); }

  void PlanComputation(const ir::Computation& comp, int32_t index) {
    ComputationPlan cp;
    cp.computation = &comp;
    cp.fusion = PlanFusion(comp, costs_.per_instruction, options_.fusion);
    cp.categories.assign(plan_.categories.size(), CategoryWork{});
    // Collectives whose result each value may still be waiting for.
    std::unordered_map<const Instruction*, std::vector<int32_t>> pending;
    auto add_pending = [&](const Instruction* operand, std::vector<int32_t>& into) {
      auto it = pending.find(operand);
      if (it == pending.end()) return;
      for (int32_t id : it->second) {
        if (std::find(into.begin(), into.end(), id) == into.end()) into.push_back(id);
      }
    };
    for (size_t g = 0; g < cp.fusion.groups.size(); ++g) {
      const FusionGroup& group = cp.fusion.groups[g];
      const Instruction* root = group.root;
      Step step;
      step.instr = root;
      step.group = static_cast<int32_t>(g);
      // A fusion's time belongs to its dot / convolution if it has one, else to its root.
      step.category = Category(*root);
      for (const Instruction* m : group.members) {
        if (m->opcode == ir::Opcode::kDot || m->opcode == ir::Opcode::kConvolution) {
          step.category = Category(*m);
        }
      }
      for (const Instruction* in : group.inputs) add_pending(in, step.waits);
      std::sort(step.waits.begin(), step.waits.end());
      if (ir::IsCollective(root->opcode)) {
        step.kind = StepKind::kCollective;
        step.collective = PlanCollective(*root, index);
        pending[root] = {step.collective};
        cp.has_collectives = true;
      } else if (root->opcode == ir::Opcode::kLoop) {
        step.kind = StepKind::kLoop;
        step.trip_count = root->trip_count;
        step.body = static_cast<int32_t>(plan_.computations.size());
        plan_.computations.emplace_back();
        PlanComputation(*root->body, step.body);
        const ComputationPlan& body = plan_.computations[static_cast<size_t>(step.body)];
        cp.has_collectives = cp.has_collectives || body.has_collectives;
        const int64_t trips = std::max<int64_t>(0, root->trip_count);
        cp.compute_time += body.compute_time * trips;
        cp.roofline_time += body.roofline_time * trips;
        for (size_t c = 0; c < cp.categories.size(); ++c) {
          const CategoryWork& b = body.categories[c];
          CategoryWork& w = cp.categories[c];
          w.modelled += b.modelled * trips;
          w.roofline += b.roofline * trips;
          w.flops += b.flops * static_cast<double>(trips);
          w.hbm_bytes += b.hbm_bytes * static_cast<double>(trips);
          w.ops += b.ops * trips;
        }
      } else {
        if (!group.bitcast) {
          for (const Instruction* m : group.members) {
            AddCompute(*m, CostOf(m), options_.device, step.work);
          }
        }
        step.work.hbm_bytes = step.work.launches ? group.hbm_bytes : 0.0;
        if (step.work.launches) {
          step.kind = StepKind::kCompute;
          step.time = TimeWork(step.work, options_.device);
          cp.compute_time += step.time.modelled;
          cp.roofline_time += step.time.roofline;
          CategoryWork& w = cp.categories[static_cast<size_t>(step.category)];
          w.modelled += step.time.modelled;
          w.roofline += step.time.roofline;
          w.flops += step.work.flops();
          w.hbm_bytes += step.work.hbm_bytes;
          ++w.ops;
        } else {
          // Bookkeeping aliases its operands: it passes their pending collectives on.
          std::vector<int32_t> through;
          for (const Instruction* o : root->operands) add_pending(o, through);
          if (!through.empty()) pending[root] = through;
          step.waits.clear();
        }
      }
      cp.steps.push_back(std::move(step));
    }
    // Where each collective's result is first needed.
    for (size_t s = cp.steps.size(); s-- > 0;) {
      for (int32_t id : cp.steps[s].waits) {
        plan_.collectives[static_cast<size_t>(id)].done_step = static_cast<int32_t>(s);
      }
    }
    plan_.computations[static_cast<size_t>(index)] = std::move(cp);
  }

  int32_t PlanCollective(const Instruction& i, int32_t computation) {
    const int64_t n = options_.num_partitions;
    CollectivePlan c;
    c.instr = &i;
    c.computation = computation;
    c.category = Category(i);
    CollectiveKindOf kind_of;
    c.spec.kind = ir::Accept<CollectiveKind>(i, kind_of);
    c.spec.elements = i.operand(0)->shape.NumElements();
    c.spec.element_bytes = ir::ByteWidth(i.operand(0)->shape.dtype);
    c.network_bytes = CostOf(&i).network_bytes;
    auto check_partition = [&](int64_t p, const std::string& field) {
      if (p < 0 || p >= n) {
        throw Error("%" + i.name + ": " + field + " names partition " + std::to_string(p) +
                    ", but the program runs on " + std::to_string(n) + " partitions");
      }
    };
    if (c.spec.kind == CollectiveKind::kCollectivePermute) {
      c.spec.source_target_pairs = i.source_target_pairs;
      for (const auto& [s, t] : i.source_target_pairs) {
        check_partition(s, "source_target_pairs");
        check_partition(t, "source_target_pairs");
      }
      c.groups = PermuteComponents(i.source_target_pairs);
    } else {
      if (!ir::HasReplicaGroups(i)) {
        std::vector<int64_t> all(static_cast<size_t>(n));
        std::iota(all.begin(), all.end(), int64_t{0});
        c.spec.replica_groups = {all};
      } else {
        c.spec.replica_groups = ir::ReplicaGroupsOf(i);  // materializes the iota form
      }
      for (const auto& g : c.spec.replica_groups) {
        for (int64_t p : g) check_partition(p, "replica_groups");
      }
      c.groups = c.spec.replica_groups;
    }
    c.group_of.assign(static_cast<size_t>(n), -1);
    for (size_t g = 0; g < c.groups.size(); ++g) {
      for (int64_t p : c.groups[g]) {
        if (c.group_of[static_cast<size_t>(p)] != -1 &&
            c.spec.kind != CollectiveKind::kCollectivePermute) {
          throw Error("%" + i.name + ": partition " + std::to_string(p) +
                      " is in two replica groups");
        }
        c.group_of[static_cast<size_t>(p)] = static_cast<int32_t>(g);
      }
    }
    CheckGroupSizes(i, c.groups);
    const std::string kind_name = CollectiveKindName(c.spec.kind);
    auto it = options_.algorithms.find(kind_name);
    if (it != options_.algorithms.end()) c.algorithm = it->second;
    try {
      if (c.algorithm.algorithm.empty() || c.algorithm.algorithm == "default") {
        // The default is timed (algorithms.h): once per distinct collective of the module.
        const DefaultKey key{c.spec.kind, c.spec.elements, c.spec.element_bytes, c.groups};
        auto [known, fresh] = default_algorithms_.try_emplace(key);
        if (fresh) known->second = DefaultAlgorithm(c.spec, topology_);
        c.algorithm.algorithm = known->second;
      } else {
        const auto names = AlgorithmNames(c.spec.kind);
        if (std::find(names.begin(), names.end(), c.algorithm.algorithm) == names.end()) {
          std::string list;
          for (const auto& a : names) list += (list.empty() ? "" : ", ") + a;
          throw Error("collectives." + kind_name + ".algorithm: '" + c.algorithm.algorithm +
                      "' does not apply to " + kind_name + " (one of: " + list + ")");
        }
      }
    } catch (const Error& e) {
      throw Error("%" + i.name + ": " + e.what());
    }
    c.roofline = Roofline(c);
    c.done_step = -1;
    plan_.collectives.push_back(std::move(c));
    return static_cast<int32_t>(plan_.collectives.size() - 1);
  }

  // The result shape fixes the group size of all-gather, reduce-scatter and all-to-all: a
  // module partitioned for another partition count is caught here.
  static void CheckGroupSizes(const Instruction& i, const std::vector<std::vector<int64_t>>& groups) {
    const ir::Shape& in = i.operand(0)->shape;
    const ir::Shape& out = i.shape;
    for (const auto& g : groups) {
      const int64_t size = static_cast<int64_t>(g.size());
      GroupFitOf fit_of(size);
      const GroupFit fit = ir::Accept<GroupFit>(i, fit_of);
      const bool ok = fit.ok;
      const std::string& expects = fit.expects;
      if (!ok) {
        throw Error("%" + i.name + ": " + std::string(ir::OpcodeName(i.opcode)) + " " +
                    in.ToString() + " -> " + out.ToString() +
                    (expects.empty() ? "" : " means groups of " + expects) + ", but a group has " +
                    std::to_string(size) +
                    " members (was the module partitioned for another partition count?)");
      }
    }
  }

  // The bandwidth term of the algorithm's closed form; if it has none, the partition's bytes
  // over the bandwidth of the links leaving its chip, shared by the chip's cores.
  Time Roofline(const CollectivePlan& c) const {
    if (c.spec.elements == 0) return Time();
    try {
      const AnalyticEstimate e =
          EstimateAlphaBeta(AnalyticInputFor(c.spec, topology_, c.algorithm.algorithm));
      return Time::FromSeconds(e.bandwidth_s);
    } catch (const std::exception&) {
    }
    double out_bandwidth = 0;
    for (const topo::Link& l : topology_.links()) {
      if (l.src_chip == 0 && l.kind == topo::LinkKind::kIci) out_bandwidth += l.bandwidth.value;
    }
    if (out_bandwidth <= 0) return Time();
    return Time::FromSeconds(c.network_bytes * static_cast<double>(topology_.cores_per_chip()) /
                             out_bandwidth);
  }

  const ir::Module& module_;
  const topo::Topology& topology_;
  const PlanOptions& options_;
  ir::ModuleCost costs_;
  ProgramPlan plan_;
  std::unordered_map<std::string, int32_t> category_index_;
  using DefaultKey =
      std::tuple<CollectiveKind, int64_t, int64_t, std::vector<std::vector<int64_t>>>;
  std::map<DefaultKey, std::string> default_algorithms_;
};

}  // namespace

ProgramPlan BuildProgramPlan(const ir::Module& module, const topo::Topology& topology,
                             const PlanOptions& options) {
  if (!module.entry()) throw Error("module '" + module.name() + "' has no entry computation");
  if (options.num_partitions < 1 || options.num_partitions > topology.num_cores()) {
    throw Error("num_partitions: " + std::to_string(options.num_partitions) +
                " partitions do not fit topology '" + topology.name() + "' (" +
                std::to_string(topology.num_cores()) + " cores)");
  }
  ir::VerifyManualTilings(module, options.num_partitions);
  ProgramPlan plan = PlanBuilder(module, topology, options).Build();
  for (CollectivePlan& c : plan.collectives) {
    if (c.done_step < 0) {
      c.done_step = static_cast<int32_t>(plan.computations[static_cast<size_t>(c.computation)].steps.size());
    }
  }
  return plan;
}

}  // namespace podsim::sim
