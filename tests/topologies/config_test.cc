// Topology configs: loading, round trips, and every bad input naming its JSON path.

#include "topologies/config.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/topologies/test_util.h"
#include "topologies/torus.h"

namespace podsim::topo {
namespace {

using testing::ErrorOf;
using testing::LoadError;
using testing::TorusJson;

nlohmann::json With(nlohmann::json j, const std::string& key, nlohmann::json value) {
  j[key] = std::move(value);
  return j;
}

TEST_CASE("defaults come from the member initializers and are written out by ToJson") {
  const TopologyConfig c = TopologyConfig::FromJson({{"kind", "torus"}, {"dims", {4, 4}}}, "t");
  const TopologyConfig defaults;
  CHECK(c.cores_per_chip == defaults.cores_per_chip);
  CHECK(c.link_bandwidth == defaults.link_bandwidth);
  CHECK(c.tie_break == defaults.tie_break);
  const nlohmann::json j = c.ToJson();
  CHECK(j["wraparound"] == nlohmann::json({true, true}));  // torus default
  CHECK(j["name"] == "torus-4x4");
  CHECK(j["tie_break"] == "split");
  CHECK(TopologyConfig::FromJson(j, "t").ToJson() == j);
  // A mesh defaults to no wraparound; a single bool applies to every dimension.
  CHECK(TopologyConfig::FromJson({{"kind", "mesh"}, {"dims", {4, 4}}}, "t").ResolvedWraparound() ==
        std::vector<bool>{false, false});
  CHECK(TopologyConfig::FromJson({{"kind", "mesh"}, {"dims", {2, 2}}, {"wraparound", true}}, "t")
            .ResolvedWraparound() == std::vector<bool>{true, true});
}

TEST_CASE("ToJson round trip rebuilds the same topology; comments survive") {
  nlohmann::json j = TorusJson({4, 8});
  j["_notes"] = "hello";
  j["twist"] = {{"dim", 1}, {"offsets", {2, 0}}};
  const std::unique_ptr<Topology> a = LoadTopology(j, "topology");
  const nlohmann::json resolved = a->ToJson();
  CHECK(resolved["_notes"] == "hello");
  const std::unique_ptr<Topology> b = LoadTopology(resolved, "topology");
  CHECK(b->ToJson() == resolved);
  REQUIRE(b->links().size() == a->links().size());
  for (size_t i = 0; i < a->links().size(); ++i) {
    CHECK(a->links()[i].dst_chip == b->links()[i].dst_chip);
  }
}

TEST_CASE("bad torus values: each error names the JSON path") {
  const nlohmann::json ok = TorusJson({8, 8});
  CHECK(LoadError(ok) == "<no error>");
  CHECK(LoadError(With(ok, "dims", {8, 0})) == "topology.dims[1]: must be >= 1, got 0");
  CHECK(LoadError(With(ok, "dims", {-2})) == "topology.dims[0]: must be >= 1, got -2");
  CHECK(LoadError(With(ok, "dims", nlohmann::json::array())) ==
        "topology.dims: must have 1 to 8 entries, got 0");
  CHECK(LoadError(With(ok, "dims", {4.5})) == "topology.dims[0]: must be an integer, got 4.5");
  CHECK(LoadError(With(ok, "dims", "8x8")) ==
        "topology.dims: must be an array, got a string \"8x8\"");
  CHECK(LoadError(With(ok, "dims", {100000, 100000})) ==
        "topology.dims: too many chips (limit 262144)");
  CHECK(LoadError(With(ok, "link_bandwidth", 0)) == "topology.link_bandwidth: must be > 0, got 0");
  CHECK(LoadError(With(ok, "link_bandwidth", -1e11)) ==
        "topology.link_bandwidth: must be > 0, got -1e+11");
  CHECK(LoadError(With(ok, "link_bandwidth", "fast")) ==
        "topology.link_bandwidth: must be a number, got a string \"fast\"");
  CHECK(LoadError(With(ok, "hop_latency_us", 0)) == "topology.hop_latency_us: must be > 0, got 0");
  CHECK(LoadError(With(ok, "hop_latency_us", -1)) ==
        "topology.hop_latency_us: must be > 0, got -1");
  // 1e13 us would be 1e19 ps, past int64: it used to wrap to 1 ps and make collectives faster.
  CHECK(LoadError(With(ok, "hop_latency_us", 1e13)) ==
        "topology.hop_latency_us: must be <= 1e6 (1 s), got 1e+13");
  CHECK(LoadError(With(ok, "on_chip_bandwidth", -5)) ==
        "topology.on_chip_bandwidth: must be > 0, got -5");
  CHECK(LoadError(With(ok, "on_chip_latency_us", 0)) ==
        "topology.on_chip_latency_us: must be > 0, got 0");
  CHECK(LoadError(With(ok, "cores_per_chip", 0)) ==
        "topology.cores_per_chip: must be in [1, 16], got 0");
  CHECK(LoadError(With(ok, "links_per_neighbor", 0)) ==
        "topology.links_per_neighbor: must be >= 1, got 0");
  CHECK(LoadError(With(ok, "wraparound", {true})) ==
        "topology.wraparound: must have one entry per dimension (2), got 1");
  CHECK(LoadError(With(ok, "wraparound", {true, 1})) ==
        "topology.wraparound[1]: must be true or false, got an integer 1");
  CHECK(LoadError(With(ok, "wraparound", "yes")) ==
        "topology.wraparound: must be true, false or an array of them, got \"yes\"");
  CHECK(
      LoadError(With(ok, "tie_break", "random")) ==
      "topology.tie_break: must be one of \"positive\", \"split\", \"alternate\"; got \"random\"");
  CHECK(LoadError(With(ok, "kind", "ring")) ==
        "topology.kind: must be one of \"torus\", \"mesh\", \"custom\"; got \"ring\"");
  nlohmann::json no_kind = ok;
  no_kind.erase("kind");
  CHECK(LoadError(no_kind) == "topology.kind: required key is missing");
  CHECK(LoadError(With(ok, "bandwith", 1e11))
            .rfind("topology.bandwith: unknown key (known keys:", 0) == 0);
  CHECK(LoadError(With(ok, "num_chips", 4)).rfind("topology.num_chips: unknown key", 0) == 0);
  CHECK(LoadError(42) == "topology: must be a preset name, a JSON file path or an object, got 42");
}

TEST_CASE("bad twist values name topology.twist.*") {
  const nlohmann::json ok = TorusJson({4, 4, 8});
  auto twist = [&](nlohmann::json t) { return LoadError(With(ok, "twist", std::move(t))); };
  CHECK(twist({{"dim", 2}, {"offsets", {2, 2, 0}}}) == "<no error>");
  CHECK(twist({{"dim", 5}, {"offsets", {2, 2, 0}}}) ==
        "topology.twist.dim: must be in [0, 2], got 5");
  CHECK(twist({{"dim", 2}, {"offsets", {2, 2}}}) ==
        "topology.twist.offsets: must have one entry per dimension (3), got 2");
  CHECK(twist({{"dim", 2}, {"offsets", {2, 2, 1}}}) ==
        "topology.twist.offsets[2]: the twisted dimension's own offset must be 0, got 1");
  CHECK(twist({{"dim", 2}, {"offsets", {4, 0, 0}}}) ==
        "topology.twist.offsets[0]: must be in [0, 3], got 4");
  CHECK(twist({{"dim", 2}, {"offsets", {2, 2, 0}}, {"shift", 1}})
            .rfind("topology.twist.shift: unknown key", 0) == 0);
  CHECK(twist({{"offsets", {2, 2, 0}}}) == "topology.twist.dim: required key is missing");
  nlohmann::json mesh = With(ok, "wraparound", {true, true, false});
  CHECK(LoadError(With(mesh, "twist", {{"dim", 2}, {"offsets", {2, 2, 0}}})) ==
        "topology.twist.dim: dimension 2 must have wraparound and size >= 2 to be twisted");
  // Several twists: an array, each named by its index.
  const nlohmann::json v4 = {{{"dim", 0}, {"offsets", {0, 0, 4}}}, {{"dim", 1}, {"offsets", {0, 0, 4}}}};
  CHECK(twist(v4) == "<no error>");
  nlohmann::json twice = v4;
  twice[1]["dim"] = 0;
  CHECK(twist(twice) ==
        "topology.twist[1].dim: dimension 0 is twisted twice (one twist per dimension)");
  nlohmann::json crossed = v4;
  crossed[0]["offsets"] = {0, 2, 4};  // shifting dim 1, itself twisted: order would matter
  CHECK(twist(crossed) ==
        "topology.twist[0].offsets[1]: a twist may shift only dimensions that wrap and are not "
        "twisted themselves; dimension 1 is twisted");
  CHECK(LoadError(With(With(ok, "wraparound", {true, true, false}), "twist", v4)) ==
        "topology.twist[0].offsets[2]: a twist may shift only dimensions that wrap and are not "
        "twisted themselves; dimension 2 does not wrap");
  CHECK(twist({{{"dim", 0}}}) == "topology.twist[0].offsets: required key is missing");
  // A 2-chip twisted axis beside 100,000 chips: a shortest route could cross its wrap 50,000
  // times, and routing would weigh 2 x 50,001 / 2 + 3 = 5e4 choices per pair: refused.
  nlohmann::json lopsided = TorusJson({2, 100000});
  lopsided["twist"] = {{"dim", 0}, {"offsets", {0, 1}}};
  CHECK(LoadError(lopsided).rfind("topology.twist: the twisted dimensions are too short beside "
                                  "the others", 0) == 0);
}

TEST_CASE("bad custom topologies name topology.edges[i] / num_chips") {
  auto custom = [](int64_t chips, nlohmann::json edges) {
    return nlohmann::json{{"kind", "custom"}, {"num_chips", chips}, {"edges", edges}};
  };
  CHECK(LoadError(custom(3, {{0, 1}, {1, 2}})) == "<no error>");
  CHECK(LoadError(custom(8, {{0, 1}, {1, 2}, {2, 9}})) ==
        "topology.edges[2]: chip 9 does not exist (num_chips is 8)");
  CHECK(LoadError(custom(3, {{0, -1}})) ==
        "topology.edges[0]: chip -1 does not exist (num_chips is 3)");
  CHECK(LoadError(custom(4, {{0, 1}, {2, 3}})) ==
        "topology.edges: the graph is disconnected: chip 2 cannot reach chip 0");
  CHECK(LoadError(custom(2, nlohmann::json::array())) ==
        "topology.edges: the graph is disconnected: chip 1 cannot reach chip 0");
  CHECK(LoadError(custom(2, {{0, 0}, {0, 1}})) == "topology.edges[0]: connects chip 0 to itself");
  CHECK(LoadError(custom(2, {{0, 1}, {1, 0}})) ==
        "topology.edges[1]: duplicates edges[0] (chips 0-1)");
  CHECK(LoadError(custom(2, {{0}})).rfind("topology.edges[0]: must be a pair of chip ids", 0) == 0);
  CHECK(LoadError(custom(2, {{0, "1"}})) ==
        "topology.edges[0][1]: must be an integer, got a string \"1\"");
  CHECK(LoadError(custom(2, {{{"chips", {0, 1}}, {"link_bandwidth", 0}}})) ==
        "topology.edges[0].link_bandwidth: must be > 0, got 0");
  CHECK(LoadError(custom(2, {{{"chips", {0, 1}}, {"color", "red"}}}))
            .rfind("topology.edges[0].color: unknown key", 0) == 0);
  CHECK(LoadError(custom(0, nlohmann::json::array())) ==
        "topology.num_chips: must be in [1, 262144], got 0");
  CHECK(LoadError(With(custom(2, {{0, 1}}), "dims", {2})).rfind("topology.dims: unknown key", 0) ==
        0);
  nlohmann::json no_edges = custom(2, {{0, 1}});
  no_edges.erase("edges");
  CHECK(LoadError(no_edges) == "topology.edges: required key is missing");
}

TEST_CASE("errors name the caller's path, and constructors validate too") {
  CHECK(ErrorOf([] {
          LoadTopology(With(TorusJson({4, 0}), "kind", "torus"), "experiment.topology");
        }) == "experiment.topology.dims[1]: must be >= 1, got 0");
  TopologyConfig bad;
  bad.dims = {4, 4};
  bad.link_bandwidth = -1;
  CHECK(ErrorOf([&] { TorusTopology t(bad); }) == "topology.link_bandwidth: must be > 0, got -1");
  bad.kind = "custom";
  CHECK(ErrorOf([&] { TorusTopology t(bad); }).rfind("topology.kind: a torus topology needs", 0) ==
        0);
}

TEST_CASE("LoadTopology: presets, files, preset + overrides") {
  const std::unique_ptr<Topology> preset = LoadTopology("tpu-v3-128");
  CHECK(preset->num_cores() == 128);
  CHECK(
      ErrorOf([] { LoadTopology("tpu-v9-8"); })
          .rfind("topology: unknown topology \"tpu-v9-8\": not a preset and not a file (presets: ",
                 0) == 0);
  CHECK(ErrorOf([] { LoadTopology("tpu-v9-8"); }).find("tpu-v3-2048") != std::string::npos);

  // A preset with some fields replaced.
  const std::unique_ptr<Topology> patched = LoadTopology(
      nlohmann::json{{"preset", "tpu-v3-128"}, {"link_bandwidth", 2e11}, {"wraparound", true}},
      "topology");
  CHECK(patched->num_cores() == 128);
  CHECK(patched->links()[0].bandwidth.value == 2e11);
  CHECK(patched->grid()->wraparound == std::vector<bool>{true, true});
  CHECK(ErrorOf([] {
          LoadTopology(nlohmann::json{{"preset", 3}}, "topology");
        }) == "topology.preset: must be a string, got an integer 3");

  // Files: good, bad value, bad JSON, missing.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("podsim_topo_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string good = write("good.json", R"({"kind": "torus", "dims": [2, 3]})");
  CHECK(LoadTopology(good)->num_chips() == 6);
  const std::string bad = write("bad.json", R"({"kind": "torus", "dims": [2, 0]})");
  CHECK(ErrorOf([&] { LoadTopology(bad); }) == bad + ": topology.dims[1]: must be >= 1, got 0");
  const std::string broken = write("broken.json", R"({"kind": "torus", )");
  CHECK(ErrorOf([&] { LoadTopology(broken); }).rfind(broken + ": invalid JSON", 0) == 0);
  const std::string missing = (dir / "missing.json").string();
  CHECK(ErrorOf([&] { LoadTopology(missing); }) == missing + ": cannot open file");
  // A file that names a preset as its base.
  const std::string based = write("based.json", R"({"preset": "torus-4x4", "cores_per_chip": 2})");
  CHECK(LoadTopology(based)->num_cores() == 32);
  std::filesystem::remove_all(dir);
}

TEST_CASE("overrides change a loaded topology") {
  nlohmann::json root = {{"topology", ExpandTopologyConfig("tpu-v3-32", "topology")}};
  ApplyOverride(root, "topology.link_bandwidth=2e11");
  ApplyOverride(root, "topology.dims[1]=8");
  ApplyOverride(root, "topology.wraparound=[true,true]");
  ApplyOverride(root, "topology.tie_break=alternate");
  const std::unique_ptr<Topology> t = LoadTopology(root["topology"], "topology");
  CHECK(t->num_cores() == 64);  // 4x8 chips x 2 cores
  CHECK(t->links()[0].bandwidth.value == 2e11);
  CHECK(t->ToJson()["tie_break"] == "alternate");
  // 4x8 torus: 32 chips x 4 = 128 ICI links, then 32 x 2 on-chip links.
  CHECK(t->links().size() == 128 + 64);
  ApplyOverride(root, "topology.hop_latency_us=-1");
  CHECK(LoadError(root["topology"]) == "topology.hop_latency_us: must be > 0, got -1");
}

}  // namespace
}  // namespace podsim::topo
