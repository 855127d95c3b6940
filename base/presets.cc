#include "base/presets.h"

#include <algorithm>
#include <filesystem>

#include "base/config.h"
#include "base/error.h"

namespace podsim {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxPresetDepth = 8;

}  // namespace

std::vector<std::string> PresetSet::Names() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool PresetSet::IsFilePath(const std::string& s) {
  if (s.find('/') != std::string::npos) return true;
  if (s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0) return true;
  std::error_code ec;
  return fs::is_regular_file(s, ec);
}

nlohmann::json PresetSet::Resolve(const nlohmann::json& value, const std::string& path) const {
  return Expand(value, path, 0);
}

nlohmann::json PresetSet::ReadNamed(const std::string& name, const std::string& path,
                                    int depth) const {
  if (depth > kMaxPresetDepth) {
    FailAt(path, "presets nest too deeply (a cycle?) at \"" + name + "\"");
  }
  if (IsFilePath(name)) {
    const nlohmann::json file = ReadJsonFile(name);
    try {
      return Expand(file, path, depth + 1);
    } catch (const ConfigError& e) {
      throw ConfigError(name + ": " + e.what());
    }
  }
  const fs::path preset = fs::path(dir_) / (name + ".json");
  std::error_code ec;
  if (name.empty() || !fs::is_regular_file(preset, ec)) {
    std::string list;
    for (const std::string& p : Names()) list += (list.empty() ? "" : ", ") + p;
    FailAt(path, "unknown " + kind_ + " \"" + name + "\": not a preset and not a file (presets: " +
                     list + ")");
  }
  return Expand(ReadJsonFile(preset.string()), path, depth + 1);
}

nlohmann::json PresetSet::Expand(const nlohmann::json& value, const std::string& path,
                                 int depth) const {
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

}  // namespace podsim
