// The "spatial_partitioning" experiment on a toy network: Table 4's weak-scaling claim read from
// its outputs (the same per-device compute and halo exchange on 8 and 32 cores), the one-image
// memory growing with the image's pixels, and an out-of-memory point that says so in the CSV,
// results.json and the plot.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/error.h"
#include "experiments/experiment.h"

namespace podsim::experiments {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// results.csv's rows by column name (the toy's cells hold no commas or quotes).
std::vector<std::map<std::string, std::string>> ReadRows(const std::string& path) {
  std::istringstream in(ReadText(path));
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split(line);
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (size_t k = 0; k < header.size(); ++k) row[header[k]] = cells[k];
  }
  return rows;
}

TEST_CASE("spatial_partitioning: weak scaling keeps each device's work, OOM is reported") {
  // models::ToyConvNetConfig's network (stem 4 channels, a stride-1 block of 4 and a strided,
  // dilated block of 8, 5 classes, f32), batch 2. Weak: a 32x32 tile per core on a 2x4 and a 4x8
  // mesh. "big": 40000x40000 images on 8 cores, a 20000x10000 tile each: the toy's step holds
  // about 14 GiB per core at 16384x8192 (measured once), so 1.5x the pixels exceed 16 GiB.
  const nlohmann::json config = {
      {"experiment", "spatial_partitioning"},
      {"name", "toy_spatial"},
      {"model",
       {{"batch", 2},
        {"stem_channels", 4},
        {"stages",
         {{{"channels", 4}, {"blocks", 1}, {"stride", 1}, {"dilation", 1}},
          {{"channels", 8}, {"blocks", 1}, {"stride", 2}, {"dilation", 2}}}},
        {"classes", 5},
        {"dtype", "f32"}}},
      {"points",
       {{{"series", "weak"}, {"topology", "tpu-v3-8"}, {"mesh", {2, 4}}, {"image_size", {64, 128}}},
        {{"series", "weak"},
         {"topology", "tpu-v3-32"},
         {"mesh", {4, 8}},
         {"image_size", {128, 256}}},
        {{"series", "big"}, {"topology", "tpu-v3-8"}, {"mesh", {2, 4}}, {"image_size", 40000}}}}};
  const std::string out = (std::filesystem::temp_directory_path() / "podsim_spatial_toy").string();
  std::filesystem::remove_all(out);
  RunOptions options;
  options.out_dir = out;
  RunExperiment(config, "<test>", options);

  const nlohmann::json r = nlohmann::json::parse(ReadText(out + "/results.json"));
  const nlohmann::json& p = r["points"];
  REQUIRE(p.size() == 3);
  // The toy's weights, counted by hand in tests/models/conv_net_test.cc: stem 7*7*3*4 + 8, stage
  // 1 2 x (3*3*4*4 + 8), stage 2 3*3*4*8 + 16 + 3*3*8*8 + 16 + 1*1*4*8 + 16, head 8*5 + 5.
  CHECK(p[0]["parameters"] == 596 + 304 + 944 + 45);
  // Table 4: O(1) compute and O(1) CollectivePermutes per device under weak scaling.
  CHECK(p[0]["status"] == "ok");
  CHECK(p[1]["status"] == "ok");
  CHECK(p[0]["compute_time_us"] == p[1]["compute_time_us"]);
  const nlohmann::json& c0 = p[0]["collectives_per_device"];
  const nlohmann::json& c1 = p[1]["collectives_per_device"];
  CHECK(c0["collective-permute"]["executions"].get<int64_t>() > 0);
  CHECK(c0["collective-permute"]["executions"] == c1["collective-permute"]["executions"]);
  CHECK(c0["collective-permute"]["bytes"] == c1["collective-permute"]["bytes"]);
  // The weights' gradients are all-reduced (f32, 4 bytes each), with the batch-norm statistics.
  CHECK(c0["all-reduce"]["bytes"].get<int64_t>() >= 4 * 1889);
  CHECK(c0["all-reduce"]["bytes"] == c1["all-reduce"]["bytes"]);
  // One image on one core: activations grow with the pixels (4x from 64x128 to 128x256), the
  // weights and optimizer state do not, so its peak grows by a little less than 4x.
  const double small = p[0]["one_image_one_core"]["peak_memory_bytes"].get<double>();
  const double large = p[1]["one_image_one_core"]["peak_memory_bytes"].get<double>();
  CHECK(large / small > 3.5);
  CHECK(large / small <= 4.0);
  CHECK(p[0]["one_image_one_core"]["fits"] == true);
  // The big point: out of memory in every output, with no step time.
  CHECK(p[2]["status"] == "oom");
  CHECK(p[2]["error"].get<std::string>().find("OOM at") != std::string::npos);
  CHECK(p[2]["one_image_one_core"]["fits"] == false);  // one image alone is half the batch
  const auto csv = ReadRows(out + "/results.csv");
  REQUIRE(csv.size() == 3);
  CHECK(csv[2].at("status") == "oom");
  CHECK(csv[2].at("step_ms").empty());
  CHECK(csv[0].at("status") == "ok");
  CHECK(ReadText(out + "/plot.gp").find("'big: oom'") != std::string::npos);
  CHECK(r["summary"].get<std::string>().find("1 oom") != std::string::npos);
}

TEST_CASE("spatial_partitioning: config errors name the JSON path") {
  nlohmann::json config = {
      {"experiment", "spatial_partitioning"},
      {"points", {{{"topology", "tpu-v3-8"}, {"mesh", {4, 4}}, {"image_size", 64}}}}};
  CHECK_THROWS_WITH_AS(CheckExperimentConfig(config, "<test>"), doctest::Contains("points[0].mesh"),
                       ConfigError);
  config["points"][0]["mesh"] = {2, 4};
  config["model"] = {{"image_size", 64}};
  CHECK_THROWS_WITH_AS(CheckExperimentConfig(config, "<test>"),
                       doctest::Contains("model.image_size"), ConfigError);
}

}  // namespace
}  // namespace podsim::experiments
