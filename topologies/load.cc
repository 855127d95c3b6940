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

}  // namespace podsim::topo
