// What `podsim partition` and `podsim check` do, through the library calls they wrap (load and
// verify, ValidateShardings on the mesh, PropagateShardings, PartitionSpmd or
// CheckEquivalence): the shipped examples partition and check, and each kind of bad input is an
// error that names the instruction before anything runs. tests/CMakeLists.txt also runs the
// podsim binary itself on these files.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/text.h"
#include "partitioner/annotations.h"
#include "partitioner/equivalence.h"
#include "partitioner/propagation.h"
#include "partitioner/sharding_util.h"
#include "partitioner/spmd_partitioner.h"

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
  const DeviceMesh mesh = DeviceMesh::Parse(mesh_text);
  ValidateShardings(m, mesh);
  PropagateShardings(m, mesh.num_devices());
  PartitionOptions options;
  options.num_partitions = mesh.num_devices();
  return PartitionSpmd(m, options);
}

// podsim check FILE --mesh MESH --seed SEED, minus the printing.
EquivalenceReport CheckCommand(ir::Module& m, const std::string& mesh_text, uint64_t seed) {
  const DeviceMesh mesh = DeviceMesh::Parse(mesh_text);
  ValidateShardings(m, mesh);
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
