// Manual regions (GShard 3.2: AutoToManual / ManualToAuto): propagation leaves the region
// {manual}, the lowering copies it as written between two identities, and the partitioned
// program computes what the module computes when every partition runs it in lockstep. Bad
// regions are errors naming the instruction.

#include <doctest/doctest.h>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "partitioner/annotations.h"
#include "partitioner/propagation.h"
#include "tests/partitioner/spmd_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Shape;
using ir::Sharding;

struct Region {
  std::unique_ptr<ir::Module> m = std::make_unique<ir::Module>("manual");
  ir::Builder b{m->AddComputation("main", true)};
  Instruction *x, *enter, *inner, *leave, *out;
};

// x [rows, 6] (split on `split_dim` 4 ways) -> rows over 4 partitions by hand: each partition
// scales its block by (partition-id + 1) and adds the all-reduced block sum (a user collective),
// then the blocks' row sums come back as a [rows] vector; out = that + 1.
Region Build(int64_t rows, int64_t split_dim) {
  Region r;
  ir::Builder& b = r.b;
  r.x = partitioner::Split(b.Parameter(0, Shape(DType::kF32, {rows, 6}), "x"), split_dim, 4);
  r.enter = AutoToManual(b, r.x, Sharding::TiledIota({4, 1}));
  const std::vector<int64_t> block = r.enter->shape.dims;
  Instruction* pid = b.Convert(b.PartitionId(), DType::kF32);
  Instruction* one = b.ConstantScalar(DType::kF32, 1);
  Instruction* scaled = b.Mul(r.enter, b.BroadcastScalar(b.Add(pid, one), block));
  Instruction* total = b.AllReduce(scaled, ir::ReduceKind::kAdd);
  r.inner = b.Reduce(b.Add(scaled, total), {1}, ir::ReduceKind::kAdd);
  r.leave = ManualToAuto(b, r.inner, Sharding::TiledIota({4}), {rows});
  r.out = b.Add(r.leave, b.BroadcastScalar(b.ConstantScalar(DType::kF32, 1), {rows}));
  return r;
}

TEST_CASE("manual region: {manual} inside, copied as written, numerically equal") {
  for (int64_t rows : {8, 7}) {  // even, and uneven (the last block is padding)
    for (int64_t split_dim : {0, 1}) {
      CAPTURE(rows);
      CAPTURE(split_dim);
      Region r = Build(rows, split_dim);
      ir::Verify(*r.m);
      PropagateShardings(*r.m, 4);
      CHECK(r.enter->sharding->kind == Sharding::Kind::kManual);
      CHECK(r.inner->sharding->kind == Sharding::Kind::kManual);
      CHECK(r.leave->sharding == Sharding::TiledIota({4}));
      PartitionResult p = testing::Partition(*r.m, 4);
      INFO(ir::PrintModule(*p.module));
      INFO(ExplainProvenance(p));
      // The user's all-reduce is the only collective, unless x must first move to rows.
      std::map<std::string, int64_t> want = {{"all-reduce", 1}};
      if (split_dim == 1) want["all-to-all"] = 1;
      CHECK(testing::CollectiveCounts(*p.module) == want);
      if (split_dim == 1) {
        CHECK(p.provenance[0].user == r.enter->name);
        CHECK(p.provenance[0].note == "enters a manual region");
      }
      // The region's instructions keep their written (per-partition) shapes.
      for (const auto& i : p.module->entry()->instructions()) {
        if (i->name == r.inner->name) CHECK(i->shape == r.inner->shape);
      }
      testing::CheckNumerics(*r.m, p);
    }
  }
}

TEST_CASE("manual region: partition-id is the device's inside, 0 outside, whatever else reads it") {
  // One partition-id read by the region (each block scaled by its partition's id + 1) and, with
  // `outside`, also by the auto program (a scalar output). Inside the region it is the
  // partition's id, outside 0 (the program is written for one device): the outside read must
  // neither change the region's result nor be reported as a mismatch.
  for (bool outside : {false, true}) {
    CAPTURE(outside);
    auto m = std::make_unique<ir::Module>("pid");
    ir::Builder b(m->AddComputation("main", true));
    Instruction* x = partitioner::Split(b.Parameter(0, Shape(DType::kF32, {8, 6}), "x"), 0, 4);
    Instruction* id = b.PartitionId();
    Instruction* enter = AutoToManual(b, x, Sharding::TiledIota({4, 1}));
    Instruction* scale = b.Add(b.Convert(id, DType::kF32), b.ConstantScalar(DType::kF32, 1));
    Instruction* leave = ManualToAuto(
        b, b.Mul(enter, b.BroadcastScalar(scale, enter->shape.dims)), Sharding::TiledIota({4, 1}),
        {8, 6});
    if (outside) b.Tuple({leave, b.Convert(id, DType::kF32)});
    PropagateShardings(*m, 4);
    PartitionResult p = testing::Partition(*m, 4);
    testing::CheckNumerics(*m, p);
    const std::vector<ir::Literal> args = ir::RandomArguments(*m, 3);
    const std::vector<ir::Literal> got =
        ir::InterpretSpmd(*p.module, ShardArguments(p, args), 4);
    for (int64_t q = 0; q < 4; ++q) {
      const ir::Literal& block = outside ? got[q].elements[0] : got[q];
      for (int64_t k = 0; k < 12; ++k) {  // rows 2q, 2q+1 of x, scaled by q + 1
        CHECK(block.values[k] ==
              static_cast<float>(args[0].values[q * 12 + k] * static_cast<double>(q + 1)));
      }
      if (outside) CHECK(got[q].elements[1].values[0] == 0);
    }
  }
}

TEST_CASE("manual region: a loop inside is copied with its body") {
  Region r;
  ir::Builder& b = r.b;
  r.x = partitioner::Split(b.Parameter(0, Shape(DType::kF32, {8, 4}), "x"), 0, 2);
  r.enter = AutoToManual(b, r.x, Sharding::TiledIota({2, 1}));
  ir::Computation* body = r.m->AddComputation("double");
  {
    ir::Builder bb(body);
    bb.Parameter(0, Shape(DType::kS32, {}), "i");
    Instruction* v = bb.Parameter(1, r.enter->shape, "v");
    bb.Tuple({bb.Add(v, v)});
  }
  Instruction* loop = b.Loop({r.enter}, body, 3);
  r.leave = ManualToAuto(b, b.GetTupleElement(loop, 0), Sharding::TiledIota({2, 1}), {8, 4});
  PropagateShardings(*r.m, 2);
  CHECK(loop->sharding->kind == Sharding::Kind::kManual);
  PartitionResult p = testing::Partition(*r.m, 2);
  CHECK(testing::TotalCollectives(*p.module) == 0);
  testing::CheckNumerics(*r.m, p);
}

TEST_CASE("manual region: text and protobuf keep the boundaries and their tilings") {
  Region r = Build(8, 0);
  const std::string text = ir::PrintModule(*r.m);
  CHECK(text.find("auto-to-manual(%x), tiling={devices=[4,1]<=[4]}, sharding={manual}") !=
        std::string::npos);
  CHECK(text.find("manual-to-auto(%reduce), tiling={devices=[4]<=[4]}") != std::string::npos);
  CHECK(ir::PrintModule(*ir::ParseModule(text)) == text);
  CHECK(ir::PrintModule(*ir::ModuleFromProtoBytes(ir::ModuleToProtoBytes(*r.m))) == text);
  // One partition of several cannot leave the region alone; all of them can.
  const std::vector<ir::Literal> args = ir::RandomArguments(*r.m, 1);
  CHECK_THROWS_WITH_AS(ir::Interpret(*r.m, args, 0, 4), doctest::Contains("use InterpretSpmd"),
                       Error);
  const std::vector<ir::Literal> all = ir::InterpretSpmd(*r.m, {args, args, args, args}, 4);
  CHECK(all[0] == all[3]);
}

// Expects `fn` to throw an error that names `instruction` and contains `what`.
template <typename Fn>
void SpmdManualExpectError(Fn fn, const std::string& instruction, const std::string& what) {
  try {
    fn();
    FAIL("no error; expected one about " << instruction << ": " << what);
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find("%" + instruction) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(what) != std::string::npos, msg);
  }
}

TEST_CASE("manual region: bad input is an error naming the instruction") {
  {  // The shard that comes back has the wrong shape.
    Region r;
    r.x = r.b.Parameter(0, Shape(DType::kF32, {8, 6}), "x");
    r.enter = AutoToManual(r.b, r.x, Sharding::TiledIota({4, 1}));
    SpmdManualExpectError(
        [&] {
          ManualToAuto(r.b, r.enter, Sharding::TiledIota({2, 1}), {8, 6});
        },
        "manual-to-auto", "manual region shapes do not match: the operand is f32[2,6]");
  }
  {  // Parsed text: the same, located.
    const std::string text =
        "HloModule m\nENTRY %e {\n  %x = f32[8] parameter(0)\n"
        "  %m = f32[2] auto-to-manual(%x), tiling={devices=[4]<=[4]}\n"
        "  ROOT %y = f32[8] manual-to-auto(%m), tiling={devices=[2]<=[2]}\n}\n";
    CHECK_THROWS_WITH_AS(ir::ParseModule(text), doctest::Contains("%y (manual-to-auto)"), Error);
  }
  {  // A tiling over fewer devices than the mesh.
    Region r = Build(8, 0);
    r.x->sharding.reset();
    SpmdManualExpectError(
        [&] { PropagateShardings(*r.m, 8); }, r.enter->name,
        "tiling {devices=[4,1]<=[4]} covers 4 device(s) but the mesh has 8 device(s)");
  }
  {  // A split into more parts than devices, inside the tiling.
    Region r = Build(8, 0);
    r.x->sharding.reset();
    SpmdManualExpectError(
        [&] { ValidateShardings(*r.m, 2); }, r.enter->name,
        "tiling {devices=[4,1]<=[4]} splits dim 0 into 4 parts but the mesh has 2");
  }
  {  // {manual} where no region is, and an annotation inside one.
    Region r = Build(8, 0);
    r.out->sharding = Sharding::Manual();
    SpmdManualExpectError([&] { ValidateShardings(*r.m, 4); }, r.out->name,
                          "{manual} outside a manual");
    r.out->sharding.reset();
    r.inner->sharding = Sharding::TiledIota({4});
    SpmdManualExpectError([&] { ValidateShardings(*r.m, 4); }, r.inner->name, "in a manual region");
  }
  {  // The region never ends.
    Region r;
    r.x = r.b.Parameter(0, Shape(DType::kF32, {8}), "x");
    AutoToManual(r.b, r.x, Sharding::TiledIota({4}));
    PropagateShardings(*r.m, 4);
    PartitionOptions options;
    options.num_partitions = 4;
    CHECK_THROWS_WITH_AS(PartitionSpmd(*r.m, options),
                         doctest::Contains("end it with manual-to-auto"), Error);
  }
}

}  // namespace
}  // namespace podsim::partitioner
