#include "topologies/describe.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "base/config.h"
#include "base/format.h"
#include "topologies/custom.h"
#include "topologies/torus.h"

namespace podsim::topo {
namespace {

// Cores of a chip: "4" or "4-5".
std::string CoresOf(const Topology& t, int64_t chip) {
  const int64_t cpc = t.cores_per_chip();
  if (cpc == 1) return std::to_string(chip);
  return std::to_string(chip * cpc) + "-" + std::to_string(chip * cpc + cpc - 1);
}

struct LinkStats {
  int64_t count = 0;
  double min_bw = 0, max_bw = 0;
  int64_t min_lat = 0, max_lat = 0;
};

LinkStats Stats(const Topology& t, LinkKind kind) {
  LinkStats s;
  for (const Link& l : t.links()) {
    if (l.kind != kind) continue;
    if (s.count == 0) {
      s.min_bw = s.max_bw = l.bandwidth.value;
      s.min_lat = s.max_lat = l.latency.picos();
    }
    ++s.count;
    s.min_bw = std::min(s.min_bw, l.bandwidth.value);
    s.max_bw = std::max(s.max_bw, l.bandwidth.value);
    s.min_lat = std::min(s.min_lat, l.latency.picos());
    s.max_lat = std::max(s.max_lat, l.latency.picos());
  }
  return s;
}

std::string Range(const std::string& lo, const std::string& hi) {
  return lo == hi ? lo : lo + " .. " + hi;
}

nlohmann::json LinkJson(const Topology& t, const Link& l) {
  nlohmann::json j = {{"id", l.id},
                      {"kind", l.kind == LinkKind::kIci ? "ici" : "on_chip"},
                      {"src_chip", l.src_chip},
                      {"dst_chip", l.dst_chip},
                      {"bandwidth_bytes_per_s", l.bandwidth.value},
                      {"latency_us", static_cast<double>(l.latency.picos()) / 1e6}};
  if (l.kind == LinkKind::kIci && t.grid() != nullptr) {
    j["dim"] = l.dim;
    j["direction"] = l.direction;
    j["parallel_links"] = l.parallel_links;
  }
  if (l.kind == LinkKind::kOnChip) {
    j["src_core"] = l.src_core;
    j["dst_core"] = l.dst_core;
  }
  return j;
}

}  // namespace

std::string JoinDims(const std::vector<int64_t>& values, const char* sep) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? sep : "") + std::to_string(values[i]);
  return s;
}

std::string FormatBandwidth(double bytes_per_s) {
  return FormatG(bytes_per_s) + " B/s (" + FormatG(bytes_per_s / 1e9) + " GB/s)";
}

std::string DescribeLink(const Topology& t, const Link& l) {
  std::ostringstream os;
  os << "link " << l.id << ": ";
  if (l.kind == LinkKind::kOnChip) {
    os << "on-chip, core " << l.src_core << " -> core " << l.dst_core << " (chip " << l.src_chip
       << ")";
  } else {
    os << "chip " << l.src_chip << FormatCoords(t, l.src_chip) << " -> chip " << l.dst_chip
       << FormatCoords(t, l.dst_chip);
    if (l.dim >= 0) os << ", dim" << l.dim << (l.direction > 0 ? " +" : " -");
  }
  os << ", " << FormatBandwidth(l.bandwidth.value) << ", " << FormatLatency(l.latency.picos());
  return os.str();
}

std::string FormatLatency(int64_t ps) { return FormatG(static_cast<double>(ps) / 1e6) + " us"; }

std::string FormatCoords(const Topology& topology, int64_t chip) {
  if (topology.grid() == nullptr) return "";
  return " (" + JoinDims(topology.ChipCoords(chip), ",") + ")";
}

std::string DescribeLinks(const Topology& topology, int64_t links_per_neighbor) {
  std::ostringstream os;
  const LinkStats ici = Stats(topology, LinkKind::kIci);
  os << "  ICI links:   " << ici.count << " directed";
  if (ici.count > 0) {
    os << "; " << Range(FormatBandwidth(ici.min_bw), FormatBandwidth(ici.max_bw))
       << " per direction each";
    if (links_per_neighbor > 1) {
      os << " (" << links_per_neighbor << " parallel physical links per neighbour pair, "
         << FormatG(ici.min_bw / static_cast<double>(links_per_neighbor)) << " B/s each)";
    }
    os << "; hop latency " << Range(FormatLatency(ici.min_lat), FormatLatency(ici.max_lat));
  }
  os << "\n";
  const LinkStats on_chip = Stats(topology, LinkKind::kOnChip);
  if (on_chip.count == 0) {
    os << "  on-chip:     none (1 core per chip)";
  } else {
    os << "  on-chip:     " << on_chip.count << " directed links (one per ordered pair of cores "
       << "on a chip); " << FormatBandwidth(on_chip.min_bw) << " per direction; latency "
       << FormatLatency(on_chip.min_lat);
  }
  os << "\n";
  return os.str();
}

std::string DescribeCoreNumbering(const Topology& topology) {
  const int64_t cpc = topology.cores_per_chip();
  std::ostringstream os;
  if (cpc == 1) return "  cores:       partition id = core = chip (1 core per chip)\n";
  os << "  cores:       partition id = core; core = chip*" << cpc << " + local core (0.." << cpc - 1
     << "); chip = core / " << cpc << "\n";
  return os.str();
}

std::string DescribeComments(const nlohmann::json& comments) {
  if (!comments.is_object() || comments.empty()) return "";
  std::ostringstream os;
  // "_notes" first, then the other comment keys in key order.
  std::vector<std::pair<std::string, nlohmann::json>> items;
  for (auto it = comments.begin(); it != comments.end(); ++it) {
    items.emplace_back(it.key(), it.value());
  }
  std::stable_partition(items.begin(), items.end(),
                        [](const auto& item) { return item.first == "_notes"; });
  for (const auto& [key, value] : items) {
    os << "  " << key.substr(1) << ":\n";
    if (value.is_array()) {
      for (const nlohmann::json& line : value) {
        os << "    - " << (line.is_string() ? line.get<std::string>() : line.dump()) << "\n";
      }
    } else {
      os << "    " << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
    }
  }
  return os.str();
}

std::string CoreTable(const Topology& topology, int64_t max_chips) {
  const int64_t chips = topology.num_chips();
  if (max_chips >= 0 && chips > max_chips) {
    return "  core table:  omitted for " + std::to_string(chips) + " chips (`podsim topology " +
           topology.name() + " --cores` prints it)\n";
  }
  std::ostringstream os;
  const GridShape* g = topology.grid();
  if (g == nullptr) {
    os << "  cores by chip:\n";
    for (int64_t chip = 0; chip < chips; ++chip) {
      os << (chip % 8 == 0 ? "   " : "") << " chip " << chip << ": " << CoresOf(topology, chip)
         << (chip % 8 == 7 || chip == chips - 1 ? "\n" : ";");
    }
    return os.str();
  }
  const int nd = static_cast<int>(g->dims.size());
  const int64_t cols = g->dims[nd - 1];
  const int64_t rows = nd >= 2 ? g->dims[nd - 2] : 1;
  const int64_t blocks = chips / (rows * cols);
  const size_t width = CoresOf(topology, chips - 1).size() + 2;
  auto pad = [width](const std::string& s) {
    return std::string(width > s.size() ? width - s.size() : 1, ' ') + s;
  };
  os << "  cores by chip coordinate (rows x" << (nd >= 2 ? nd - 2 : 0) << ", columns x" << nd - 1
     << "):\n";
  for (int64_t b = 0; b < blocks; ++b) {
    if (nd > 2) {
      const std::vector<int64_t> lead = topology.ChipCoords(b * rows * cols);
      os << "   ";
      for (int d = 0; d < nd - 2; ++d) os << " x" << d << "=" << lead[d];
      os << ":\n";
    }
    os << "    " << std::string(6, ' ');
    for (int64_t c = 0; c < cols; ++c) os << pad(std::to_string(c));
    os << "\n";
    for (int64_t r = 0; r < rows; ++r) {
      std::string label = nd >= 2 ? std::to_string(r) : "";
      os << "    " << std::string(6 - std::min<size_t>(6, label.size()), ' ') << label;
      for (int64_t c = 0; c < cols; ++c) os << pad(CoresOf(topology, (b * rows + r) * cols + c));
      os << "\n";
    }
  }
  return os.str();
}

int64_t TopologyDiameter(const Topology& topology) {
  if (const auto* t = dynamic_cast<const TorusTopology*>(&topology)) return t->Diameter();
  if (const auto* c = dynamic_cast<const CustomTopology*>(&topology)) return c->Diameter();
  return -1;
}

double TopologyMeanHops(const Topology& topology) {
  if (const auto* t = dynamic_cast<const TorusTopology*>(&topology)) return t->MeanHops();
  if (const auto* c = dynamic_cast<const CustomTopology*>(&topology)) return c->MeanHops();
  return -1;
}

nlohmann::json DescribeJson(const Topology& topology, bool include_links) {
  nlohmann::json j;
  j["name"] = topology.name();
  j["config"] = topology.ToJson();
  j["num_chips"] = topology.num_chips();
  j["cores_per_chip"] = topology.cores_per_chip();
  j["num_cores"] = topology.num_cores();
  if (const GridShape* g = topology.grid()) {
    j["grid"] = {{"dims", g->dims}, {"wraparound", g->wraparound}};
    if (g->AnyTwist()) {
      nlohmann::json twists = nlohmann::json::array();
      for (size_t d = 0; d < g->dims.size(); ++d) {
        if (g->Twisted(d)) twists.push_back({{"dim", d}, {"offsets", g->twist_offsets[d]}});
      }
      j["grid"]["twist"] = std::move(twists);
    }
  }
  const LinkStats ici = Stats(topology, LinkKind::kIci);
  const LinkStats on_chip = Stats(topology, LinkKind::kOnChip);
  j["links"] = {{"ici", ici.count},
                {"on_chip", on_chip.count},
                {"ici_bandwidth_bytes_per_s", {{"min", ici.min_bw}, {"max", ici.max_bw}}},
                {"ici_latency_us",
                 {{"min", static_cast<double>(ici.min_lat) / 1e6},
                  {"max", static_cast<double>(ici.max_lat) / 1e6}}},
                {"on_chip_bandwidth_bytes_per_s", on_chip.min_bw},
                {"on_chip_latency_us", static_cast<double>(on_chip.min_lat) / 1e6}};
  if (topology.num_chips() <= 4096) {
    j["diameter_hops"] = TopologyDiameter(topology);
    j["mean_hops"] = TopologyMeanHops(topology);
  }
  j["numbering"] = {{"chips", topology.grid() != nullptr
                                  ? "row-major over coordinates, the last coordinate fastest"
                                  : "as in the edge list"},
                    {"cores", "partition id = core; core = chip * cores_per_chip + local core"}};
  nlohmann::json cores = nlohmann::json::array();
  for (int64_t core = 0; core < topology.num_cores(); ++core) {
    const int64_t chip = topology.ChipOfCore(core);
    cores.push_back({{"core", core},
                     {"chip", chip},
                     {"local", topology.LocalCore(core)},
                     {"coords", topology.ChipCoords(chip)}});
  }
  j["cores"] = std::move(cores);
  if (include_links) {
    nlohmann::json links = nlohmann::json::array();
    for (const Link& l : topology.links()) links.push_back(LinkJson(topology, l));
    j["link_list"] = std::move(links);
  }
  return j;
}

std::string DescribeRoute(const Topology& topology, int64_t src_core, int64_t dst_core) {
  const std::vector<int64_t> route = topology.Route(src_core, dst_core);
  const int64_t src_chip = topology.ChipOfCore(src_core);
  const int64_t dst_chip = topology.ChipOfCore(dst_core);
  std::ostringstream os;
  int64_t latency = 0;
  double bottleneck = 0;
  for (int64_t id : route) {
    const Link& l = topology.links()[id];
    latency += l.latency.picos();
    bottleneck =
        bottleneck == 0 ? l.bandwidth.value : std::min(bottleneck, l.bandwidth.value);
  }
  os << "route core " << src_core << " (chip " << src_chip << FormatCoords(topology, src_chip)
     << ") -> core " << dst_core << " (chip " << dst_chip << FormatCoords(topology, dst_chip)
     << "): " << route.size() << " hops, latency " << FormatLatency(latency);
  if (!route.empty()) os << ", bottleneck " << FormatBandwidth(bottleneck);
  os << "\n";
  for (int64_t id : route) os << "  " << DescribeLink(topology, topology.links()[id]) << "\n";
  const std::vector<Topology::WeightedPath> split = topology.RouteSplit(src_core, dst_core);
  if (split.size() > 1) {
    os << "split over " << split.size() << " equally short paths (tie_break split):\n";
    for (size_t i = 0; i < split.size(); ++i) {
      os << "  path " << i << " (" << FormatG(split[i].fraction) << " of the bytes): links";
      for (int64_t id : split[i].links) os << " " << id;
      os << "\n";
    }
  }
  return os.str();
}

nlohmann::json RouteJson(const Topology& topology, int64_t src_core, int64_t dst_core) {
  nlohmann::json j;
  j["src_core"] = src_core;
  j["dst_core"] = dst_core;
  j["src_chip"] = topology.ChipOfCore(src_core);
  j["dst_chip"] = topology.ChipOfCore(dst_core);
  const std::vector<int64_t> route = topology.Route(src_core, dst_core);
  j["hops"] = route.size();
  nlohmann::json links = nlohmann::json::array();
  int64_t latency = 0;
  for (int64_t id : route) {
    links.push_back(LinkJson(topology, topology.links()[id]));
    latency += topology.links()[id].latency.picos();
  }
  j["links"] = std::move(links);
  j["latency_us"] = static_cast<double>(latency) / 1e6;
  nlohmann::json paths = nlohmann::json::array();
  for (const Topology::WeightedPath& p : topology.RouteSplit(src_core, dst_core)) {
    paths.push_back({{"links", p.links}, {"fraction", p.fraction}});
  }
  j["split"] = std::move(paths);
  return j;
}

namespace {

void CheckMesh(const Topology& topology, const std::vector<int64_t>& mesh_shape) {
  if (mesh_shape.empty()) FailAt("mesh", "must have at least one dimension");
  int64_t devices = 1;
  for (size_t i = 0; i < mesh_shape.size(); ++i) {
    if (mesh_shape[i] < 1) {
      FailAt(IndexPath("mesh", i), "must be >= 1, got " + std::to_string(mesh_shape[i]));
    }
    devices *= mesh_shape[i];
    if (devices > topology.num_cores()) break;
  }
  if (devices != topology.num_cores()) {
    FailAt("mesh", JoinDims(mesh_shape) + " is " + std::to_string(devices) + " devices; topology " +
                       topology.name() + " has " + std::to_string(topology.num_cores()) + " cores");
  }
}

std::vector<int64_t> MeshIndex(const std::vector<int64_t>& shape, int64_t p) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = p % shape[d];
    p /= shape[d];
  }
  return index;
}

}  // namespace

std::string DescribeMeshMapping(const Topology& topology, const std::vector<int64_t>& mesh_shape) {
  CheckMesh(topology, mesh_shape);
  std::ostringstream os;
  os << "logical mesh " << JoinDims(mesh_shape) << " on " << topology.name()
     << ": device at mesh index i (row-major) = partition p = core p; chip = p / "
     << topology.cores_per_chip() << "\n";
  for (int64_t p = 0; p < topology.num_cores(); ++p) {
    const int64_t chip = topology.ChipOfCore(p);
    os << "  [" << JoinDims(MeshIndex(mesh_shape, p), ",") << "] -> partition " << p << " -> chip "
       << chip << FormatCoords(topology, chip) << " core " << topology.LocalCore(p) << "\n";
  }
  return os.str();
}

nlohmann::json MeshMappingJson(const Topology& topology, const std::vector<int64_t>& mesh_shape) {
  CheckMesh(topology, mesh_shape);
  nlohmann::json devices = nlohmann::json::array();
  for (int64_t p = 0; p < topology.num_cores(); ++p) {
    const int64_t chip = topology.ChipOfCore(p);
    devices.push_back({{"mesh_index", MeshIndex(mesh_shape, p)},
                       {"partition", p},
                       {"chip", chip},
                       {"coords", topology.ChipCoords(chip)},
                       {"local", topology.LocalCore(p)}});
  }
  return {{"mesh_shape", mesh_shape}, {"devices", std::move(devices)}};
}

}  // namespace podsim::topo
