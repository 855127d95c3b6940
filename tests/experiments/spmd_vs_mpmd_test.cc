// GShard's O(1) claim on the MoE Transformer stack (models/moe_stack.h): the SPMD program
// is the same size, in instructions and in bytes, for D = 16 ... 65536, with the collectives'
// groups in the iota form and no per-partition tables; the MPMD baseline's programs verify,
// compute what the SPMD program computes on each device, and grow with D; and the
// "spmd_vs_mpmd" experiment writes the promised files, skipping MPMD over its time budget.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/experiment.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "models/moe_stack.h"
#include "partitioner/annotations.h"
#include "partitioner/equivalence.h"
#include "partitioner/mpmd.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::experiments {
namespace {

partitioner::PartitionResult Lower(ir::Module& m, int64_t d) {
  partitioner::PropagateShardings(m, d);
  partitioner::PartitionOptions options;
  options.num_partitions = d;
  return partitioner::PartitionSpmd(m, options);
}

TEST_CASE("the SPMD program of the MoE stack is the same for D = 16 ... 65536") {
  std::vector<int64_t> instructions;
  std::vector<size_t> bytes;
  for (int64_t d : {16, 1024, 65536}) {
    CAPTURE(d);
    std::unique_ptr<ir::Module> m = models::BuildMoeStack(models::PaperMoeConfig(d), 2);
    partitioner::PartitionResult r = Lower(*m, d);
    // Every sharding propagation produced kept the iota form.
    for (const auto& i : m->entry()->instructions()) {
      if (i->sharding && i->sharding->kind == ir::Sharding::Kind::kTiled) {
        CHECK_MESSAGE(i->sharding->devices.is_iota(), "%" << i->name);
      }
    }
    int64_t all_to_all = 0;
    for (const auto& c : r.module->computations()) {
      for (const auto& i : c->instructions()) {
        if (ir::IsCollective(i->opcode)) {
          CHECK(i->opcode == ir::Opcode::kAllToAll);  // dispatch and combine, nothing else
          CHECK(i->iota_replica_groups.has_value());
          ++all_to_all;
        }
        if (i->opcode == ir::Opcode::kConstant) CHECK(i->literal.NumElements() <= 1);
      }
    }
    CHECK(all_to_all == 4);  // two MoE layers
    instructions.push_back(r.module->InstructionCount());
    bytes.push_back(ir::PrintModule(*r.module).size());
  }
  CHECK(instructions[0] == instructions[1]);
  CHECK(instructions[1] == instructions[2]);
  // Only the printed numbers (shapes, group counts) get longer: well under 2%.
  CHECK(static_cast<double>(bytes[2]) < 1.02 * static_cast<double>(bytes[0]));
}

TEST_CASE("MPMD: per-device programs verify, have no partition-id, and grow with D") {
  std::vector<int64_t> totals;
  for (int64_t d : {4, 8}) {
    CAPTURE(d);
    models::MoeLayerConfig c = models::ToyMoeConfig();
    c.num_groups = c.num_experts = c.num_devices = d;
    std::unique_ptr<ir::Module> m = models::BuildMoeStack(c, 1);
    partitioner::PropagateShardings(*m, d);
    partitioner::MpmdOptions options;
    options.num_partitions = d;
    options.keep_programs = true;
    partitioner::MpmdResult r = partitioner::PartitionMpmd(*m, options);
    REQUIRE(r.complete());
    REQUIRE(static_cast<int64_t>(r.programs.size()) == d);
    int64_t sum = 0;
    for (const auto& p : r.programs) {
      ir::Verify(*p);
      for (const auto& comp : p->computations()) {
        for (const auto& i : comp->instructions()) {
          CHECK(i->opcode != ir::Opcode::kPartitionId);
          if (i->opcode == ir::Opcode::kCollectivePermute) {
            CHECK(i->source_target_pairs.size() <= 2);
          } else {
            CHECK_FALSE(ir::IsCollective(i->opcode));
          }
        }
      }
      sum += p->InstructionCount();
    }
    CHECK(sum == r.instructions);
    // Two all-to-alls over all d devices: d - 1 exchanges each, on every device.
    CHECK(r.transfers == 2 * d * (d - 1));
    totals.push_back(r.instructions);
  }
  CHECK(totals[1] > 2 * totals[0]);
}

TEST_CASE("MPMD: without collectives each device's program computes its SPMD shard") {
  // Uneven rows (10 over 4: shards of 3, the last one 1 real row): iota offsets and padding
  // masks are partition-id arithmetic that MPMD folds into constants.
  auto m = std::make_unique<ir::Module>("local");
  ir::Builder b(m->AddComputation("main", true));
  ir::Instruction* x =
      partitioner::Split(b.Parameter(0, ir::Shape(ir::DType::kF32, {10, 6}), "x"), 0, 4);
  ir::Instruction* rows =
      b.Convert(b.Iota(ir::Shape(ir::DType::kS32, {10, 6}), 0), ir::DType::kF32);
  b.Reduce(b.Mul(x, rows), {1}, ir::ReduceKind::kAdd);
  partitioner::PropagateShardings(*m, 4);
  partitioner::MpmdOptions options;
  options.num_partitions = 4;
  options.keep_programs = true;
  partitioner::MpmdResult mpmd = partitioner::PartitionMpmd(*m, options);
  partitioner::PartitionOptions spmd_options;
  spmd_options.num_partitions = 4;
  partitioner::PartitionResult spmd = partitioner::PartitionSpmd(*m, spmd_options);
  const ir::Literal arg = ir::RandomArguments(*m, 5)[0];
  std::vector<std::vector<ir::Literal>> shards;
  for (int64_t p = 0; p < 4; ++p) {
    shards.push_back({partitioner::ShardOf(arg, *x->sharding, p, 4, 0)});
  }
  const std::vector<ir::Literal> want = ir::InterpretSpmd(*spmd.module, shards, 4);
  for (int64_t p = 0; p < 4; ++p) {
    CAPTURE(p);
    CHECK(ir::Interpret(*mpmd.programs[p], shards[p]) == want[p]);
  }
}

std::string SpmdVsMpmdReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("the spmd_vs_mpmd experiment writes its table, json and plot; MPMD obeys its budget") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "podsim_spmd_vs_mpmd_test").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json config = {{"experiment", "spmd_vs_mpmd"},
                           {"partitions", {2, 4}},
                           {"layer_pairs", 1},
                           {"repetitions", 1},
                           {"model",
                            {{"tokens_per_group", 8},
                             {"d_model", 16},
                             {"d_ff", 32},
                             {"num_heads", 2},
                             {"head_dim", 8},
                             {"seq_len", 4}}}};
  for (double budget : {60.0, 1e-9}) {
    CAPTURE(budget);
    config["mpmd_time_budget_seconds"] = budget;
    const std::string path = dir + "/config.json";
    std::ofstream(path) << config.dump();
    RunOptions options;
    options.out_dir = dir + "/out";
    options.force = true;  // the second budget replaces the first one's results
    const RunSummary summary = RunExperimentFile(path, options);
    const std::string csv = SpmdVsMpmdReadText(dir + "/out/results.csv");
    CHECK(csv.rfind("mode,partitions,instructions,partition_seconds,status\n", 0) == 0);
    CHECK(csv.find("spmd,2,") != std::string::npos);
    CHECK(csv.find("spmd,4,") != std::string::npos);
    const nlohmann::json results =
        nlohmann::json::parse(SpmdVsMpmdReadText(dir + "/out/results.json"));
    CHECK(results["config"]["partitions"] == nlohmann::json({2, 4}));
    if (budget > 1) {
      CHECK(csv.find("mpmd,4,") != std::string::npos);
      CHECK(results["mpmd_skipped"].empty());
      CHECK(summary.ok == 4);
      CHECK(summary.skipped == 0);
    } else {  // the first MPMD point runs out of time: MPMD rows say skipped, and the reason
      CHECK(csv.find("mpmd,2,,,skipped\nspmd,4,") != std::string::npos);
      CHECK(csv.find("mpmd,4,,,skipped\n") != std::string::npos);
      CHECK(summary.ok == 2);
      CHECK(summary.skipped == 2);
      CHECK(!summary.all_failed());
      CHECK(summary.ToString() == "4 points: 2 ok, 0 oom, 0 failed, 2 skipped");
      REQUIRE(results["mpmd_skipped"].size() == 2);
      CHECK(results["mpmd_skipped"][0]["reason"].get<std::string>().find("stopped after") == 0);
    }
  }
  // An unknown key is an error naming its path.
  config["partition"] = 3;
  std::ofstream(dir + "/bad.json") << config.dump();
  RunOptions options;
  options.out_dir = dir + "/bad";
  CHECK_THROWS_WITH(RunExperimentFile(dir + "/bad.json", options), doctest::Contains("partition"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podsim::experiments
