#pragma once
// Helpers shared by the topology tests.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/config.h"
#include "topologies/load.h"

namespace podsim::topo::testing {

// The message of the ConfigError `f` throws, or "<no error>" / "<other exception: ...>".
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception: ") + e.what() + ">";
  }
  return "<no error>";
}

// The error LoadTopology gives for `config` at path "topology".
inline std::string LoadError(const nlohmann::json& config) {
  return ErrorOf([&] { LoadTopology(config, "topology"); });
}

// A torus config with round numbers, for tests to modify.
inline nlohmann::json TorusJson(std::vector<int64_t> dims) {
  return {{"kind", "torus"},
          {"dims", dims},
          {"cores_per_chip", 1},
          {"link_bandwidth", 1e11},
          {"hop_latency_us", 1.0}};
}

}  // namespace podsim::topo::testing
