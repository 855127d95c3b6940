#pragma once
// Human-readable and JSON descriptions of a topology, shared by every kind and by
// `podsim topology`: link summary, core numbering, the core table, routes, and the mapping of a
// logical device mesh onto cores and chips.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace podsim::topo {

// "4x4" (sep "x") or "[2,2,0]"-style lists (sep ",": "2,2,0").
std::string JoinDims(const std::vector<int64_t>& values, const char* sep = "x");
// "1e+11 B/s (100 GB/s)".
std::string FormatBandwidth(double bytes_per_s);
// "1 us", "0.1 us".
std::string FormatLatency(int64_t ps);
// "(0,3)" for grid topologies, "" for custom graphs.
std::string FormatCoords(const Topology& topology, int64_t chip);

// "link 5: chip 1(0,1) -> chip 2(0,2), dim1 +, 1e+11 B/s (100 GB/s), 1 us".
std::string DescribeLink(const Topology& topology, const Link& link);
// Lines "  ICI links: ..." and "  on-chip: ..." (counts, bandwidths, latencies).
std::string DescribeLinks(const Topology& topology, int64_t links_per_neighbor);
// The line "  cores: core = chip*c + local ...".
std::string DescribeCoreNumbering(const Topology& topology);
// The comment keys ("_notes", "_assumptions") as indented lines; "" if none.
std::string DescribeComments(const nlohmann::json& comments);
// The cores on each chip laid out by chip coordinates (rows: second-to-last dimension, columns:
// last; one block per value of the leading dimensions). Only a one-line note when the topology
// has more than max_chips chips (max_chips < 0: no limit).
std::string CoreTable(const Topology& topology, int64_t max_chips);

// Largest and mean chip-to-chip hop counts (dispatches on the topology kind; -1 / -1 when the
// kind is unknown).
int64_t TopologyDiameter(const Topology& topology);
double TopologyMeanHops(const Topology& topology);

// Everything Describe() says, as JSON: name, resolved config, counts, grid, links summary,
// diameter, numbering and one entry per core; with include_links, every link too.
nlohmann::json DescribeJson(const Topology& topology, bool include_links);

// Route(src_core, dst_core) and RouteSplit explained, one line per link; throws
// std::out_of_range for a core that does not exist.
std::string DescribeRoute(const Topology& topology, int64_t src_core, int64_t dst_core);
nlohmann::json RouteJson(const Topology& topology, int64_t src_core, int64_t dst_core);

// The identity mapping of a logical device mesh onto the pod: device at mesh index
// (i0, i1, ...) is partition p = row-major index, which is core p on chip p / cores_per_chip.
// Throws ConfigError (path "mesh") unless the mesh has exactly num_cores() devices.
std::string DescribeMeshMapping(const Topology& topology, const std::vector<int64_t>& mesh_shape);
nlohmann::json MeshMappingJson(const Topology& topology, const std::vector<int64_t>& mesh_shape);

}  // namespace podsim::topo
