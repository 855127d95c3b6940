// base/presets.h: one resolver for names, files and {"preset": NAME} patches.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/presets.h"

namespace podsim {
namespace {

struct PresetDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "podsim_presets_test";
  PresetDir() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    Write("small", R"({"a": 1, "b": {"c": 2, "d": 3}})");
    Write("derived", R"({"preset": "small", "a": 10})");
    Write("loop", R"({"preset": "loop"})");
  }
  ~PresetDir() { std::filesystem::remove_all(dir); }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / (name + ".json")) << text;
  }
};

TEST_CASE("names, files and patches") {
  const PresetDir d;
  const PresetSet presets("widget", d.dir.string());
  CHECK(presets.Names() == std::vector<std::string>{"derived", "loop", "small"});
  CHECK(presets.Resolve("small", "w") == nlohmann::json::parse(R"({"a": 1, "b": {"c": 2, "d": 3}})"));
  // A preset that names a preset, and an object patching it (merge patch: b.d removed).
  CHECK(presets.Resolve(nlohmann::json::parse(R"({"preset": "derived", "b": {"d": null}})"), "w") ==
        nlohmann::json::parse(R"({"a": 10, "b": {"c": 2}})"));
  // A file path.
  CHECK(presets.Resolve((d.dir / "small.json").string(), "w")["a"] == 1);
  CHECK(PresetSet::IsFilePath("x/y"));
  CHECK(PresetSet::IsFilePath("y.json"));
  CHECK_FALSE(PresetSet::IsFilePath("tpu-v3-8"));
}

TEST_CASE("errors name the JSON path, the kind and the presets") {
  const PresetDir d;
  const PresetSet presets("widget", d.dir.string());
  CHECK_THROWS_WITH_AS(presets.Resolve("nope", "w"),
                       "w: unknown widget \"nope\": not a preset and not a file (presets: derived, "
                       "loop, small)",
                       ConfigError);
  CHECK_THROWS_WITH(presets.Resolve("loop", "w"), doctest::Contains("presets nest too deeply"));
  CHECK_THROWS_WITH(presets.Resolve(3, "w"),
                    "w: must be a preset name, a JSON file path or an object, got 3");
}

}  // namespace
}  // namespace podsim
