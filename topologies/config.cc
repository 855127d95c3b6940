#include "topologies/config.h"

#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <utility>

#include "base/config.h"
#include "base/format.h"

namespace podsim::topo {
namespace {

constexpr int kMaxDims = 8;
constexpr int64_t kMaxChips = int64_t{1} << 18;  // 262,144 chips: far beyond any real pod
constexpr int64_t kMaxCoresPerChip = 16;
constexpr int64_t kMaxCores = int64_t{1} << 20;

const std::vector<std::string>& KindNames() {
  static const std::vector<std::string> names = {"torus", "mesh", "custom"};
  return names;
}

TieBreak ParseTieBreak(const std::string& s) {
  if (s == "positive") return TieBreak::kPositive;
  if (s == "alternate") return TieBreak::kAlternate;
  return TieBreak::kSplit;
}

void CheckPositive(double v, const std::string& path) {
  if (!(v > 0) || !std::isfinite(v)) {
    FailAt(path, "must be > 0, got " + FormatG(v));
  }
}

// A hop latency in microseconds: > 0, and at most 1 s (1e6 us), far beyond any link, so that
// it converts to picoseconds without overflow.
void CheckLatency(double us, const std::string& path) {
  CheckPositive(us, path);
  if (us > 1e6) FailAt(path, "must be <= 1e6 (1 s), got " + FormatG(us));
}

EdgeConfig ReadEdge(const nlohmann::json& value, const std::string& path) {
  EdgeConfig edge;
  const nlohmann::json* chips = &value;
  std::string chips_path = path;
  std::optional<JsonReader> reader;
  if (value.is_object()) {
    reader.emplace(value, path);
    chips = &reader->Value("chips");
    chips_path = reader->PathOf("chips");
    if (reader->Has("link_bandwidth")) edge.link_bandwidth = reader->Double("link_bandwidth");
    if (reader->Has("hop_latency_us")) edge.hop_latency_us = reader->Double("hop_latency_us");
    reader->Finish();
  }
  if (!chips->is_array() || chips->size() != 2) {
    FailAt(chips_path,
           "must be a pair of chip ids [a, b] (or an object with \"chips\"), got " + Brief(*chips));
  }
  edge.a = AsInt((*chips)[0], IndexPath(chips_path, 0));
  edge.b = AsInt((*chips)[1], IndexPath(chips_path, 1));
  return edge;
}

// Union-find root with path halving.
int64_t Root(std::vector<int64_t>& parent, int64_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

void ValidateGrid(const TopologyConfig& c, const std::string& path) {
  const std::string dims_path = JoinPath(path, "dims");
  if (c.dims.empty() || c.dims.size() > kMaxDims) {
    FailAt(dims_path, "must have 1 to " + std::to_string(kMaxDims) + " entries, got " +
                          std::to_string(c.dims.size()));
  }
  int64_t chips = 1;
  for (size_t i = 0; i < c.dims.size(); ++i) {
    if (c.dims[i] < 1) {
      FailAt(IndexPath(dims_path, i), "must be >= 1, got " + std::to_string(c.dims[i]));
    }
    if (c.dims[i] > kMaxChips || chips * c.dims[i] > kMaxChips) {
      FailAt(dims_path, "too many chips (limit " + std::to_string(kMaxChips) + ")");
    }
    chips *= c.dims[i];
  }
  if (!c.wraparound.empty() && c.wraparound.size() != c.dims.size()) {
    FailAt(JoinPath(path, "wraparound"), "must have one entry per dimension (" +
                                             std::to_string(c.dims.size()) + "), got " +
                                             std::to_string(c.wraparound.size()));
  }
  if (c.links_per_neighbor < 1) {
    FailAt(JoinPath(path, "links_per_neighbor"),
           "must be >= 1, got " + std::to_string(c.links_per_neighbor));
  }
  const std::vector<bool> wraps = c.ResolvedWraparound();
  const int ndims = static_cast<int>(c.dims.size());
  std::vector<bool> twisted(c.dims.size(), false);
  for (size_t i = 0; i < c.twists.size(); ++i) {
    const std::string twist_path =
        c.twists.size() == 1 ? JoinPath(path, "twist") : IndexPath(JoinPath(path, "twist"), i);
    const TwistConfig& t = c.twists[i];
    if (t.dim < 0 || t.dim >= ndims) {
      FailAt(JoinPath(twist_path, "dim"),
             "must be in [0, " + std::to_string(ndims - 1) + "], got " + std::to_string(t.dim));
    }
    if (!wraps[t.dim] || c.dims[t.dim] < 2) {
      FailAt(JoinPath(twist_path, "dim"), "dimension " + std::to_string(t.dim) +
                                              " must have wraparound and size >= 2 to be twisted");
    }
    if (twisted[t.dim]) {
      FailAt(JoinPath(twist_path, "dim"),
             "dimension " + std::to_string(t.dim) + " is twisted twice (one twist per dimension)");
    }
    twisted[t.dim] = true;
  }
  for (size_t i = 0; i < c.twists.size(); ++i) {
    const std::string twist_path =
        c.twists.size() == 1 ? JoinPath(path, "twist") : IndexPath(JoinPath(path, "twist"), i);
    const TwistConfig& t = c.twists[i];
    const std::string off_path = JoinPath(twist_path, "offsets");
    if (t.offsets.size() != c.dims.size()) {
      FailAt(off_path, "must have one entry per dimension (" + std::to_string(ndims) + "), got " +
                           std::to_string(t.offsets.size()));
    }
    for (int e = 0; e < ndims; ++e) {
      if (t.offsets[e] == 0) continue;
      if (e == t.dim) {
        FailAt(IndexPath(off_path, e),
               "the twisted dimension's own offset must be 0, got " + std::to_string(t.offsets[e]));
      }
      if (t.offsets[e] < 0 || t.offsets[e] >= c.dims[e]) {
        FailAt(IndexPath(off_path, e), "must be in [0, " + std::to_string(c.dims[e] - 1) +
                                           "], got " + std::to_string(t.offsets[e]));
      }
      if (!wraps[e] || twisted[e]) {
        FailAt(IndexPath(off_path, e),
               "a twist may shift only dimensions that wrap and are not twisted themselves; "
               "dimension " + std::to_string(e) + (twisted[e] ? " is twisted" : " does not wrap"));
      }
    }
  }
}

void ValidateCustom(const TopologyConfig& c, const std::string& path) {
  if (c.num_chips < 1 || c.num_chips > kMaxChips) {
    FailAt(JoinPath(path, "num_chips"),
           "must be in [1, " + std::to_string(kMaxChips) + "], got " + std::to_string(c.num_chips));
  }
  const std::string edges_path = JoinPath(path, "edges");
  std::map<std::pair<int64_t, int64_t>, size_t> seen;
  std::vector<int64_t> parent(c.num_chips);
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t i = 0; i < c.edges.size(); ++i) {
    const EdgeConfig& e = c.edges[i];
    const std::string edge_path = IndexPath(edges_path, i);
    for (int64_t chip : {e.a, e.b}) {
      if (chip < 0 || chip >= c.num_chips) {
        FailAt(edge_path, "chip " + std::to_string(chip) + " does not exist (num_chips is " +
                              std::to_string(c.num_chips) + ")");
      }
    }
    if (e.a == e.b) FailAt(edge_path, "connects chip " + std::to_string(e.a) + " to itself");
    const auto key = std::minmax(e.a, e.b);
    const auto [it, inserted] = seen.emplace(key, i);
    if (!inserted) {
      FailAt(edge_path, "duplicates edges[" + std::to_string(it->second) + "] (chips " +
                            std::to_string(key.first) + "-" + std::to_string(key.second) + ")");
    }
    if (e.link_bandwidth) CheckPositive(*e.link_bandwidth, JoinPath(edge_path, "link_bandwidth"));
    if (e.hop_latency_us) CheckLatency(*e.hop_latency_us, JoinPath(edge_path, "hop_latency_us"));
    parent[Root(parent, e.a)] = Root(parent, e.b);
  }
  const int64_t root0 = Root(parent, 0);
  for (int64_t chip = 1; chip < c.num_chips; ++chip) {
    if (Root(parent, chip) != root0) {
      FailAt(edges_path,
             "the graph is disconnected: chip " + std::to_string(chip) + " cannot reach chip 0");
    }
  }
}

}  // namespace

const char* TieBreakName(TieBreak t) {
  switch (t) {
    case TieBreak::kPositive:
      return "positive";
    case TieBreak::kSplit:
      return "split";
    case TieBreak::kAlternate:
      return "alternate";
  }
  return "?";
}

int64_t MicrosToPs(double us) {
  const int64_t ps = std::llround(us * 1e6);
  return ps < 1 ? 1 : ps;
}

std::vector<bool> TopologyConfig::ResolvedWraparound() const {
  if (!wraparound.empty()) return wraparound;
  return std::vector<bool>(dims.size(), kind == "torus");
}

int64_t TopologyConfig::NumCores() const {
  int64_t chips = is_grid() ? 1 : num_chips;
  if (is_grid()) {
    for (int64_t d : dims) chips *= d;
  }
  return chips * cores_per_chip;
}

std::string TopologyConfig::ResolvedName() const {
  if (!name.empty()) return name;
  if (!is_grid()) return "custom-" + std::to_string(num_chips);
  std::string s = kind + "-";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

TopologyConfig TopologyConfig::FromJson(const nlohmann::json& json, const std::string& path) {
  TopologyConfig c;
  JsonReader r(json, path);
  c.kind = r.Choice("kind", KindNames());
  c.name = r.String("name", c.name);
  if (c.is_grid()) {
    c.dims = r.IntArray("dims");
    if (r.Has("wraparound")) {
      const nlohmann::json& w = r.Value("wraparound");
      if (w.is_boolean()) {
        c.wraparound.assign(c.dims.size(), w.get<bool>());
      } else if (w.is_array()) {
        c.wraparound = r.BoolArray("wraparound");
      } else {
        r.Fail("wraparound", "must be true, false or an array of them, got " + Brief(w));
      }
    }
    c.links_per_neighbor = r.Int("links_per_neighbor", c.links_per_neighbor);
    c.tie_break = ParseTieBreak(
        r.Choice("tie_break", {"positive", "split", "alternate"}, TieBreakName(c.tie_break)));
    if (r.Has("twist")) {
      // One twist as an object, or several as an array of them.
      const nlohmann::json& value = r.Value("twist");
      const std::string twist_path = r.PathOf("twist");
      auto read = [&](const nlohmann::json& v, const std::string& p) {
        JsonReader t(v, p);
        TwistConfig twist;
        twist.dim = t.Int("dim");
        twist.offsets = t.IntArray("offsets");
        t.Finish();
        c.twists.push_back(std::move(twist));
      };
      if (value.is_array()) {
        for (size_t i = 0; i < value.size(); ++i) read(value[i], IndexPath(twist_path, i));
      } else {
        read(value, twist_path);
      }
    }
  } else {
    c.num_chips = r.Int("num_chips");
    const std::string edges_path = r.PathOf("edges");
    const nlohmann::json& edges = AsArray(r.Value("edges"), edges_path);
    for (size_t i = 0; i < edges.size(); ++i) {
      c.edges.push_back(ReadEdge(edges[i], IndexPath(edges_path, i)));
    }
    c.route_by = r.Choice("route_by", {"hops", "latency"}, "hops") == "latency"
                     ? RouteMetric::kLatency
                     : RouteMetric::kHops;
  }
  c.cores_per_chip = r.Int("cores_per_chip", c.cores_per_chip);
  c.link_bandwidth = r.Double("link_bandwidth", c.link_bandwidth);
  c.hop_latency_us = r.Double("hop_latency_us", c.hop_latency_us);
  c.on_chip_bandwidth = r.Double("on_chip_bandwidth", c.on_chip_bandwidth);
  c.on_chip_latency_us = r.Double("on_chip_latency_us", c.on_chip_latency_us);
  c.device = r.String("device", c.device);
  c.comments = CommentKeys(json);
  r.Finish();
  c.Validate(path);
  return c;
}

void TopologyConfig::Validate(const std::string& path) const {
  const std::string kind_path = JoinPath(path, "kind");
  if (is_grid()) {
    ValidateGrid(*this, path);
  } else if (kind == "custom") {
    ValidateCustom(*this, path);
  } else {
    AsChoice(nlohmann::json(kind), kind_path, KindNames());
  }
  if (cores_per_chip < 1 || cores_per_chip > kMaxCoresPerChip) {
    FailAt(JoinPath(path, "cores_per_chip"), "must be in [1, " + std::to_string(kMaxCoresPerChip) +
                                                 "], got " + std::to_string(cores_per_chip));
  }
  const int64_t chips =
      is_grid() ? std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>())
                : num_chips;
  if (chips * cores_per_chip > kMaxCores) {
    FailAt(JoinPath(path, "cores_per_chip"), "too many cores in total (" +
                                                 std::to_string(chips * cores_per_chip) +
                                                 ", limit " + std::to_string(kMaxCores) + ")");
  }
  CheckPositive(link_bandwidth, JoinPath(path, "link_bandwidth"));
  CheckLatency(hop_latency_us, JoinPath(path, "hop_latency_us"));
  CheckPositive(on_chip_bandwidth, JoinPath(path, "on_chip_bandwidth"));
  CheckLatency(on_chip_latency_us, JoinPath(path, "on_chip_latency_us"));
}

nlohmann::json TopologyConfig::ToJson() const {
  nlohmann::json j = comments.is_object() ? comments : nlohmann::json::object();
  j["kind"] = kind;
  j["name"] = ResolvedName();
  if (!device.empty()) j["device"] = device;
  if (is_grid()) {
    j["dims"] = dims;
    j["wraparound"] = ResolvedWraparound();
    j["links_per_neighbor"] = links_per_neighbor;
    j["tie_break"] = TieBreakName(tie_break);
    nlohmann::json twist_json = nlohmann::json::array();
    for (const TwistConfig& t : twists) twist_json.push_back({{"dim", t.dim}, {"offsets", t.offsets}});
    if (twists.size() == 1) j["twist"] = twist_json[0];
    if (twists.size() > 1) j["twist"] = std::move(twist_json);
  } else {
    j["num_chips"] = num_chips;
    nlohmann::json edges = nlohmann::json::array();
    for (const EdgeConfig& e : this->edges) {
      if (!e.link_bandwidth && !e.hop_latency_us) {
        edges.push_back({e.a, e.b});
        continue;
      }
      nlohmann::json edge = {{"chips", {e.a, e.b}}};
      if (e.link_bandwidth) edge["link_bandwidth"] = *e.link_bandwidth;
      if (e.hop_latency_us) edge["hop_latency_us"] = *e.hop_latency_us;
      edges.push_back(std::move(edge));
    }
    j["edges"] = std::move(edges);
    j["route_by"] = route_by == RouteMetric::kLatency ? "latency" : "hops";
  }
  j["cores_per_chip"] = cores_per_chip;
  j["link_bandwidth"] = link_bandwidth;
  j["hop_latency_us"] = hop_latency_us;
  j["on_chip_bandwidth"] = on_chip_bandwidth;
  j["on_chip_latency_us"] = on_chip_latency_us;
  return j;
}

}  // namespace podsim::topo
