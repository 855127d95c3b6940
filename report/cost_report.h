#pragma once
// A module's cost analysis (ir/cost.h) as JSON, as `podsim ir cost --json` prints it:
//   {"module": NAME, "total": COST, "instructions": [COST + {computation, instruction, opcode,
//    scope}, ...]}   with COST = {flops, transcendentals, bytes_read, bytes_written,
//                                 network_bytes, unit}

#include <nlohmann/json_fwd.hpp>

#include "ir/cost.h"
#include "ir/module.h"

namespace podsim::report {

nlohmann::json ModuleCostJson(const ir::Module& module, const ir::ModuleCost& cost);

}  // namespace podsim::report
