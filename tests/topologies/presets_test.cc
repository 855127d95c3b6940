// Every preset loads, with the documented size, link count and numbers; and descriptions.

#include <doctest/doctest.h>

#include <algorithm>

#include "base/config.h"
#include "tests/topologies/test_util.h"
#include "topologies/describe.h"
#include "topologies/torus.h"

namespace podsim::topo {
namespace {

using testing::ErrorOf;

struct Expected {
  const char* name;
  int64_t chips;
  int64_t cores;
  int64_t ici_links;  // derived by hand below
  double link_bandwidth;
};

// ICI links: a ring of n chips has 2n directed links, a line 2(n-1); a dimension contributes
// that times the number of lines along it (chips / n).
const Expected kPresets[] = {
    {"tpu-v3-8", 4, 8, 8, 1e11},                    // 2x2 mesh: 2 dims x 2 lines x 2
    {"tpu-v3-16", 8, 16, 24, 1e11},                 // 2x4, ring on the 4 axis: 4 x 2 + 2 x 8
    {"tpu-v3-32", 16, 32, 64, 1e11},                // 4x4 torus: 16 x 4
    {"tpu-v3-64", 32, 64, 128, 1e11},               // 4x8 torus: 32 x 4
    {"tpu-v3-128", 64, 128, 256, 1e11},             // 8x8 torus: 64 x 4
    {"tpu-v3-256", 128, 256, 512, 1e11},            // 8x16 torus: 128 x 4
    {"tpu-v3-512", 256, 512, 1024, 1e11},           // 16x16 torus: 256 x 4
    {"tpu-v3-1024", 512, 1024, 2048, 1e11},         // 16x32 torus: 512 x 4
    {"tpu-v3-2048", 1024, 2048, 4096, 1e11},        // 32x32 torus: 1024 x 4
    {"tpu-v4-128", 64, 64, 384, 4.5e10},            // 4x4x4 torus: 64 x 6
    {"tpu-v4-256-twisted", 128, 128, 768, 4.5e10},  // 4x4x8 twisted: 128 x 6
    {"tpu-v4-8192", 4096, 4096, 24576, 4.5e10},     // 16x16x16 torus: 4096 x 6
    {"tpu-v5e-8", 8, 8, 20, 4.5e10},                // 2x4 mesh
    {"tpu-v5e-256", 256, 256, 1024, 4.5e10},        // 16x16 torus: 256 x 4
    {"tpu-v5p-128", 64, 64, 384, 9e10},             // 4x4x4 torus
    {"tpu-v6e-256", 256, 256, 1024, 9e10},          // 16x16 torus
    {"torus-4x4", 16, 16, 64, 1e11},                // 16 x 4
    {"mesh-4x4", 16, 16, 48, 1e11},                 // 2 x 4 x 6
    {"hypercube-16", 16, 16, 64, 1e11},             // 32 edges x 2
};

TEST_CASE("the preset directory holds exactly the documented presets") {
  std::vector<std::string> expected;
  for (const Expected& e : kPresets) expected.push_back(e.name);
  std::sort(expected.begin(), expected.end());
  CHECK(TopologyPresets().Names() == expected);
}

TEST_CASE("every preset loads with its documented size, links and bandwidth") {
  for (const Expected& e : kPresets) {
    CAPTURE(e.name);
    const std::unique_ptr<Topology> t = LoadTopology(e.name);
    CHECK(t->name() == e.name);
    CHECK(t->num_chips() == e.chips);
    CHECK(t->num_cores() == e.cores);
    const int64_t ici = std::count_if(t->links().begin(), t->links().end(),
                                      [](const Link& l) { return l.kind == LinkKind::kIci; });
    CHECK(ici == e.ici_links);
    CHECK(t->links()[0].bandwidth.value == e.link_bandwidth);
    CHECK(t->Describe().find(e.name) != std::string::npos);
    CHECK(LoadTopology(t->ToJson(), "topology")->ToJson() == t->ToJson());
    // Every preset explains itself.
    CHECK(t->ToJson().contains("_notes"));
  }
}

TEST_CASE("TPU presets state their unpublished facts as assumptions") {
  for (const Expected& e : kPresets) {
    const std::string name = e.name;
    if (name.rfind("tpu-", 0) != 0) continue;
    CAPTURE(name);
    const nlohmann::json j = LoadTopology(name)->ToJson();
    REQUIRE(j.contains("_assumptions"));
    const std::string text = j["_assumptions"].dump();
    CHECK(text.find("hop_latency_us") != std::string::npos);
    if (name.rfind("tpu-v3-", 0) == 0) {
      CHECK(text.find("wraparound") != std::string::npos);
      CHECK(j["cores_per_chip"] == 2);
      CHECK(j["link_bandwidth"] == 1e11);
    }
  }
  // v3: every slice is a torus, like the full pod (the assumption docs/calibration.md argues
  // from GShard Figure 9); an axis of 2 chips does not wrap.
  CHECK(LoadTopology("tpu-v3-1024")->grid()->wraparound == std::vector<bool>{true, true});
  CHECK(LoadTopology("tpu-v3-2048")->grid()->wraparound == std::vector<bool>{true, true});
  CHECK(LoadTopology("tpu-v3-128")->grid()->wraparound == std::vector<bool>{true, true});
  CHECK(LoadTopology("tpu-v3-16")->grid()->wraparound == std::vector<bool>{false, true});
}

TEST_CASE("the twisted v4 preset twists both short axes by 4 along the long one; diameter 6") {
  const std::unique_ptr<Topology> t = LoadTopology("tpu-v4-256-twisted");
  CHECK(t->grid()->Twisted(0));
  CHECK(t->grid()->Twisted(1));
  CHECK_FALSE(t->grid()->Twisted(2));
  CHECK(t->grid()->twist_offsets[0] == std::vector<int64_t>{0, 0, 4});
  // An independent BFS over this wiring (Python) gives diameter 6 (plain 4x4x8: 8).
  CHECK(TopologyDiameter(*t) == 6);
  CHECK(TopologyDiameter(*LoadTopology("tpu-v4-128")) == 6);  // 4x4x4 torus: 2 + 2 + 2
}

TEST_CASE("Describe: dims, wraparound, links, numbering and the core table") {
  const std::string d = LoadTopology("tpu-v3-8")->Describe();
  CHECK(d.find("2D mesh 2x2 = 4 chips x 2 cores per chip = 8 cores") != std::string::npos);
  CHECK(d.find("ICI links:   8 directed") != std::string::npos);
  CHECK(d.find("on-chip:     8 directed links") != std::string::npos);
  CHECK(d.find("chip = x0*2 + x1") != std::string::npos);
  CHECK(d.find("core = chip*2 + local core") != std::string::npos);
  CHECK(d.find("assumptions:") != std::string::npos);
  // Core table: row x0 = 1 holds chips 2 and 3, cores 4-5 and 6-7.
  CHECK(d.find("1  4-5  6-7") != std::string::npos);
  // Large pods omit the table unless asked.
  const std::unique_ptr<Topology> pod = LoadTopology("tpu-v3-2048");
  CHECK(pod->Describe().find("core table:  omitted for 1024 chips") != std::string::npos);
  CHECK(CoreTable(*pod, -1).find("2046-2047") != std::string::npos);
}

TEST_CASE("DescribeJson and route explanations") {
  const std::unique_ptr<Topology> t = LoadTopology("torus-4x4");
  const nlohmann::json j = DescribeJson(*t, true);
  CHECK(j["num_cores"] == 16);
  CHECK(j["links"]["ici"] == 64);
  CHECK(j["diameter_hops"] == 4);
  CHECK(j["cores"][6]["coords"] == nlohmann::json({1, 2}));
  CHECK(j["link_list"].size() == 64);
  const nlohmann::json r = RouteJson(*t, 0, 2);
  CHECK(r["hops"] == 2);
  CHECK(r["split"].size() == 2);  // torus-4x4 splits ties
  CHECK(r["latency_us"] == doctest::Approx(2.0));
  const std::string text = DescribeRoute(*t, 0, 10);
  CHECK(text.find("4 hops, latency 4 us") != std::string::npos);
  CHECK(text.find("split over 4 equally short paths") != std::string::npos);
  CHECK_THROWS_AS(DescribeRoute(*t, 0, 16), std::out_of_range);
}

TEST_CASE("mesh mapping: logical device index -> partition -> chip coordinates") {
  const std::unique_ptr<Topology> t = LoadTopology("tpu-v3-8");
  // Mesh 2x4: device [1,0] is partition 4 = core 4, on chip 2 = (1,0), local core 0.
  const nlohmann::json m = MeshMappingJson(*t, {2, 4});
  CHECK(m["devices"][4]["mesh_index"] == nlohmann::json({1, 0}));
  CHECK(m["devices"][4]["chip"] == 2);
  CHECK(m["devices"][4]["coords"] == nlohmann::json({1, 0}));
  CHECK(m["devices"][5]["local"] == 1);
  CHECK(DescribeMeshMapping(*t, {2, 4}).find("[1,1] -> partition 5 -> chip 2 (1,0) core 1") !=
        std::string::npos);
  CHECK(ErrorOf([&] {
          MeshMappingJson(*t, {4, 4});
        }) == "mesh: 4x4 is 16 devices; topology tpu-v3-8 has 8 cores");
  CHECK(ErrorOf([&] { MeshMappingJson(*t, {8, 0}); }) == "mesh[1]: must be >= 1, got 0");
}

}  // namespace
}  // namespace podsim::topo
