#pragma once
// Building topologies from configs: a preset name (topologies/presets/NAME.json), a JSON file, or
// a JSON object (docs/config.md, section "topology"), resolved as base/presets.h says.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/presets.h"
#include "topologies/config.h"
#include "topologies/topology.h"

namespace podsim::topo {

// The topology presets: DataDir()/topologies/presets/NAME.json (base/resources.h).
PresetSet TopologyPresets();

// The config value (string or object, see above) as a plain object, with no "preset" key.
// Errors name `path` (or the file).
nlohmann::json ExpandTopologyConfig(const nlohmann::json& value, const std::string& path);

// A topology of the config's kind (TorusTopology or CustomTopology).
std::unique_ptr<Topology> MakeTopology(const TopologyConfig& config);

// ExpandTopologyConfig, TopologyConfig::FromJson, MakeTopology. Errors name `path`
// (e.g. "topology.dims[1]: must be >= 1, got 0").
std::unique_ptr<Topology> LoadTopology(const nlohmann::json& value, const std::string& path);
// A preset name or a JSON file path; errors about a file start with its name.
std::unique_ptr<Topology> LoadTopology(const std::string& name_or_path);

// A topology as the CLI and scripts take one: `value` (a preset name, a JSON file or an object)
// expanded, then the overrides "topology.PATH=VALUE" (base/config.h) applied in order. Errors
// name the JSON path, and the file when `value` names one; an override whose path does not
// start with "topology." is an error. `expanded`, if given, receives the config the topology
// was built from (overrides applied).
std::unique_ptr<Topology> LoadTopology(const nlohmann::json& value,
                                       const std::vector<std::string>& overrides,
                                       nlohmann::json* expanded = nullptr);

}  // namespace podsim::topo
