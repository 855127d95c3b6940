#include "sim/network/network_factory.h"

#include "base/error.h"
#include "sim/network/analytic_network.h"

namespace podsim::sim {

std::vector<std::string> NetworkModelNames() { return {"analytic", "flow", "packet"}; }

std::unique_ptr<NetworkModel> MakeNetworkModel(const std::string& name, const topo::Topology& topology,
                                               const NetworkOptions& options) {
  if (name == "analytic") return std::make_unique<AnalyticNetwork>(topology);
  if (name == "flow") return std::make_unique<FlowNetwork>(topology, options.flow);
  if (name == "packet") return std::make_unique<PacketNetwork>(topology, options.packet);
  throw ConfigError("network: unknown model '" + name + "' (expected analytic, flow or packet)");
}

std::string PacketSwitchingName(PacketSwitching switching) {
  return switching == PacketSwitching::kStoreAndForward ? "store-and-forward" : "cut-through";
}

NetworkOptions NetworkOptionsFromJson(const nlohmann::json& json, const std::string& path) {
  if (!json.is_object()) throw ConfigError(path + ": must be an object, got " + json.dump());
  NetworkOptions options;
  for (const auto& [key, value] : json.items()) {
    const std::string where = path + "." + key;
    if (key == "packet_bytes") {
      if (!value.is_number_integer()) throw ConfigError(where + ": must be an integer, got " + value.dump());
      const int64_t bytes = value.get<int64_t>();
      if (bytes < 1) throw ConfigError(where + ": must be >= 1, got " + std::to_string(bytes));
      options.packet.packet_bytes = bytes;
    } else if (key == "switching") {
      const std::string name = value.is_string() ? value.get<std::string>() : "";
      if (name == "store-and-forward") {
        options.packet.switching = PacketSwitching::kStoreAndForward;
      } else if (name == "cut-through") {
        options.packet.switching = PacketSwitching::kCutThrough;
      } else {
        throw ConfigError(where + ": must be \"store-and-forward\" or \"cut-through\", got " + value.dump());
      }
    } else if (key == "aggregate_flows") {
      if (!value.is_boolean()) throw ConfigError(where + ": must be true or false, got " + value.dump());
      options.flow.aggregate = value.get<bool>();
    } else {
      throw ConfigError(where + ": unknown key (expected packet_bytes, switching, aggregate_flows)");
    }
  }
  return options;
}

nlohmann::json NetworkOptionsToJson(const NetworkOptions& options) {
  return nlohmann::json{{"packet_bytes", options.packet.packet_bytes},
                        {"switching", PacketSwitchingName(options.packet.switching)},
                        {"aggregate_flows", options.flow.aggregate}};
}

std::vector<double> LinkUtilization(const NetworkModel& model, const topo::Topology& topology, Time elapsed) {
  if (elapsed.picos() <= 0) throw Error("LinkUtilization: elapsed time must be > 0, got " + std::to_string(elapsed.picos()) + " ps");
  const std::vector<double>& bytes = model.LinkBytes();
  const auto& links = topology.links();
  std::vector<double> utilization(links.size(), 0.0);
  for (size_t l = 0; l < links.size() && l < bytes.size(); ++l) {
    utilization[l] = bytes[l] / (links[l].bandwidth.value * elapsed.seconds());
  }
  return utilization;
}

}  // namespace podsim::sim
