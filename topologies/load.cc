#include "topologies/load.h"

#include "base/config.h"
#include "base/resources.h"
#include "topologies/custom.h"
#include "topologies/torus.h"

namespace podsim::topo {

PresetSet TopologyPresets() { return PresetSet("topology", DataDir() + "/topologies/presets"); }

nlohmann::json ExpandTopologyConfig(const nlohmann::json& value, const std::string& path) {
  return TopologyPresets().Resolve(value, path);
}

std::unique_ptr<Topology> MakeTopology(const TopologyConfig& config) {
  if (config.kind == "custom") return std::make_unique<CustomTopology>(config);
  return std::make_unique<TorusTopology>(config);
}

std::unique_ptr<Topology> LoadTopology(const nlohmann::json& value, const std::string& path) {
  return MakeTopology(TopologyConfig::FromJson(ExpandTopologyConfig(value, path), path));
}

std::unique_ptr<Topology> LoadTopology(const std::string& name_or_path) {
  if (!PresetSet::IsFilePath(name_or_path)) {
    return LoadTopology(nlohmann::json(name_or_path), "topology");
  }
  try {
    return LoadTopology(nlohmann::json(name_or_path), "topology");
  } catch (const ConfigError& e) {
    throw e.InFile(name_or_path);
  }
}

std::unique_ptr<Topology> LoadTopology(const nlohmann::json& value,
                                       const std::vector<std::string>& overrides,
                                       nlohmann::json* expanded) {
  const bool from_file = value.is_string() && PresetSet::IsFilePath(value.get<std::string>());
  try {
    // Overrides apply to {"topology": <expanded config>}, as in experiment configs.
    nlohmann::json root = {{"topology", ExpandTopologyConfig(value, "topology")}};
    for (const std::string& assignment : overrides) {
      ApplyOverride(root, assignment);
      if (root.size() != 1) {
        throw ConfigError("override " + assignment +
                          ": paths start with \"topology.\", e.g. topology.dims[0]=8");
      }
    }
    std::unique_ptr<Topology> topology = LoadTopology(root["topology"], "topology");
    if (expanded) *expanded = std::move(root["topology"]);
    return topology;
  } catch (const ConfigError& e) {
    if (!from_file) throw;
    throw e.InFile(value.get<std::string>());  // name the file whose value is bad
  }
}

}  // namespace podsim::topo
