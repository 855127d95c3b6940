// podsim plan MODEL --topology POD [--topology POD2 ...] [--objective step_time|cost]
// [--price-per-chip-hour P] [--memory-limit SIZE] [--finalists N] [--jobs N] [--json]
// [--out DIR]: the best way to shard the whole MoE model on a pod (experiments/plan.h).

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/config.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "base/units.h"
#include "base/version.h"
#include "cli/commands.h"
#include "cli/module_io.h"
#include "cli/options.h"
#include "experiments/plan.h"
#include "models/gshard_model.h"
#include "report/output_dir.h"

namespace podsim::cli {

namespace {

constexpr const char* kPlanUsage =
    "usage: podsim plan MODEL --topology POD [--topology POD ...] [--calibration FILE]\n"
    "                   [--objective step_time|cost] [--price-per-chip-hour P]\n"
    "                   [--memory-limit SIZE] [--finalists N] [--jobs N] [--json]\n"
    "                   [--out DIR [--force]]\n\n"
    "Searches the ways to lay the whole MoE Transformer on each pod's cores: a logical mesh\n"
    "data x expert x model (groups split over data x expert, experts over expert, attention\n"
    "heads and FFN hidden dims over model), the group size S (the batch fixed), the number of\n"
    "micro-batches (gradient accumulation: 1, 2, 4, 8) and the rematerialisation (the least\n"
    "recomputation that fits). Every candidate gets its exact per-core memory floor (weights,\n"
    "and gradient sums with micro-batches; above the memory limit: oom), a lower bound of its\n"
    "step (its matmul FLOPs per core at the matrix peak) and an estimate (the step simulated\n"
    "unpartitioned on one core, shared over the cores, plus its AllToAll, model-axis and\n"
    "gradient traffic at the per-core link bandwidth, and recomputation when one micro-batch's\n"
    "activations will not fit); the N best estimates are simulated. The table ranks them all\n"
    "and says why each loser lost: oom, communication-bound, recomputation, more work per\n"
    "core, or, not simulated, a lower bound above the best's step (bound) or an estimate\n"
    "ranked below the finalists (unsimulated). docs/plan.md explains the model.\n\n"
    "MODEL: a model preset (128E,12L ... 2048E,60L) or a JSON file of the model's keys\n"
    "(docs/training.md). --calibration FILE takes the \"sim\" and \"topology_overrides\" of an\n"
    "experiment config (experiments/gshard_table3.json: Table 3's v3 calibration).\n"
    "--out DIR writes plan.csv, plan.json, best_model.json (the winner's\n"
    "model config, for an experiment) and best_check.hlo, the winner's layout on a mesh of at\n"
    "most 2 per axis at toy size, with the `podsim check` command that verifies it; DIR/status\n"
    "says whether it finished (--force replaces an earlier run's files).\n";

int Plan(const experiments::PlanSpec& spec, bool json_output, const report::OutputDir* out) {
  const experiments::PlanResult plan = experiments::RunPlan(spec);
  nlohmann::json json = experiments::PlanJson(plan);
  StampVersion(json);
  std::cout << (json_output ? json.dump(2) + "\n" : experiments::PlanTable(plan));
  const experiments::PlanCandidate& first = plan.candidates.front();
  const bool found = first.status == experiments::PlanStatus::kBest;
  const std::string summary = std::to_string(plan.candidates.size()) + " candidates, " +
                              std::to_string(plan.simulated) + " simulated, " +
                              (found ? "best found" : "none fits");
  if (out) {
    const std::string& dir = out->path();
    WriteFileAtomic(dir + "/plan.csv", experiments::PlanCsv(plan));
    WriteFileAtomic(dir + "/plan.json", json.dump(2) + "\n");
    if (found) {
      WriteFileAtomic(dir + "/best_model.json", first.model_json.dump(2) + "\n");
      int64_t devices = 0;
      std::string mesh;
      const std::unique_ptr<ir::Module> small =
          experiments::SmallMeshModule(first, &devices, &mesh);
      SaveModule(*small, dir + "/best_check.hlo");
      std::cerr << "plan: verify the winner's layout with: podsim check " << dir
                << "/best_check.hlo --mesh " << mesh << "\n";
    }
    out->Done("plan: " + summary + "\n");
  }
  if (!found) {
    std::cerr << "plan: " << summary << ": no simulated candidate fits; see the table's reasons\n";
    return 1;
  }
  std::cerr << "plan: " << summary << ": mesh " << first.data << "x" << first.expert << "x"
            << first.model << " (data x expert x model) on " << first.topology << ", S "
            << first.tokens_per_group << ", " << FormatFixed(first.step_s * 1e3, 1) << " ms/step"
            << (out ? "; results in " + out->path() : std::string()) << "\n";
  return 0;
}

}  // namespace

int PlanCommand(const Args& args) {
  po::options_description desc("podsim plan options");
  desc.add_options()("help,h", "show this help")("model", po::value<std::string>()->required(),
                                                 "a model preset or JSON file")(
      "topology", po::value<std::vector<std::string>>()->required(),
      "a pod (preset or file); repeat to compare pods")(
      "objective", po::value<std::string>()->default_value("step_time"), "step_time or cost")(
      "price-per-chip-hour", po::value<double>(), "price of a chip-hour, for the cost column")(
      "memory-limit", po::value<std::string>(), "bytes per core (default: the device's HBM)")(
      "calibration", po::value<std::string>(),
      "an experiment config whose \"sim\" and \"topology_overrides\" every simulation uses\n"
      "(e.g. experiments/gshard_table3.json: the v3 calibration of Figures 8 and 9)")(
      "finalists", po::value<int>()->default_value(3), "candidates simulated")(
      "jobs,j", po::value<int>()->default_value(0), "threads for the finalists (0: all)")(
      "json", "print the plan as JSON instead of the table")(
      "out", po::value<std::string>(), "write plan.csv, plan.json and the winner here")(
      "force", "replace the files of an earlier run in --out");
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  if (!ParseOptions(args, desc, pos, vm)) {
    std::cout << kPlanUsage << "\n" << desc;
    return 0;
  }
  experiments::PlanSpec spec;
  const std::string model = vm["model"].as<std::string>();
  bool is_preset = false;
  for (const models::GShardPreset& p : models::GShardPresets()) is_preset |= p.name == model;
  spec.model = is_preset ? nlohmann::json{{"preset", model}} : ReadJsonFile(model);
  spec.topologies = vm["topology"].as<std::vector<std::string>>();
  const std::string objective = vm["objective"].as<std::string>();
  if (objective != "step_time" && objective != "cost") {
    throw Error("--objective: must be step_time or cost, got '" + objective + "'");
  }
  spec.objective_cost = objective == "cost";
  if (vm.count("price-per-chip-hour"))
    spec.price_per_chip_hour = vm["price-per-chip-hour"].as<double>();
  if (vm.count("memory-limit")) {
    spec.memory_limit =
        static_cast<double>(ParseBytes(vm["memory-limit"].as<std::string>(), "--memory-limit"));
  }
  if (vm.count("calibration")) {
    const std::string file = vm["calibration"].as<std::string>();
    const nlohmann::json c = ReadJsonFile(file);
    if (!c.is_object()) throw ConfigError(file + ": must be a JSON object");
    if (c.contains("sim")) spec.sim = c["sim"];
    if (c.contains("topology_overrides")) spec.topology_overrides = c["topology_overrides"];
  }
  spec.finalists = vm["finalists"].as<int>();
  spec.jobs = vm["jobs"].as<int>();
  // The output directory is claimed before the search, so that a refused --out costs nothing
  // and a search that fails says so in DIR/status.
  std::optional<report::OutputDir> out;
  if (vm.count("out")) {
    out = report::OutputDir::Claim(vm["out"].as<std::string>(), vm.count("force") > 0);
  }
  try {
    return Plan(spec, vm.count("json") > 0, out ? &*out : nullptr);
  } catch (const std::exception& e) {
    if (out) out->Failed(e.what());
    throw;
  }
}

}  // namespace podsim::cli
