#include "base/version.h"

#include <nlohmann/json.hpp>

namespace podsim {

// PODSIM_VERSION is defined for this file only (base/CMakeLists.txt), so a new version
// recompiles one file.
const char* Version() { return PODSIM_VERSION; }

void StampVersion(nlohmann::json& object) {
  object["podsim_version"] = Version();
  object["schema_version"] = kJsonSchemaVersion;
}

}  // namespace podsim
