#include "sim/program/run_result.h"

namespace podsim::sim {

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kOom: return "oom";
  }
  return "?";
}

bool FunctionalResult::ok() const {
  if (max_error_vs_interpreter != 0) return false;
  for (const CollectiveCheck& c : collectives) {
    if (!c.ok()) return false;
  }
  return true;
}

}  // namespace podsim::sim
