#pragma once
// Builds a network model by name ("analytic", "flow", "packet") with its options, from code or
// from JSON (`{"packet_bytes": 4096, "switching": "cut-through", "aggregate_flows": true}`).

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/network/flow_network.h"
#include "sim/network/network_model.h"
#include "sim/network/packet_network.h"

namespace podsim::sim {

// Options of every model; each model reads its own part.
struct NetworkOptions {
  PacketOptions packet;  // packet model
  FlowOptions flow;      // flow model
};

// Names MakeNetworkModel accepts.
std::vector<std::string> NetworkModelNames();

// Throws podsim::Error naming the model if `name` is not one of NetworkModelNames().
// `topology` must outlive the model.
std::unique_ptr<NetworkModel> MakeNetworkModel(const std::string& name, const topo::Topology& topology,
                                               const NetworkOptions& options = {});

// Parses options; an unknown key or a bad value throws podsim::Error naming `path` + key
// (e.g. "network.packet_bytes: must be >= 1, got 0"). Missing keys keep their defaults.
NetworkOptions NetworkOptionsFromJson(const nlohmann::json& json, const std::string& path = "network");
// The fully resolved options, in the form NetworkOptionsFromJson reads.
nlohmann::json NetworkOptionsToJson(const NetworkOptions& options);

// "store-and-forward" / "cut-through".
std::string PacketSwitchingName(PacketSwitching switching);

}  // namespace podsim::sim
