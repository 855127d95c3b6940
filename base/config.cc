#include "base/config.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/format.h"
#include "base/io.h"

namespace podsim {
namespace {

const char* TypeName(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number_float()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

[[noreturn]] void WrongType(const nlohmann::json& v, const std::string& path, const char* want) {
  FailAt(path, std::string("must be ") + want + ", got " + TypeName(v) + " " + Brief(v));
}

void CheckLimit(double v, const std::string& path, const Limit& limit, const std::string& shown) {
  if (!limit.Accepts(v)) FailAt(path, limit.Describe() + ", got " + shown);
}

}  // namespace

void FailAt(const std::string& path, const std::string& message) {
  throw ConfigError(path.empty() ? message : path + ": " + message);
}

std::string JoinPath(const std::string& base, std::string_view key) {
  if (base.empty()) return std::string(key);
  std::string out = base;
  out += '.';
  out += key;
  return out;
}

std::string IndexPath(const std::string& base, size_t index) {
  return base + "[" + std::to_string(index) + "]";
}

bool Limit::Accepts(double v) const {
  if (std::isnan(v)) return false;
  if (min_exclusive ? !(v > min) : !(v >= min)) return false;
  return v <= max;
}

std::string Limit::Describe() const {
  const bool has_min = std::isfinite(min);
  const bool has_max = std::isfinite(max);
  if (has_min && has_max) {
    return "must be in [" + FormatG(min) + ", " + FormatG(max) + "]";
  }
  if (has_min) return std::string("must be ") + (min_exclusive ? "> " : ">= ") + FormatG(min);
  if (has_max) return "must be <= " + FormatG(max);
  return "must be a finite number";
}

std::string Brief(const nlohmann::json& value) {
  std::string s = value.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

int64_t AsInt(const nlohmann::json& value, const std::string& path, Limit limit) {
  if (!value.is_number()) WrongType(value, path, "an integer");
  int64_t result = 0;
  if (value.is_number_integer()) {
    result = value.get<int64_t>();
  } else if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      FailAt(path, "integer too large, got " + Brief(value));
    }
    result = static_cast<int64_t>(u);
  } else {
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) {
      FailAt(path, "must be an integer, got " + Brief(value));
    }
    result = static_cast<int64_t>(d);
  }
  CheckLimit(static_cast<double>(result), path, limit, std::to_string(result));
  return result;
}

double AsDouble(const nlohmann::json& value, const std::string& path, Limit limit) {
  if (!value.is_number()) WrongType(value, path, "a number");
  const double d = value.get<double>();
  if (!std::isfinite(d)) FailAt(path, "must be finite, got " + Brief(value));
  CheckLimit(d, path, limit, FormatG(d));
  return d;
}

bool AsBool(const nlohmann::json& value, const std::string& path) {
  if (!value.is_boolean()) WrongType(value, path, "true or false");
  return value.get<bool>();
}

std::string AsString(const nlohmann::json& value, const std::string& path) {
  if (!value.is_string()) WrongType(value, path, "a string");
  return value.get<std::string>();
}

std::string AsChoice(const nlohmann::json& value, const std::string& path,
                     const std::vector<std::string>& choices) {
  std::string s = AsString(value, path);
  for (const std::string& c : choices) {
    if (s == c) return s;
  }
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
  FailAt(path, "must be one of " + list + "; got " + Brief(value));
}

const nlohmann::json& AsArray(const nlohmann::json& value, const std::string& path) {
  if (!value.is_array()) WrongType(value, path, "an array");
  return value;
}

JsonReader::JsonReader(const nlohmann::json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) WrongType(object_, path_, "an object");
}

const nlohmann::json* JsonReader::Find(std::string_view key) {
  known_.emplace(key);
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

bool JsonReader::Has(std::string_view key) { return Find(key) != nullptr; }

const nlohmann::json& JsonReader::Value(std::string_view key) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) Fail(key, "required key is missing");
  return *v;
}

int64_t JsonReader::Int(std::string_view key, Limit limit) {
  return AsInt(Value(key), PathOf(key), limit);
}
int64_t JsonReader::Int(std::string_view key, int64_t fallback, Limit limit) {
  const nlohmann::json* v = Find(key);
  return v == nullptr ? fallback : AsInt(*v, PathOf(key), limit);
}
double JsonReader::Double(std::string_view key, Limit limit) {
  return AsDouble(Value(key), PathOf(key), limit);
}
double JsonReader::Double(std::string_view key, double fallback, Limit limit) {
  const nlohmann::json* v = Find(key);
  return v == nullptr ? fallback : AsDouble(*v, PathOf(key), limit);
}
bool JsonReader::Bool(std::string_view key) { return AsBool(Value(key), PathOf(key)); }
bool JsonReader::Bool(std::string_view key, bool fallback) {
  const nlohmann::json* v = Find(key);
  return v == nullptr ? fallback : AsBool(*v, PathOf(key));
}
std::string JsonReader::String(std::string_view key) { return AsString(Value(key), PathOf(key)); }
std::string JsonReader::String(std::string_view key, const std::string& fallback) {
  const nlohmann::json* v = Find(key);
  return v == nullptr ? fallback : AsString(*v, PathOf(key));
}
std::string JsonReader::Choice(std::string_view key, const std::vector<std::string>& choices) {
  return AsChoice(Value(key), PathOf(key), choices);
}
std::string JsonReader::Choice(std::string_view key, const std::vector<std::string>& choices,
                               const std::string& fallback) {
  const nlohmann::json* v = Find(key);
  return v == nullptr ? fallback : AsChoice(*v, PathOf(key), choices);
}

std::vector<int64_t> JsonReader::IntArray(std::string_view key, Limit limit) {
  const std::string path = PathOf(key);
  const nlohmann::json& array = AsArray(Value(key), path);
  std::vector<int64_t> out;
  out.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    out.push_back(AsInt(array[i], IndexPath(path, i), limit));
  }
  return out;
}


std::vector<bool> JsonReader::BoolArray(std::string_view key) {
  const std::string path = PathOf(key);
  const nlohmann::json& array = AsArray(Value(key), path);
  std::vector<bool> out;
  out.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) out.push_back(AsBool(array[i], IndexPath(path, i)));
  return out;
}

JsonReader JsonReader::Object(std::string_view key) { return JsonReader(Value(key), PathOf(key)); }

nlohmann::json JsonReader::ObjectValue(std::string_view key, nlohmann::json fallback) {
  if (!Has(key)) return fallback;
  const nlohmann::json& v = Value(key);
  if (!v.is_object()) FailAt(PathOf(key), "must be an object");
  return v;
}

void JsonReader::Finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& key = it.key();
    if (!key.empty() && key[0] == '_') continue;
    if (known_.count(key) != 0) continue;
    std::string list;
    for (const std::string& k : known_) list += (list.empty() ? "" : ", ") + k;
    FailAt(PathOf(key), "unknown key (known keys: " + list + ")");
  }
}

void JsonReader::Fail(std::string_view key, const std::string& message) const {
  FailAt(PathOf(key), message);
}

nlohmann::json CommentKeys(const nlohmann::json& object) {
  nlohmann::json out = nlohmann::json::object();
  if (!object.is_object()) return out;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (!it.key().empty() && it.key()[0] == '_') out[it.key()] = it.value();
  }
  return out;
}

nlohmann::json ParseJson(const std::string& text, const std::string& what) {
  // The parser itself keeps an explicit stack, but printing and copying a value recurse: a
  // config nested past kMaxJsonDepth levels is refused while it is read.
  const nlohmann::json::parser_callback_t limit_depth =
      [&what](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth) {
          throw ConfigError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels");
        }
        return true;
      };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, or out_of_range for a number beyond double (1e999).
    throw ConfigError(what + ": invalid JSON: " + e.what());
  }
}

nlohmann::json ReadJsonFile(const std::string& file) {
  std::ifstream probe(file);
  if (!probe) throw ConfigError(file + ": cannot open file");
  std::string text;
  try {
    text = ReadFile(file, kMaxJsonFileBytes);
  } catch (const Error& e) {
    throw ConfigError(file + ": " + e.what());
  }
  return ParseJson(text, file);
}

nlohmann::json ParseOverrideValue(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return nlohmann::json(text);
  return ParseJson(text, "--set value");  // valid JSON: now with the depth limit
}

namespace {

// One step of a path: an object key or an array index.
struct PathStep {
  bool is_index = false;
  std::string key;
  size_t index = 0;
};

std::vector<PathStep> ParsePath(const std::string& path) {
  std::vector<PathStep> steps;
  size_t i = 0;
  auto bad = [&](const std::string& why) -> void {
    throw ConfigError("override path '" + path + "': " + why);
  };
  if (path.empty()) bad("empty path");
  while (i < path.size()) {
    size_t end = i;
    while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
    if (end == i) bad("empty key at position " + std::to_string(i));
    steps.push_back({false, path.substr(i, end - i), 0});
    i = end;
    while (i < path.size() && path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos || close == i + 1) {
        bad("malformed index at position " + std::to_string(i));
      }
      const std::string digits = path.substr(i + 1, close - i - 1);
      if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) {
        bad("index '" + digits + "' is not a small non-negative integer");
      }
      steps.push_back({true, "", static_cast<size_t>(std::stoul(digits))});
      i = close + 1;
    }
    if (i < path.size()) {
      if (path[i] != '.') bad("unexpected '" + std::string(1, path[i]) + "'");
      ++i;
      if (i == path.size()) bad("path ends with '.'");
    }
  }
  return steps;
}

}  // namespace

void SetAtPath(nlohmann::json& config, const std::string& path, nlohmann::json value) {
  const std::vector<PathStep> steps = ParsePath(path);
  nlohmann::json result = config;  // work on a copy: a failed override changes nothing
  nlohmann::json* cur = &result;
  std::string walked;
  for (const PathStep& step : steps) {
    if (step.is_index) {
      if (!cur->is_array()) {
        FailAt(walked, std::string("is ") + TypeName(*cur) + ", not an array; cannot set " + path);
      }
      if (step.index >= cur->size()) {
        FailAt(walked, "index " + std::to_string(step.index) + " out of range (" +
                           std::to_string(cur->size()) + " elements); cannot set " + path);
      }
      walked = IndexPath(walked, step.index);
      cur = &(*cur)[step.index];
    } else {
      if (cur->is_null()) *cur = nlohmann::json::object();
      if (!cur->is_object()) {
        FailAt(walked.empty() ? std::string("(root)") : walked,
               std::string("is ") + TypeName(*cur) + ", not an object; cannot set " + path);
      }
      walked = JoinPath(walked, step.key);
      cur = &(*cur)[step.key];
    }
  }
  *cur = std::move(value);
  config = std::move(result);
}

void ApplyOverride(nlohmann::json& config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    throw ConfigError("override '" + assignment + "': expected PATH=VALUE");
  }
  SetAtPath(config, assignment.substr(0, eq), ParseOverrideValue(assignment.substr(eq + 1)));
}

}  // namespace podsim
