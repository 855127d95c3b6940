#pragma once
// podsim's version (the CMake project version) and the version of the layout of its JSON
// outputs (`--json` of every command, results.json; docs/schemas/), which every such object
// carries as "podsim_version" and "schema_version". schema_version is raised when a key is
// removed, renamed or changes meaning; adding a key does not raise it.

#include <nlohmann/json_fwd.hpp>

namespace podsim {

const char* Version();

inline constexpr int kJsonSchemaVersion = 1;

// Sets "podsim_version" and "schema_version" in `object` (a JSON object podsim writes).
void StampVersion(nlohmann::json& object);

}  // namespace podsim
