// How the points of a run ended: a point that cannot run is "failed" in results.csv, in
// results.json and in the status file, the other points still run, and a run in which no point
// gave a result reports it (podsim run then exits non-zero).

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "experiments/experiment.h"

namespace podsim::experiments {
namespace {

namespace fs = std::filesystem;

// An all-reduce of 1 MiB on 4 of the 8 cores of a v3-8 (runs), and on 64 (cannot: the slice
// has 8 cores).
nlohmann::json Sweep(std::vector<int64_t> partitions) {
  nlohmann::json slices = nlohmann::json::array();
  for (int64_t p : partitions) slices.push_back({{"partitions", p}, {"topology", "tpu-v3-8"}});
  return {{"experiment", "collective_sweep"},
          {"name", "status_test"},
          {"collectives", {"all-reduce"}},
          {"payloads", {"1MiB"}},
          {"slices", slices}};
}

RunSummary RunConfig(const nlohmann::json& config, const std::string& dir, int jobs = 0) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/config.json") << config.dump();
  RunOptions options;
  options.out_dir = dir + "/out";
  options.jobs = jobs;
  return RunExperimentFile(dir + "/config.json", options);
}

TEST_CASE("a sweep's plot spans its slices, one colour per series") {
  // Slices of 2, 4 and 8 partitions: the x axis from 2 / 1.19 to 8 x 1.19 (a quarter-octave
  // each side), a tic at each slice; two series (all-reduce and all-to-all of 1 MiB), each in
  // its own colour.
  const std::string dir = (fs::temp_directory_path() / "podsim_sweep_plot").string();
  nlohmann::json config = Sweep({8, 2, 4});
  config["collectives"] = {"all-reduce", "all-to-all"};
  const RunSummary s = RunConfig(config, dir);
  CHECK(s.ok == 6);
  const std::string gp = ReadFile(dir + "/out/plot.gp");
  CHECK(gp.find("set xrange [" + FormatShortest(2 / 1.19) + ":" + FormatShortest(8 * 1.19) + "]") !=
        std::string::npos);
  CHECK(gp.find("set xtics (2,4,8)") != std::string::npos);
  CHECK(gp.find("lc rgb '#0072B2' title 'all-reduce 1MiB (podsim)'") != std::string::npos);
  CHECK(gp.find("lc rgb '#D55E00' title 'all-to-all 1MiB (podsim)'") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a sweep's outputs are byte-identical whatever the number of jobs") {
  // Points of different cost (the 8-core ones last) and one that fails, run on 1, 2 and 3
  // threads: the same rows in the same order, the same results.json.
  const std::string dir = (fs::temp_directory_path() / "podsim_sweep_jobs").string();
  nlohmann::json config = Sweep({2, 64, 4, 8});
  config["collectives"] = {"all-reduce", "all-to-all", "all-gather"};
  config["payloads"] = {"1MiB", "4MiB"};
  std::vector<std::string> csv, json;
  for (int jobs : {1, 2, 3}) {
    const RunSummary s = RunConfig(config, dir, jobs);
    CHECK(s.ok == 18);
    CHECK(s.failed == 6);
    csv.push_back(ReadFile(dir + "/out/results.csv"));
    json.push_back(ReadFile(dir + "/out/results.json"));
  }
  CHECK(csv[1] == csv[0]);
  CHECK(csv[2] == csv[0]);
  CHECK(json[1] == json[0]);
  CHECK(json[2] == json[0]);
  fs::remove_all(dir);
}

TEST_CASE("a failed point is reported in every output, the others still run") {
  const std::string dir = (fs::temp_directory_path() / "podsim_point_status").string();
  const RunSummary s = RunConfig(Sweep({4, 64}), dir);
  CHECK(s.ok == 1);
  CHECK(s.failed == 1);
  CHECK(s.oom == 0);
  CHECK(!s.all_failed());
  CHECK(s.ToString() == "2 points: 1 ok, 0 oom, 1 failed");

  const std::string csv = ReadFile(dir + "/out/results.csv");
  CHECK(csv.rfind("collective,payload_bytes,partitions,topology,status,time_us,paper_us,error\n",
                  0) == 0);
  CHECK(csv.find("\nall-reduce,1048576,4,tpu-v3-8,ok,") != std::string::npos);
  CHECK(csv.find("\nall-reduce,1048576,64,tpu-v3-8,failed,,,") != std::string::npos);
  CHECK(csv.find("exceeds the 8 cores of tpu-v3-8") != std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/out/results.json"));
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["status"] == "ok");
  CHECK(j["points"][0]["time_us"].get<double>() > 0);
  CHECK(j["points"][1]["status"] == "failed");
  CHECK(j["points"][1]["error"].get<std::string>().find("exceeds the 8 cores") !=
        std::string::npos);
  CHECK(j["summary"] == "2 points: 1 ok, 0 oom, 1 failed");
  CHECK(ReadFile(dir + "/out/status") == "status: done\npoints: 2 (1 ok, 0 oom, 1 failed)\n");
  fs::remove_all(dir);
}

TEST_CASE("a run in which every point failed says so in its status file") {
  const std::string dir = (fs::temp_directory_path() / "podsim_point_status_all").string();
  const RunSummary s = RunConfig(Sweep({64}), dir);
  CHECK(s.all_failed());
  CHECK(ReadFile(dir + "/out/status") ==
        "status: failed\nerror: every point failed or ran out of device memory (1 point: 0 ok, "
        "0 oom, 1 failed)\n");
  fs::remove_all(dir);
}

TEST_CASE("a config error is raised before the output directory is touched") {
  const std::string dir = (fs::temp_directory_path() / "podsim_point_status_bad").string();
  nlohmann::json c = Sweep({4});
  c["topology_overrides"] = {{"hop_latency_us", -1}};
  CHECK_THROWS_WITH_AS(RunConfig(c, dir),
                       doctest::Contains("slices[0].topology.hop_latency_us: must be"),
                       ConfigError);
  CHECK(!fs::exists(dir + "/out"));
  // A reference figure of another layout (found by tests/fuzz/experiment_config_fuzz): an error
  // naming it, not an escaped nlohmann::out_of_range.
  c = Sweep({4});
  c["reference"] = {{"file", "experiments/reference/gshard-paper.json"},
                    {"figure", "figure8_moe_layer_us"},
                    {"series", nlohmann::json::object()}};
  CHECK_THROWS_WITH_AS(RunConfig(c, dir),
                       doctest::Contains("reference.figure: 'figure8_moe_layer_us' in "),
                       ConfigError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podsim::experiments

namespace podsim::experiments {
namespace {

TEST_CASE("a size that runs out of device memory is oom in results.csv, bars.csv and the status") {
  const std::string dir = (fs::temp_directory_path() / "podsim_point_status_oom").string();
  // 4 experts on a v3-8 with 1 MiB of HBM per core: the layer's parameters alone exceed it.
  const nlohmann::json config = {
      {"experiment", "moe_layer_breakdown"},
      {"points", {{{"experts", 4}, {"topology", "tpu-v3-8"}}}},
      {"model", {{"tokens_per_group", 1024}, {"d_ff", 2048}}},
      {"sim", {{"device", {{"preset", "tpu-v3-core"}, {"hbm_capacity", 1 << 20}}}}},
      {"details", false}};
  const RunSummary s = RunConfig(config, dir);
  CHECK(s.oom == 1);
  CHECK(s.all_failed());
  const std::string csv = ReadFile(dir + "/out/results.csv");
  CHECK(csv.find("\n4,moe_ffn,") != std::string::npos);
  CHECK(csv.find(",oom\n") != std::string::npos);
  CHECK(csv.find(",ok\n") == std::string::npos);
  CHECK(ReadFile(dir + "/out/bars.csv").find("\n4E modelled (OOM),") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/out/results.json"));
  CHECK(j["points"][0]["status"] == "oom");
  CHECK(j["points"][0]["error"].get<std::string>().rfind("OOM at ", 0) == 0);
  CHECK(ReadFile(dir + "/out/status").find("(1 point: 0 ok, 1 oom, 0 failed)") !=
        std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podsim::experiments
