// The podsim sub-commands themselves (cli/commands.h, the podsim_cli library), called with
// argument lists as main() passes them, their standard output captured.

#include "cli/commands.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/io.h"

namespace podsim::cli {
namespace {

// Runs `command` on `args`; returns its exit code, its standard output in `out`.
template <typename Command>
int Run(Command command, const Args& args, std::string* out) {
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  int rc = 0;
  try {
    rc = command(args);
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  *out = captured.str();
  return rc;
}

const std::string kMoeLayer = std::string(PODSIM_SOURCE_DIR) + "/experiments/moe_layer.hlo";

TEST_CASE("simulate --check: the partitioned run equals the unpartitioned module") {
  std::string out;
  CHECK(Run(SimulateCommand, {kMoeLayer, "--topology", "tpu-v3-8", "--mesh", "4", "--check"},
            &out) == 0);
  CHECK(out.find("check: outputs vs reference interpreter (InterpretSpmd): max error 0 ok") !=
        std::string::npos);
  CHECK(out.find("check: outputs vs the unpartitioned module") != std::string::npos);
  CHECK(out.find("MISMATCH") == std::string::npos);
}

TEST_CASE("train-step: the emitted module passes podsim check and simulate --check") {
  const std::string file =
      (std::filesystem::temp_directory_path() / "podsim_train_step_test.hlo").string();
  std::string out;
  REQUIRE(Run(TrainStepCommand, {"--toy", "--devices", "4", "-o", file}, &out) == 0);
  // 14 weights, each with its two Adafactor statistics, + loss: 1 + 14 + 28 outputs (the
  // gradients only with --gradients: 14 more).
  CHECK(Run(CheckCommand, {file, "--mesh", "2x2", "--seed", "3"}, &out) == 0);
  CHECK(out.find("ok: 43 output(s) within tolerance") != std::string::npos);
  REQUIRE(Run(TrainStepCommand, {"--toy", "--devices", "4", "--gradients", "-o", file}, &out) == 0);
  CHECK(Run(CheckCommand, {file, "--mesh", "2x2", "--seed", "3"}, &out) == 0);
  CHECK(out.find("ok: 57 output(s) within tolerance") != std::string::npos);
  CHECK(Run(SimulateCommand, {file, "--topology", "tpu-v3-8", "--mesh", "4", "--check"}, &out) ==
        0);
  CHECK(out.find("MISMATCH") == std::string::npos);
  CHECK(out.find("backward") != std::string::npos);
  CHECK(out.find("optimizer") != std::string::npos);
  // Plain SGD keeps no state: 1 + 14 outputs.
  REQUIRE(Run(TrainStepCommand, {"--toy", "--devices", "2", "--optimizer", "sgd", "-o", file},
              &out) == 0);
  CHECK(Run(CheckCommand, {file, "--mesh", "2"}, &out) == 0);
  CHECK(out.find("ok: 15 output(s) within tolerance") != std::string::npos);
  CHECK_THROWS_WITH_AS(Run(TrainStepCommand, {"--toy", "--optimizer", "adagrad"}, &out),
                       doctest::Contains("--optimizer.kind"), ConfigError);
  std::filesystem::remove(file);
}

TEST_CASE("train-step --layers: the whole encoder-decoder model's step passes podsim check") {
  const std::string file =
      (std::filesystem::temp_directory_path() / "podsim_train_step_model_test.hlo").string();
  std::string out;
  REQUIRE(Run(TrainStepCommand, {"--toy", "--layers", "2", "--devices", "4", "-o", file}, &out) ==
          0);
  // 34 weights (tests/models/gshard_model_test.cc): 1 + 34 + 2 x 20 + 14 outputs.
  CHECK(Run(CheckCommand, {file, "--mesh", "2x2", "--seed", "3"}, &out) == 0);
  CHECK(out.find("ok: 89 output(s) within tolerance") != std::string::npos);
  CHECK_THROWS_WITH_AS(Run(TrainStepCommand, {"--toy", "--layers", "3"}, &out),
                       doctest::Contains("model.num_layers"), Error);
  // Saving the layers' matmul outputs instead of recomputing them: the same step.
  REQUIRE(Run(TrainStepCommand, {"--toy", "--layers", "2", "--devices", "2", "--remat", "selective",
                                 "-o", file},
              &out) == 0);
  CHECK(Run(CheckCommand, {file, "--mesh", "2"}, &out) == 0);
  CHECK(out.find("ok: 89 output(s) within tolerance") != std::string::npos);
  CHECK_THROWS_WITH_AS(Run(TrainStepCommand, {"--toy", "--layers", "2", "--remat", "some"}, &out),
                       doctest::Contains("--remat: remat policy 'some' is not one of"), ConfigError);
  std::filesystem::remove(file);
}

TEST_CASE("simulate --json: results.json on standard output") {
  std::string out;
  REQUIRE(Run(SimulateCommand, {kMoeLayer, "--topology", "tpu-v3-8", "--mesh", "4", "--json"},
              &out) == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j["status"] == "ok");
  CHECK(j["num_partitions"] == 4);
  CHECK(j["topology"] == "tpu-v3-8");
  // The step is at least its compute and its exposed communication on the critical device.
  CHECK(j["step_time_us"].get<double>() >=
        j["compute_time_us"].get<double>() - 1e-9);
}

TEST_CASE("simulate of XLA text takes the importer's --custom-call-flops") {
  const std::string file = std::string(PODSIM_SOURCE_DIR) + "/tests/cli/data/xla_custom_call.hlo";
  auto step_us = [&](const std::string& flops) {
    std::string out;
    REQUIRE(Run(SimulateCommand,
                {file, "--topology", "tpu-v3-8", "--mesh", "1", "--json", "--custom-call-flops",
                 "fused_kernel=" + flops},
                &out) == 0);
    return nlohmann::json::parse(out)["step_time_us"].get<double>();
  };
  // Both compute-bound (the kernel moves 4 MiB, 9.3 us at 450 GB/s): one more 1e12 flops on
  // tpu-v3-core's matrix unit is 1e12 / (61.5e12 x 0.886 sustained) s = 18,352.3 us.
  const double one = step_us("1e12"), two = step_us("2e12");
  CHECK(two - one == doctest::Approx(1e12 / (61.5e12 * 0.886) * 1e6).epsilon(1e-6));
  std::string out;
  CHECK_THROWS_WITH_AS(Run(SimulateCommand,
                           {file, "--topology", "tpu-v3-8", "--custom-call-flops", "fused_kernel"},
                           &out),
                       doctest::Contains("expected NAME=VALUE"), podsim::Error);
}

TEST_CASE("collective --json: bus bandwidth is the algorithm bandwidth times 2(n-1)/n") {
  std::string out;
  REQUIRE(Run(CollectiveCommand,
              {"--op", "all-reduce", "--bytes", "64KiB", "--topology", "torus-4x4", "--json"},
              &out) == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j["op"] == "all-reduce");
  CHECK(j["partitions"] == 16);
  CHECK(j["bytes"] == 65536);
  // algorithm bandwidth = bytes / time (B/s, time in us); all-reduce bus factor 2 * 15 / 16.
  const double algbw = 65536.0 / (j["time_us"].get<double>() * 1e-6);
  CHECK(j["algorithm_bandwidth_Bps"].get<double>() == doctest::Approx(algbw));
  CHECK(j["bus_bandwidth_Bps"].get<double>() == doctest::Approx(algbw * 30.0 / 16.0));
}

TEST_CASE("topology --list names the shipped presets, found through the data directory") {
  std::string out;
  CHECK(Run(TopologyCommand, {"--list"}, &out) == 0);
  CHECK(out.find("tpu-v3-8\n") != std::string::npos);
  CHECK(out.find("tpu-v4-256-twisted\n") != std::string::npos);
}

TEST_CASE("bad input is an error naming what is wrong") {
  std::string out;
  CHECK_THROWS_WITH_AS(
      Run(SimulateCommand, {kMoeLayer, "--topology", "tpu-v9-8", "--mesh", "4"}, &out),
      doctest::Contains("topology: unknown topology \"tpu-v9-8\": not a preset and not a file"),
      ConfigError);
  CHECK_THROWS_WITH_AS(
      Run(SimulateCommand,
          {kMoeLayer, "--topology", "tpu-v3-8", "--set", "device.hbm_capacity=1.5"}, &out),
      "device.hbm_capacity: must be an integer, got 1.5", ConfigError);
  CHECK_THROWS_WITH_AS(
      Run(SimulateCommand, {kMoeLayer, "--topology", "tpu-v3-8", "--mesh", "16"}, &out),
      doctest::Contains("16 partitions do not fit topology 'tpu-v3-8'"), ConfigError);
}

TEST_CASE("replica groups of different sizes are an error, as in XLA") {
  std::string out;
  CHECK_THROWS_WITH_AS(Run(CollectiveCommand,
                           {"--op", "all-reduce", "--topology", "torus-4x4", "--groups",
                            "[[0,1,2],[3,4]]"},
                           &out),
                       "replica_groups[1]: 2 partitions, but replica_groups[0] has 3: the "
                       "replica groups must all have the same size",
                       ConfigError);
}

TEST_CASE("a collective-permute needs pairs") {
  std::string out;
  CHECK_THROWS_WITH_AS(
      Run(CollectiveCommand, {"--op", "collective-permute", "--topology", "torus-4x4"}, &out),
      doctest::Contains("source_target_pairs: a collective-permute needs at least one"),
      ConfigError);
  CHECK(Run(CollectiveCommand,
            {"--op", "collective-permute", "--topology", "torus-4x4", "--pairs", "[[0,1]]",
             "--json"},
            &out) == 0);
  CHECK(nlohmann::json::parse(out)["partitions"] == 1);
}

TEST_CASE("simulate: the device defaults to the topology preset's chip generation") {
  std::string out;
  REQUIRE(Run(SimulateCommand, {kMoeLayer, "--topology", "tpu-v4-128", "--mesh", "4", "--json"},
              &out) == 0);
  CHECK(nlohmann::json::parse(out)["device"] == "tpu-v4-core");
  REQUIRE(Run(SimulateCommand,
              {kMoeLayer, "--topology", "tpu-v4-128", "--mesh", "4", "--device", "tpu-v3-core",
               "--json"},
              &out) == 0);
  CHECK(nlohmann::json::parse(out)["device"] == "tpu-v3-core");
  // A topology that names no generation keeps the simulator's default; the summary says which.
  REQUIRE(Run(SimulateCommand, {kMoeLayer, "--topology", "torus-4x4", "--mesh", "4"}, &out) == 0);
  CHECK(out.find("moe_layer on torus-4x4, 4 partitions of tpu-v3-core: step") == 0);
  // Overrides reach the topology's device: a slower HBM makes the (memory-bound) toy layer slower.
  REQUIRE(Run(SimulateCommand, {kMoeLayer, "--topology", "tpu-v5e-8", "--mesh", "4", "--json"},
              &out) == 0);
  const nlohmann::json v5e = nlohmann::json::parse(out);
  CHECK(v5e["device"] == "tpu-v5e-core");
  REQUIRE(Run(SimulateCommand,
              {kMoeLayer, "--topology", "tpu-v5e-8", "--mesh", "4", "--set",
               "device.hbm_bandwidth=1e9", "--json"},
              &out) == 0);
  CHECK(nlohmann::json::parse(out)["compute_time_us"].get<double>() >
        v5e["compute_time_us"].get<double>());
}

TEST_CASE("--max-file-size bounds the input files every command reads") {
  std::string out;
  // moe_layer.hlo is 8,051 bytes.
  CHECK_THROWS_WITH_AS(Run(IrCommand, {"verify", kMoeLayer, "--max-file-size", "4KiB"}, &out),
                       doctest::Contains("holds more than 4096 bytes, the most an input file may "
                                         "have (podsim --max-file-size raises the limit)"),
                       Error);
  CHECK(Run(IrCommand, {"verify", kMoeLayer, "--max-file-size", "16KiB"}, &out) == 0);
  CHECK(out.find("ok: module moe_layer") == 0);
  CHECK_THROWS_WITH_AS(Run(IrCommand, {"verify", kMoeLayer, "--max-file-size", "lots"}, &out),
                       doctest::Contains("--max-file-size"), Error);
  SetMaxInputFileBytes(kMaxInputFileBytes);  // the process-wide default again
}

TEST_CASE("simulate --out claims the directory: a second run needs --force") {
  const std::string dir = "/tmp/podsim_cli_simulate_out";
  std::filesystem::remove_all(dir);
  std::string out;
  const Args args = {kMoeLayer, "--topology", "tpu-v3-8", "--mesh", "4", "--out", dir};
  CHECK(Run(SimulateCommand, args, &out) == 0);
  CHECK(ReadFile(dir + "/status") == "status: done\nrun: ok\n");
  CHECK_THROWS_WITH_AS(Run(SimulateCommand, args, &out), doctest::Contains("pass --force"), Error);
  Args forced = args;
  forced.push_back("--force");
  CHECK(Run(SimulateCommand, forced, &out) == 0);
  CHECK(nlohmann::json::parse(ReadFile(dir + "/results.json"))["status"] == "ok");
  std::filesystem::remove_all(dir);
}

TEST_CASE("plan --out: the ranked table, the winner's config, and a module podsim check passes") {
  const std::string dir = "/tmp/podsim_cli_plan_out";
  std::filesystem::remove_all(dir);
  const std::string model = dir + "_model.json";
  WriteFileAtomic(model, nlohmann::json{{"experts", 8},
                                        {"batch_tokens", 64},
                                        {"num_layers", 2},
                                        {"moe_every", 1},
                                        {"d_model", 16},
                                        {"d_ff", 32},
                                        {"num_heads", 4},
                                        {"head_dim", 4},
                                        {"tokens_per_group", 8},
                                        {"seq_len", 4},
                                        {"source_vocab", 16},
                                        {"target_vocab", 12}}
                             .dump());
  std::string out;
  const Args args = {model, "--topology", "tpu-v3-8", "--finalists", "2", "--jobs",
                     "1",   "--out",      dir};
  REQUIRE(Run(PlanCommand, args, &out) == 0);
  CHECK(out.rfind("rank", 0) == 0);
  CHECK(ReadFile(dir + "/status").rfind("status: done\n", 0) == 0);
  const nlohmann::json plan = nlohmann::json::parse(ReadFile(dir + "/plan.json"));
  CHECK(plan["schema_version"].is_number());
  const nlohmann::json& best = plan["candidates"][0];
  CHECK(best["status"] == "best");
  CHECK(nlohmann::json::parse(ReadFile(dir + "/best_model.json")) == best["model"]);
  // The check mesh: each of the winner's axes cut to at most 2.
  std::string mesh;
  for (const char* axis : {"data", "expert", "model"}) {
    const int64_t size = best["mesh"][axis].get<int64_t>();
    mesh += (mesh.empty() ? "" : "x") + std::to_string(std::min<int64_t>(size, 2));
  }
  CHECK(Run(CheckCommand, {dir + "/best_check.hlo", "--mesh", mesh}, &out) == 0);
  CHECK(out.find("output(s) within tolerance") != std::string::npos);
  // A second run into the same directory needs --force; a bad objective is an error.
  CHECK_THROWS_WITH_AS(Run(PlanCommand, args, &out), doctest::Contains("pass --force"), Error);
  CHECK_THROWS_WITH_AS(
      Run(PlanCommand, {model, "--topology", "tpu-v3-8", "--objective", "speed"}, &out),
      doctest::Contains("--objective"), Error);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(model);
}

}  // namespace
}  // namespace podsim::cli
