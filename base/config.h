#pragma once
// Reading JSON configs with errors that name the JSON path at fault
// (`topology.dims[1]: must be >= 1, got 0`), and command-line overrides of config values
// (`topology.link_bandwidth=2e11`), shared by every config of every folder.
//
// Conventions every config shares:
// - Each struct reads its object with one JsonReader and calls Finish(), which rejects any key
//   it did not read. Keys starting with '_' are comments (`"_notes"`, `"_assumptions"`).
// - Numbers: an integer field accepts a JSON number with an integral value (8, 8.0, 1e3); a
//   real field accepts any finite JSON number.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace podsim {

// Throws ConfigError("<path>: <message>").
[[noreturn]] void FailAt(const std::string& path, const std::string& message);

// "topology" + "dims" -> "topology.dims"; an empty base gives the key alone.
std::string JoinPath(const std::string& base, std::string_view key);
// "topology.dims" + 1 -> "topology.dims[1]".
std::string IndexPath(const std::string& base, size_t index);

// The accepted range of a number, checked with an error like "must be > 0, got -1".
struct Limit {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;  // true: value > min; false: value >= min

  static Limit Positive() { return {0, std::numeric_limits<double>::infinity(), true}; }
  static Limit NonNegative() { return {0, std::numeric_limits<double>::infinity(), false}; }
  static Limit AtLeast(double v) { return {v, std::numeric_limits<double>::infinity(), false}; }
  static Limit Between(double lo, double hi) { return {lo, hi, false}; }
  bool Accepts(double v) const;
  std::string Describe() const;  // "must be > 0", "must be in [1, 8]"
};

// A short rendering of a JSON value for messages: numbers and bools as written, strings quoted,
// arrays and objects abbreviated.
std::string Brief(const nlohmann::json& value);

// Typed conversions of one value, with the value's path in any error.
int64_t AsInt(const nlohmann::json& value, const std::string& path, Limit limit = {});
double AsDouble(const nlohmann::json& value, const std::string& path, Limit limit = {});
bool AsBool(const nlohmann::json& value, const std::string& path);
std::string AsString(const nlohmann::json& value, const std::string& path);
// `value` must be one of `choices`.
std::string AsChoice(const nlohmann::json& value, const std::string& path,
                     const std::vector<std::string>& choices);
// `value` must be an array; returns it.
const nlohmann::json& AsArray(const nlohmann::json& value, const std::string& path);

// Reads the fields of one JSON object. Getters without a fallback require the key; getters with
// one return it when the key is absent. Every getter marks its key as known; Finish() then
// rejects the unknown keys. Not thread-safe; cheap to create.
class JsonReader {
 public:
  // Throws if `object` is not a JSON object.
  JsonReader(const nlohmann::json& object, std::string path);

  const std::string& path() const { return path_; }
  const nlohmann::json& json() const { return object_; }
  // Path of a key of this object ("topology.dims").
  std::string PathOf(std::string_view key) const { return JoinPath(path_, key); }
  // Whether the key is present; marks it known.
  bool Has(std::string_view key);
  // The raw value of a required key; marks it known.
  const nlohmann::json& Value(std::string_view key);

  int64_t Int(std::string_view key, Limit limit = {});
  int64_t Int(std::string_view key, int64_t fallback, Limit limit = {});
  double Double(std::string_view key, Limit limit = {});
  double Double(std::string_view key, double fallback, Limit limit = {});
  bool Bool(std::string_view key);
  bool Bool(std::string_view key, bool fallback);
  std::string String(std::string_view key);
  std::string String(std::string_view key, const std::string& fallback);
  std::string Choice(std::string_view key, const std::vector<std::string>& choices);
  std::string Choice(std::string_view key, const std::vector<std::string>& choices,
                     const std::string& fallback);
  std::vector<int64_t> IntArray(std::string_view key, Limit limit = {});
  std::vector<bool> BoolArray(std::string_view key);
  // A reader of a nested object (required key).
  JsonReader Object(std::string_view key);
  // A nested object kept as JSON, for a reader further on (a model or sim config): `fallback`
  // when the key is absent; "must be an object" naming the key when it is not one.
  nlohmann::json ObjectValue(std::string_view key,
                             nlohmann::json fallback = nlohmann::json::object());

  // Throws on the first (in key order) key that no getter asked for, listing the known keys.
  // Keys starting with '_' are comments and always accepted.
  void Finish() const;
  // Throws ConfigError("<path>.<key>: <message>").
  [[noreturn]] void Fail(std::string_view key, const std::string& message) const;

 private:
  const nlohmann::json* Find(std::string_view key);

  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
};

// The JSON comment keys of an object (those starting with '_'), in key order; {} if none.
nlohmann::json CommentKeys(const nlohmann::json& object);

// Configs nest at most this deep; a config file is at most this large.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr size_t kMaxJsonFileBytes = size_t{64} << 20;

// Parses JSON text; a syntax error or nesting deeper than kMaxJsonDepth is a ConfigError that
// starts with `what` (a file name).
nlohmann::json ParseJson(const std::string& text, const std::string& what);
// Parses a JSON file (at most kMaxJsonFileBytes); a missing file, a syntax error or too deep a
// nesting is a ConfigError naming the file.
nlohmann::json ReadJsonFile(const std::string& file);

// The value of an override: the text parsed as JSON if it is valid JSON ("2e11", "true",
// "[4,4]", "\"8\""), otherwise the text itself as a string ("tpu-v3-128", "split").
nlohmann::json ParseOverrideValue(const std::string& text);

// Sets the value at a dotted JSON path with optional array indices ("topology.dims[1]"). Missing
// object keys are created (as objects on the way); indices must exist. Throws ConfigError if the
// path is malformed or runs through a value that is not an object / array.
void SetAtPath(nlohmann::json& config, const std::string& path, nlohmann::json value);

// Applies "PATH=VALUE" (ParseOverrideValue, then SetAtPath) to `config`, e.g.
// ApplyOverride(config, "topology.link_bandwidth=2e11").
void ApplyOverride(nlohmann::json& config, const std::string& assignment);

}  // namespace podsim
