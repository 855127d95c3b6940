// What `podsim partition`, `podsim check` and `podsim simulate --check` do, through the library
// calls they wrap (load and verify, PropagateShardings, which validates the annotations on the
// mesh first, then PartitionSpmd or CheckEquivalence): the shipped examples partition and check, and each kind of bad input is an
// error that names the instruction before anything runs. tests/CMakeLists.txt also runs the
// podsim binary itself on these files.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "partitioner/annotations.h"
#include "partitioner/equivalence.h"
#include "partitioner/propagation.h"
#include "partitioner/sharding_util.h"
#include "partitioner/spmd_partitioner.h"
#include "sim/program/simulate.h"
#include "topologies/load.h"

namespace podsim::partitioner {
namespace {

std::unique_ptr<ir::Module> Load(const std::string& relative) {
  const std::string path = std::string(PODSIM_SOURCE_DIR) + "/" + relative;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing " << path);
  std::stringstream text;
  text << in.rdbuf();
  return ir::ParseModule(text.str(), path);
}

// podsim partition FILE --mesh MESH, minus the printing.
PartitionResult PartitionCommand(ir::Module& m, const std::string& mesh_text) {
  return PropagateAndPartition(m, DeviceMesh::Parse(mesh_text).num_devices());
}

// podsim check FILE --mesh MESH --seed SEED, minus the printing.
EquivalenceReport CheckCommand(ir::Module& m, const std::string& mesh_text, uint64_t seed) {
  const DeviceMesh mesh = DeviceMesh::Parse(mesh_text);
  PropagateShardings(m, mesh.num_devices());
  PartitionOptions options;
  options.num_partitions = mesh.num_devices();
  return CheckEquivalence(m, options, seed);
}

template <typename Fn>
void ExpectError(Fn fn, const std::string& instruction, const std::string& what) {
  try {
    fn();
    FAIL("no error; expected one naming " << instruction);
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find(instruction) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(what) != std::string::npos, msg);
  }
}

TEST_CASE("partition and check: the MoE layer of Algorithm 2 on 4 and 2x2 partitions") {
  for (const std::string mesh : {"4", "2x2"}) {
    std::unique_ptr<ir::Module> m = Load("experiments/moe_layer.hlo");
    PartitionResult r = PartitionCommand(*m, mesh);
    int64_t all_to_all = 0, collectives = 0;
    for (const auto& i : r.module->entry()->instructions()) {
      collectives += ir::IsCollective(i->opcode) ? 1 : 0;
      all_to_all += i->opcode == ir::Opcode::kAllToAll ? 1 : 0;
    }
    CHECK(all_to_all == 2);
    CHECK(collectives == 2);
    CHECK(ExplainProvenance(r).find("<- %dispatched_expert_inputs") != std::string::npos);
    std::unique_ptr<ir::Module> fresh = Load("experiments/moe_layer.hlo");
    const EquivalenceReport report = CheckCommand(*fresh, mesh, 3);
    INFO(report.ToString());
    CHECK(report.ok());
  }
}

TEST_CASE("check: a module with a manual region") {
  std::unique_ptr<ir::Module> m = Load("tests/cli/data/manual_region.hlo");
  const EquivalenceReport report = CheckCommand(*m, "4", 1);
  INFO(report.ToString());
  CHECK(report.ok());
  CHECK(report.outputs.size() == 1);
}

TEST_CASE("bad input names the instruction before anything runs") {
  // A split into more parts than devices.
  ExpectError(
      [] {
        auto m = Load("tests/cli/data/bad_split.hlo");
        PartitionCommand(*m, "2x2");
      },
      "instruction %x", "splits dim 0 into 8 parts but the mesh has 4 device(s)");
  // Unknown and repeated devices.
  ExpectError(
      [] {
        auto m = ir::ParseModule(
            "HloModule m\nENTRY %e {\n"
            "  ROOT %w = f32[8] parameter(0), sharding={devices=[2]0,7}\n}\n");
        PartitionCommand(*m, "4");
      },
      "instruction %w", "unknown device 7; the mesh has 4 device(s)");
  ExpectError(
      [] {
        ir::ParseModule(
            "HloModule m\nENTRY %e {\n"
            "  ROOT %w = f32[8] parameter(0), sharding={devices=[2]1,1}\n}\n");
      },
      "instruction %w", "names device 1 twice");
  // Contradictory annotations: the API refuses a second, different one.
  ExpectError(
      [] {
        auto m = Load("tests/cli/data/bad_split.hlo");
        Replicate(m->entry()->parameters()[0]);
      },
      "%x", "contradictory annotations");
  // A manual region whose shapes do not match: caught when the file is read.
  ExpectError([] { Load("tests/cli/data/bad_manual.hlo"); }, "%y (manual-to-auto)",
              "manual region shapes do not match: the operand is f32[4], but the shard of f32[8] "
              "under {devices=[4]<=[4]} is f32[2]");
  // A mesh that is not one.
  ExpectError([] { DeviceMesh::Parse("4xz"); }, "mesh '4xz'", "not a positive integer");
}

}  // namespace
}  // namespace podsim::partitioner

namespace podsim::sim {
namespace {

// podsim simulate FILE --check on a global annotated module: partitioned for the mesh, run in
// the simulator's functional mode on each partition's shard of one set of global arguments, and
// compared with the unpartitioned module on those arguments.
TEST_CASE("simulate --check: the simulator's outputs equal the unpartitioned module's") {
  std::unique_ptr<ir::Module> m = partitioner::Load("experiments/moe_layer.hlo");
  REQUIRE(ClassifyProgram(*m) == ProgramKind::kGlobalAnnotated);
  partitioner::PartitionResult r = partitioner::PartitionCommand(*m, "4");
  CHECK(ClassifyProgram(*r.module) == ProgramKind::kSpmd);  // it has its AllToAlls now
  CHECK(ClassifyProgram(*partitioner::Load("experiments/moe_layer_toy.hlo")) ==
        ProgramKind::kUnannotated);
  const std::vector<ir::Literal> args = ir::RandomArguments(*m, 3);
  SimOptions options;
  options.num_partitions = 4;
  options.functional = true;
  options.functional_args = partitioner::ShardArguments(r, args);
  const std::unique_ptr<topo::Topology> topology = topo::LoadTopology("tpu-v3-8");
  const RunResult result = Simulate(*r.module, *topology, options);
  REQUIRE(result.functional);
  REQUIRE(result.functional->outputs.size() == 4);
  const partitioner::EquivalenceReport report =
      partitioner::CompareOutputs(*m, r, args, result.functional->outputs);
  CHECK_MESSAGE(report.ok(), report.ToString());
  // The comparison can fail: one wrong element of partition 2's shard is caught.
  std::vector<ir::Literal> wrong = result.functional->outputs;
  wrong[2].values[5] += 1.0;
  CHECK(!partitioner::CompareOutputs(*m, r, args, wrong).ok());
  // Arguments that are not the shards of `args` (every partition given its own random values, the
  // simulator's default) do not match the unpartitioned run.
  options.functional_args.clear();
  const RunResult unrelated = Simulate(*r.module, *topology, options);
  CHECK(!partitioner::CompareOutputs(*m, r, args, unrelated.functional->outputs).ok());
}

}  // namespace
}  // namespace podsim::sim
