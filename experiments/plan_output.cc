// The plan's outputs: the ranked table, its CSV and its JSON.
#include <sstream>
#include <string>
#include <vector>

#include "base/csv.h"
#include "base/format.h"
#include "experiments/plan.h"
#include "experiments/plan_units.h"

namespace podsim::experiments {

namespace {

using plan_units::kGiB;
using plan_units::Ms;

std::string MeshName(const PlanCandidate& c) {
  return std::to_string(c.data) + "x" + std::to_string(c.expert) + "x" + std::to_string(c.model);
}

struct Column {
  const char* name;
  bool right;  // numbers align right
};
const std::vector<Column>& Columns() {
  static const std::vector<Column> c = {
      {"rank", true},        {"pod", false},      {"mesh dxexm", false}, {"S", true},
      {"groups/core", true}, {"micro", true},     {"C", true},           {"bound_ms", true},
      {"estimate_ms", true}, {"step_ms", true},   {"peak_gib", true},    {"remat", false},
      {"mfu", true},         {"cost_1e12", true}, {"status", false},     {"why", false}};
  return c;
}

std::vector<std::string> Cells(const PlanCandidate& c, size_t rank) {
  const bool sim = c.simulated && c.status != PlanStatus::kFailed;
  return {std::to_string(rank),
          c.topology,
          MeshName(c),
          std::to_string(c.tokens_per_group),
          std::to_string(c.groups_per_core()),
          std::to_string(c.micro_batches),
          std::to_string(c.capacity),
          Ms(c.compute_bound_s),
          Ms(c.estimate_s),
          sim && c.status != PlanStatus::kOom ? Ms(c.step_s) : "",
          sim ? FormatFixed(static_cast<double>(c.peak_bytes) / kGiB, 2)
              : (c.status == PlanStatus::kOom
                     ? ">" + FormatFixed(static_cast<double>(c.memory_floor_bytes) / kGiB, 2)
                     : ""),
          sim ? c.remat : "",
          sim && c.status != PlanStatus::kOom ? FormatFixed(c.mfu, 3) : "",
          c.cost_per_1e12_tokens > 0 ? FormatFixed(c.cost_per_1e12_tokens, 0) : "",
          PlanStatusName(c.status),
          c.reason};
}

}  // namespace

std::string PlanTable(const PlanResult& plan) {
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> width;
  for (const Column& c : Columns()) width.push_back(std::string(c.name).size());
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    rows.push_back(Cells(plan.candidates[i], i + 1));
    for (size_t k = 0; k + 1 < width.size(); ++k)
      width[k] = std::max(width[k], rows.back()[k].size());
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t k = 0; k < cells.size(); ++k) {
      const size_t pad = k + 1 < cells.size() ? width[k] - std::min(width[k], cells[k].size()) : 0;
      const std::string cell =
          Columns()[k].right ? std::string(pad, ' ') + cells[k] : cells[k] + std::string(pad, ' ');
      text += (k ? "  " : "") + cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  std::vector<std::string> header;
  for (const Column& c : Columns()) header.push_back(c.name);
  line(header);
  for (const auto& r : rows) line(r);
  return out.str();
}

std::string PlanCsv(const PlanResult& plan) {
  std::vector<std::string> header;
  for (const Column& c : Columns()) header.push_back(c.name);
  CsvTable t(header);
  for (size_t i = 0; i < plan.candidates.size(); ++i) t.AddRow(Cells(plan.candidates[i], i + 1));
  return t.ToString();
}

nlohmann::json PlanJson(const PlanResult& plan) {
  nlohmann::json out = {{"objective", plan.objective_cost ? "cost" : "step_time"},
                        {"simulated", plan.simulated},
                        {"candidates", nlohmann::json::array()}};
  if (plan.memory_limit > 0) out["memory_limit"] = plan.memory_limit;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const PlanCandidate& c = plan.candidates[i];
    nlohmann::json j = {{"rank", i + 1},
                        {"topology", c.topology},
                        {"cores", c.cores},
                        {"chips", c.chips},
                        {"mesh", {{"data", c.data}, {"expert", c.expert}, {"model", c.model}}},
                        {"tokens_per_group", c.tokens_per_group},
                        {"groups", c.groups},
                        {"groups_per_core", c.groups_per_core()},
                        {"capacity", c.capacity},
                        {"micro_batches", c.micro_batches},
                        {"weights_bytes", c.weights_bytes},
                        {"memory_floor_bytes", c.memory_floor_bytes},
                        {"remat_expected", c.remat_expected},
                        {"compute_bound_s", c.compute_bound_s},
                        {"compute_estimate_s", c.compute_estimate_s},
                        {"comm_estimate_s", c.comm_estimate_s},
                        {"estimate_s", c.estimate_s},
                        {"status", PlanStatusName(c.status)},
                        {"reason", c.reason},
                        {"model", c.model_json}};
    if (c.simulated && c.status != PlanStatus::kFailed) {
      j["step_s"] = c.step_s;
      j["peak_bytes"] = c.peak_bytes;
      j["remat"] = c.remat;
      j["mfu"] = c.mfu;
      j["exposed_communication_fraction"] = c.exposed_comm_fraction;
      j["recompute_fraction"] = c.recompute_fraction;
    }
    if (c.cost_per_1e12_tokens > 0) j["cost_per_1e12_tokens"] = c.cost_per_1e12_tokens;
    out["candidates"].push_back(std::move(j));
  }
  return out;
}

}  // namespace podsim::experiments
