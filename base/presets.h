#pragma once
// Preset resolution, shared by every config that names presets (topologies, devices).
//
// A config value that may name a preset is
// - a string: a preset name (DIR/NAME.json), or a JSON file path (a string containing '/' or
//   ending in ".json", or naming an existing file);
// - an object: the fields themselves; with "preset": NAME, that preset's fields with this
//   object's other keys replacing them (JSON merge patch, RFC 7386).
// A preset or a file may itself be such a value, up to 8 levels deep (a cycle is an error).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace podsim {

class PresetSet {
 public:
  // `kind` names the presets in messages ("topology", "device"); `dir` holds NAME.json files.
  PresetSet(std::string kind, std::string dir) : kind_(std::move(kind)), dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  // Preset names (file names without ".json"), sorted.
  std::vector<std::string> Names() const;
  // Whether a name is read as a file path: it contains '/', ends in ".json", or names an
  // existing file.
  static bool IsFilePath(const std::string& name_or_path);

  // The value (see above) as a plain JSON object with no "preset" key. Errors are ConfigErrors
  // naming `path`; an error inside a file also names the file.
  nlohmann::json Resolve(const nlohmann::json& value, const std::string& path) const;

 private:
  nlohmann::json Expand(const nlohmann::json& value, const std::string& path, int depth) const;
  nlohmann::json ReadNamed(const std::string& name, const std::string& path, int depth) const;

  std::string kind_;
  std::string dir_;
};

}  // namespace podsim
