#include "topologies/load.h"

#include <algorithm>
#include <filesystem>

#include "topologies/custom.h"
#include "topologies/json_reader.h"
#include "topologies/torus.h"

#ifndef PODSIM_PRESET_DIR
#error "PODSIM_PRESET_DIR must be defined (topologies/CMakeLists.txt)"
#endif

namespace podsim::topo {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxPresetDepth = 8;

nlohmann::json Expand(const nlohmann::json& value, const std::string& path, int depth);

nlohmann::json ReadNamed(const std::string& name, const std::string& path, int depth) {
  if (depth > kMaxPresetDepth) {
    FailAt(path, "presets nest too deeply (a cycle?) at \"" + name + "\"");
  }
  if (IsTopologyFilePath(name)) {
    const nlohmann::json file = ReadJsonFile(name);
    try {
      return Expand(file, path, depth + 1);
    } catch (const ConfigError& e) {
      throw ConfigError(name + ": " + e.what());
    }
  }
  const fs::path preset = fs::path(PresetDir()) / (name + ".json");
  std::error_code ec;
  if (name.empty() || !fs::is_regular_file(preset, ec)) {
    std::string list;
    for (const std::string& p : ListPresets()) list += (list.empty() ? "" : ", ") + p;
    FailAt(path, "unknown topology \"" + name +
                     "\": not a preset and not a file (presets: " + list + ")");
  }
  return Expand(ReadJsonFile(preset.string()), path, depth + 1);
}

nlohmann::json Expand(const nlohmann::json& value, const std::string& path, int depth) {
  if (value.is_string()) return ReadNamed(value.get<std::string>(), path, depth);
  if (!value.is_object()) {
    FailAt(path, "must be a preset name, a JSON file path or an object, got " + Brief(value));
  }
  auto it = value.find("preset");
  if (it == value.end()) return value;
  const std::string preset_path = JoinPath(path, "preset");
  nlohmann::json base = ReadNamed(AsString(*it, preset_path), preset_path, depth);
  nlohmann::json patch = value;
  patch.erase("preset");
  base.merge_patch(patch);
  return base;
}

}  // namespace

bool IsTopologyFilePath(const std::string& s) {
  if (s.find('/') != std::string::npos) return true;
  if (s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0) return true;
  std::error_code ec;
  return fs::is_regular_file(s, ec);
}

std::string PresetDir() { return PODSIM_PRESET_DIR; }

std::vector<std::string> ListPresets() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(PresetDir(), ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json ExpandTopologyConfig(const nlohmann::json& value, const std::string& path) {
  return Expand(value, path, 0);
}

std::unique_ptr<Topology> MakeTopology(const TopologyConfig& config) {
  if (config.kind == "custom") return std::make_unique<CustomTopology>(config);
  return std::make_unique<TorusTopology>(config);
}

std::unique_ptr<Topology> LoadTopology(const nlohmann::json& value, const std::string& path) {
  return MakeTopology(TopologyConfig::FromJson(ExpandTopologyConfig(value, path), path));
}

std::unique_ptr<Topology> LoadTopology(const std::string& name_or_path) {
  if (!IsTopologyFilePath(name_or_path)) {
    return LoadTopology(nlohmann::json(name_or_path), "topology");
  }
  try {
    return LoadTopology(nlohmann::json(name_or_path), "topology");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.rfind(name_or_path + ":", 0) == 0) throw;
    throw ConfigError(name_or_path + ": " + what);
  }
}

}  // namespace podsim::topo
