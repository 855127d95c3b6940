#pragma once
// Building topologies from configs: a preset name (topologies/presets/NAME.json), a JSON file, or
// a JSON object (docs/config.md, section "topology").
//
// A topology config value may be
// - a string: a preset name, or a JSON file path (a string containing '/' or ending in ".json",
//   or naming an existing file);
// - an object: the fields themselves; with "preset": NAME, that preset's fields with this
//   object's other keys replacing them (JSON merge patch).

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "topologies/config.h"
#include "topologies/topology.h"

namespace podsim::topo {

// The directory of the preset JSON files.
std::string PresetDir();
// Preset names (file names without ".json"), sorted.
std::vector<std::string> ListPresets();

// Whether a topology name is read as a file path: it contains '/', ends in ".json", or names an
// existing file.
bool IsTopologyFilePath(const std::string& name_or_path);

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

}  // namespace podsim::topo
