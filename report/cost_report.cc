#include "report/cost_report.h"

#include <nlohmann/json.hpp>
#include <string>

#include "base/version.h"

namespace podsim::report {
namespace {

nlohmann::json CostJson(const ir::Cost& c) {
  return nlohmann::json{{"flops", c.flops},
                        {"transcendentals", c.transcendentals},
                        {"bytes_read", c.bytes_read},
                        {"bytes_written", c.bytes_written},
                        {"network_bytes", c.network_bytes},
                        {"unit", std::string(ir::UnitName(c.unit))}};
}

}  // namespace

nlohmann::json ModuleCostJson(const ir::Module& module, const ir::ModuleCost& cost) {
  nlohmann::json out;
  StampVersion(out);
  out["module"] = module.name();
  out["total"] = CostJson(cost.total);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& comp : module.computations()) {
    for (const auto& i : comp->instructions()) {
      nlohmann::json row = CostJson(cost.per_instruction.at(i.get()));
      row["computation"] = comp->name();
      row["instruction"] = i->name;
      row["opcode"] = std::string(ir::OpcodeName(i->opcode));
      row["scope"] = i->scope;
      rows.push_back(row);
    }
  }
  out["instructions"] = rows;
  return out;
}

}  // namespace podsim::report
