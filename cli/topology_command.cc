// podsim topology NAME_OR_FILE [--json] [--route SRC DST] [--set PATH=VALUE]... [--mesh AxB]
//                              [--cores] [--links]
// podsim topology --list
// Describes a pod: dims, wraparound, cores per chip, links and bandwidths, core numbering, and
// optionally a route, the mapping of a logical device mesh, or every link.

#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/version.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "partitioner/sharding_util.h"
#include "topologies/describe.h"
#include "topologies/load.h"
#include "topologies/topology.h"

namespace podsim::cli {
namespace {

void PrintTopologyUsage(std::ostream& os, const po::options_description& visible) {
  os << "usage: podsim topology NAME_OR_FILE [options]\n"
        "       podsim topology --list\n"
        "NAME_OR_FILE is a preset name (see --list) or a topology JSON file (docs/config.md).\n\n"
     << visible;
}

}  // namespace

int TopologyCommand(const Args& args) {
  po::options_description visible("options");
  // clang-format off
  visible.add_options()
      ("help,h", "show this help")
      ("list", "list the preset names")
      ("json", "print one JSON object instead of text")
      ("route", po::value<std::vector<int64_t>>()->multitoken(),
       "SRC DST: explain the route between two cores (partition ids)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "PATH=VALUE: override a config value, e.g. topology.link_bandwidth=2e11 (repeatable)")
      ("mesh", po::value<std::string>(),
       "AxB...: show how a logical device mesh maps onto partitions, cores and chips")
      ("cores", "print the core table even for large pods")
      ("links", "list every directed link");
  // clang-format on
  po::options_description hidden;
  hidden.add_options()("topology", po::value<std::string>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("topology", 1);
  po::variables_map vm;
  if (!ParseOptions(args, all, positional, vm)) {
    PrintTopologyUsage(std::cout, visible);
    return 0;
  }
  if (vm.count("list")) {
    for (const std::string& name : topo::TopologyPresets().Names()) std::cout << name << "\n";
    return 0;
  }
  if (!vm.count("topology")) {
    PrintTopologyUsage(std::cerr, visible);
    return 2;
  }
  const std::string name = vm["topology"].as<std::string>();

  const std::unique_ptr<topo::Topology> topology = topo::LoadTopology(
      nlohmann::json(name),
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{});

  std::vector<int64_t> route;
  if (vm.count("route")) {
    route = vm["route"].as<std::vector<int64_t>>();
    if (route.size() != 2) {
      throw ConfigError("--route: expected two core ids SRC DST, got " +
                              std::to_string(route.size()) + " values");
    }
    for (int64_t core : route) {
      if (core < 0 || core >= topology->num_cores()) {
        throw ConfigError("--route: core " + std::to_string(core) +
                                " does not exist (topology " + topology->name() + " has " +
                                std::to_string(topology->num_cores()) + " cores)");
      }
    }
  }
  std::vector<int64_t> mesh;
  if (vm.count("mesh")) mesh = partitioner::DeviceMesh::Parse(vm["mesh"].as<std::string>()).axis_sizes;

  // Everything is computed before anything is printed, so an error prints only the error.
  if (vm.count("json")) {
    nlohmann::json out = topo::DescribeJson(*topology, vm.count("links") > 0);
    StampVersion(out);
    if (!route.empty()) out["route"] = topo::RouteJson(*topology, route[0], route[1]);
    if (!mesh.empty()) out["mesh_mapping"] = topo::MeshMappingJson(*topology, mesh);
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::string text = topology->Describe();
  if (vm.count("cores") && topology->num_chips() > 256) {
    text += topo::CoreTable(*topology, /*max_chips=*/-1);
  }
  if (vm.count("links")) {
    text += "links:\n";
    for (const topo::Link& l : topology->links()) {
      text += "  " + topo::DescribeLink(*topology, l) + "\n";
    }
  }
  if (!mesh.empty()) text += topo::DescribeMeshMapping(*topology, mesh);
  if (!route.empty()) text += topo::DescribeRoute(*topology, route[0], route[1]);
  std::cout << text;
  return 0;
}

}  // namespace podsim::cli
