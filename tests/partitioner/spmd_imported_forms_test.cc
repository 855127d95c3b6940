// The forms real (imported) HLO is full of that the SPMD lowering must take: two loops sharing
// one body computation, an entry parameter of tuple shape, a nested tuple output, and an opaque
// kernel (custom-call). Each partitioned program is checked against the unpartitioned one on
// random arguments (the interpreter is the reference), except the opaque kernel, which has no
// values: its program is checked by structure. And the MaxText step of the HLO corpus, partitioned
// by its own annotations.

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "base/io.h"
#include "ir/cost.h"
#include "ir/hlo_import.h"
#include "ir/text.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using testing::Split;

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  return ir::ParseModule(text, "t.hlo");
}

int64_t CountOpcode(const ir::Module& m, ir::Opcode op) {
  int64_t n = 0;
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) n += i->opcode == op;
  }
  return n;
}

TEST_CASE("two loops sharing one body share its partitioned form") {
  auto m = Parse(R"(HloModule m
%body {
  %i = s32[] parameter(0)
  %x = f32[8,4] parameter(1), sharding={devices=[2,1]<=[2]}
  %y = f32[8,4] tanh(%x), sharding={devices=[2,1]<=[2]}
  ROOT %t = (f32[8,4]) tuple(%y)
}
ENTRY %main {
  %a = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  %l1 = (f32[8,4]) loop(%a), trip_count=2, body=%body
  %g1 = f32[8,4] get-tuple-element(%l1), index=0, sharding={devices=[2,1]<=[2]}
  %l2 = (f32[8,4]) loop(%g1), trip_count=3, body=%body
  ROOT %g2 = f32[8,4] get-tuple-element(%l2), index=0, sharding={devices=[2,1]<=[2]}
})");
  PartitionResult r = testing::Partition(*m, 2);
  testing::CheckNumerics(*m, r);
  // The entry and one body: the second loop calls the first's partitioned body.
  CHECK(r.module->computations().size() == 2);
  CHECK(CountOpcode(*r.module, ir::Opcode::kLoop) == 2);
  CHECK(testing::TotalCollectives(*r.module) == 0);
}

TEST_CASE("a tuple entry parameter arrives whole; its elements reshard to their users") {
  auto m = Parse(R"(HloModule m
ENTRY %main {
  %p = (f32[8,4], f32[8,4]) parameter(0)
  %a = f32[8,4] get-tuple-element(%p), index=0, sharding={devices=[2,1]<=[2]}
  %b = f32[8,4] get-tuple-element(%p), index=1, sharding={devices=[2,1]<=[2]}
  ROOT %c = f32[8,4] add(%a, %b), sharding={devices=[2,1]<=[2]}
})");
  PartitionResult r = testing::Partition(*m, 2);
  testing::CheckNumerics(*m, r);
  // One sharding per array of the parameter, both replicated (a tuple has no sharding).
  REQUIRE(r.parameter_shardings.size() == 2);
  CHECK(r.parameter_shardings[0] == ir::Sharding::Replicated());
  CHECK(r.parameter_shardings[1] == ir::Sharding::Replicated());
  CHECK(r.module->entry()->parameters()[0]->shape == m->entry()->parameters()[0]->shape);
  // Each partition slices its rows locally: no collective.
  CHECK(testing::TotalCollectives(*r.module) == 0);
}

TEST_CASE("a nested tuple output keeps every array's sharding, depth first") {
  auto m = Parse(R"(HloModule m
ENTRY %main {
  %a = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  %b = f32[8,4] negate(%a), sharding={devices=[1,2]<=[2]}
  %t = (f32[8,4], f32[8,4]) tuple(%a, %b)
  ROOT %n = ((f32[8,4], f32[8,4]), f32[8,4]) tuple(%t, %a)
})");
  PartitionResult r = testing::Partition(*m, 2);
  testing::CheckNumerics(*m, r);
  REQUIRE(r.output_shardings.size() == 3);
  CHECK(r.output_shardings[0] == Split(2, 0, 2));
  CHECK(r.output_shardings[1] == Split(2, 1, 2));
  CHECK(r.output_shardings[2] == Split(2, 0, 2));
}

TEST_CASE("an opaque kernel runs whole on every partition, on replicated operands") {
  auto m = Parse(R"(HloModule m
ENTRY %main {
  %x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  %k = (f32[8,4], f32[2]) custom-call(%x), custom_call_target="fused", flops=1000
  %y = f32[8,4] get-tuple-element(%k), index=0, sharding={devices=[2,1]<=[2]}
  ROOT %z = f32[8,4] negate(%y), sharding={devices=[2,1]<=[2]}
})");
  PartitionResult r = testing::Partition(*m, 2);
  const ir::Instruction* k = nullptr;
  for (const auto& i : r.module->entry()->instructions()) {
    if (i->opcode == ir::Opcode::kCustomCall) k = i.get();
  }
  REQUIRE(k != nullptr);
  // Its operand is the whole x, gathered from the row shards; its result is whole too, and the
  // negate reads its own rows of it without another collective.
  CHECK(k->operands[0]->shape == ir::Shape(ir::DType::kF32, {8, 4}));
  CHECK(k->operands[0]->opcode == ir::Opcode::kAllGather);
  CHECK(k->custom_call_flops == 1000);
  CHECK(testing::TotalCollectives(*r.module) == 1);
  CHECK(r.output_shardings[0] == Split(2, 0, 2));
}

TEST_CASE("an imported general reduction runs whole, its computation copied with it") {
  // XLA text: a product reduction over rows of a row-split x. The opaque kernel gathers x and
  // runs on every partition; the numerics equal the unpartitioned module's.
  ir::HloImport imported = ir::ImportHlo(R"(HloModule m
mul { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b) }
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  one = f32[] constant(1)
  ROOT p = f32[4] reduce(x, one), dimensions={0}, to_apply=mul
})", "t.hlo");
  PartitionResult r = PropagateAndPartition(*imported.module, 2);
  testing::CheckNumerics(*imported.module, r);
  const ir::Instruction* k = nullptr;
  for (const auto& i : r.module->entry()->instructions()) {
    if (i->opcode == ir::Opcode::kCustomCall) k = i.get();
  }
  REQUIRE(k != nullptr);
  REQUIRE(k->body != nullptr);
  CHECK(k->body->parent() == r.module.get());
  ir::Verify(*r.module);
}

TEST_CASE("imported scatter, key-value sort, reduce-window and select-and-scatter run whole") {
  // Each form calls a computation; with split operands the partitioner gathers them, runs the
  // kernel on every partition with a copy of its computation, and the values equal the
  // unpartitioned module's (rows 6 and 1 of x get the updates, row 6 twice).
  ir::HloImport imported = ir::ImportHlo(R"(HloModule m
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
mul { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b) }
ge { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT g = pred[] compare(a, b), direction=GE }
kv { a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT e = pred[] compare(a, b), direction=GT }
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  u = f32[3,4] parameter(1)
  i = s32[3,1] constant({{6},{1},{6}})
  sc = f32[8,4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  pos = s32[8,4] iota(), iota_dimension=0
  srt = (f32[8,4], s32[8,4]) sort(x, pos), dimensions={0}, to_apply=kv
  one = f32[] constant(1)
  rw = f32[4,4] reduce-window(x, one), window={size=2x1 stride=2x1}, to_apply=mul
  zero = f32[] constant(0)
  ss = f32[8,4] select-and-scatter(x, rw, zero), window={size=2x1 stride=2x1}, select=ge, scatter=add
  ROOT t = (f32[8,4], (f32[8,4], s32[8,4]), f32[4,4], f32[8,4]) tuple(sc, srt, rw, ss)
})", "t.hlo");
  PartitionResult r = PropagateAndPartition(*imported.module, 2);
  testing::CheckNumerics(*imported.module, r);
  int64_t with_region = 0;
  for (const auto& i : r.module->entry()->instructions()) {
    if (i->opcode != ir::Opcode::kCustomCall) continue;
    REQUIRE(i->body != nullptr);
    CHECK(i->body->parent() == r.module.get());
    ++with_region;
  }
  // scatter, sort, reduce-window, and select-and-scatter's selection and scatter.
  CHECK(with_region == 5);
  ir::Verify(*r.module);
}

TEST_CASE("the MaxText step of the HLO corpus partitions by its own Sharding custom-calls") {
  const std::string path = std::string(PODSIM_SOURCE_DIR) +
                           "/../shared/hlo-corpus/model_maxtext_train_step_before_opt.hlo";
  if (!std::filesystem::exists(path)) {
    MESSAGE("skipped: no HLO corpus at " << path);
    return;
  }
  ir::HloImport imported = ir::ImportHlo(ReadFile(path), path);
  REQUIRE_FALSE(imported.partitioned);
  const ir::ModuleCost global = ir::AnalyzeCost(*imported.module, 1);
  PartitionResult r = PropagateAndPartition(*imported.module, 8);
  ir::Verify(*r.module);
  const ir::ModuleCost local = ir::AnalyzeCost(*r.module, 8);
  const double g = global.per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;
  const double l = local.per_unit[static_cast<int>(ir::Unit::kMatrix)].flops;
  MESSAGE("matrix flops: global " << g << ", per partition " << l);
  // Every dot is split over the batch (MaxText's data-parallel annotations): an eighth each.
  CHECK(l == doctest::Approx(g / 8).epsilon(0.01));
}

}  // namespace
}  // namespace podsim::partitioner
