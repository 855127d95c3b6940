// The annotation API (Split / Replicate / Shard) and ValidateShardings: what each call sets, and
// every bad input rejected with a message naming the instruction.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "partitioner/annotations.h"
#include "partitioner/sharding_util.h"

namespace podsim::partitioner {
namespace {

using ir::DType;
using ir::Shape;

template <typename F>
void ExpectError(F f, const std::string& needle, const std::string& needle2 = "") {
  try {
    f();
    FAIL("expected an error containing: " << needle);
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find(needle) != std::string::npos, what);
    CHECK_MESSAGE(what.find(needle2) != std::string::npos, what);
  }
}

struct Fixture {
  std::unique_ptr<ir::Module> m = std::make_unique<ir::Module>("t");
  ir::Computation* c = m->AddComputation("main", true);
  ir::Builder b{c};
  ir::Instruction* Param(std::vector<int64_t> dims, const std::string& name) {
    return b.Parameter(static_cast<int64_t>(c->parameters().size()), Shape(DType::kF32, dims),
                       name);
  }
};

TEST_CASE("Split tiles one dim over devices 0..n-1 and returns the instruction") {
  Fixture f;
  auto* x = f.Param({8, 6}, "x");
  CHECK(Split(x, 1, 3) == x);
  CHECK(x->sharding->ToString() == "{devices=[1,3]<=[3]}");  // the iota form, O(1) in n
  CHECK_NOTHROW(ir::Verify(*f.m));
  CHECK_NOTHROW(ValidateShardings(*f.m, 3));
  // With more devices than parts the other devices' share is unsaid: an error that shows the
  // partially replicated form (each of the 3 tiles on 2 devices).
  ExpectError([&] { ValidateShardings(*f.m, 6); }, "instruction %x",
              "covers 3 device(s) but the mesh has 6 device(s); a tiling must cover every device; "
              "to replicate each tile 2 ways, add a replicated tile dim of 2 over all 6 devices, "
              "e.g. {devices=[1,3,2]<=[6] last_tile_dim_replicate}");
}

TEST_CASE("uneven splits are allowed: 15 split 2 ways gives shards of 8") {
  Fixture f;
  auto* x = f.Param({15}, "x");
  Split(x, 0, 2);
  CHECK(ShardShape(x->shape, *x->sharding).dims == std::vector<int64_t>{8});
  CHECK_NOTHROW(ValidateShardings(*f.m, 2));
}

TEST_CASE("Replicate and Shard set the given forms") {
  Fixture f;
  auto* w = Replicate(f.Param({4, 4}, "w"));
  CHECK(w->sharding->ToString() == "{replicated}");
  // Column-major device order over a 2x2 grid.
  auto* a = Shard(f.Param({4, 4}, "a"), {2, 2}, {0, 2, 1, 3});
  CHECK(a->sharding->ToString() == "{devices=[2,2]0,2,1,3}");
  // Dim 0 split in two, each half held by a pair: partial replication.
  auto* p = Shard(f.Param({4, 4}, "p"), {2, 1, 2}, {0, 1, 2, 3}, true);
  CHECK(p->sharding->ToString() == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(ReplicaGroupOf(*p->sharding, 3) == std::vector<int64_t>{2, 3});
  CHECK_NOTHROW(ValidateShardings(*f.m, 4));
  CHECK_NOTHROW(ir::Verify(*f.m));
}

TEST_CASE("repeating the same annotation is fine; a different one is a contradiction") {
  Fixture f;
  auto* x = f.Param({8, 8}, "x");
  Split(x, 0, 4);
  CHECK_NOTHROW(Split(x, 0, 4));
  CHECK_NOTHROW(Shard(x, {4, 1}, {0, 1, 2, 3}));
  ExpectError([&] { Split(x, 1, 4); }, "instruction %x", "contradictory annotations");
  ExpectError([&] { Replicate(x); }, "%x", "already {devices=[4,1]<=[4]}, now {replicated}");
  CHECK(x->sharding->ToString() == "{devices=[4,1]<=[4]}");
}

TEST_CASE("annotation calls reject malformed requests, naming the instruction") {
  Fixture f;
  auto* x = f.Param({8, 8}, "x");
  ExpectError([&] { Split(x, 2, 2); }, "%x", "dim 2 out of range for f32[8,8]");
  ExpectError([&] { Split(x, -1, 2); }, "%x", "out of range");
  ExpectError([&] { Split(x, 0, 0); }, "%x", "n must be >= 1");
  ExpectError([&] { Shard(x, {2}, {0, 1}); }, "%x", "1 tile dims for shape f32[8,8]");
  ExpectError([&] { Shard(x, {2, 2}, {0, 1, 2}); }, "%x", "need 4 devices, 3 given");
  ExpectError([&] { Shard(x, {2, 2}, {0, 1, 1, 3}); }, "%x", "device 1 appears twice");
  ExpectError([&] { Shard(x, {2, 1}, {0, -1}); }, "%x", "device -1 is negative");
  ExpectError([&] { Shard(x, {2, 0}, {}); }, "%x", "tile dim 1 is 0");
  ExpectError([&] { Annotate(x, Sharding::Manual()); }, "%x", "AutoToManual");
  auto* t = f.b.Tuple({x, x});
  ExpectError([&] { Split(t, 0, 2); }, "%tuple", "cannot split tuple-shaped");
  ExpectError([&] { Annotate(t, Sharding::Maximal(0)); }, "%tuple", "can only be {replicated}");
  CHECK_NOTHROW(Replicate(t));
  CHECK(!x->sharding.has_value());  // failed calls leave no annotation behind
}

TEST_CASE("ValidateShardings: more parts than devices") {
  Fixture f;
  auto* x = f.Param({16, 4}, "x");
  Split(x, 0, 8);
  ExpectError([&] { ValidateShardings(*f.m, 4); },
              "computation %main, instruction %x", "splits dim 0 into 8 parts but the mesh has 4");
  ExpectError([&] { ValidateShardings(*f.m, DeviceMesh::Parse("2x2")); }, "%x", "has 4 device");
  CHECK_NOTHROW(ValidateShardings(*f.m, DeviceMesh::Parse("4x2")));
}

TEST_CASE("ValidateShardings: a 2-D tiling needing more devices than the mesh has") {
  Fixture f;
  auto* x = f.Param({16, 4}, "x");
  Shard(x, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  ExpectError([&] { ValidateShardings(*f.m, 4); }, "%x", "needs 8 devices but the mesh has 4");
  ExpectError([&] { ValidateShardings(*f.m, 6); }, "%x", "needs 8 devices but the mesh has 6");
  CHECK_NOTHROW(ValidateShardings(*f.m, 8));
}

TEST_CASE("ValidateShardings: unknown and duplicate devices, bad forms set directly") {
  Fixture f;
  auto* x = f.Param({8}, "x");
  Shard(x, {2}, {0, 5});
  ExpectError([&] { ValidateShardings(*f.m, 4); }, "%x", "unknown device 5; the mesh has 4");

  Fixture g;
  auto* y = g.Param({8}, "y");
  y->sharding = Sharding::Tiled({2}, {1, 1});  // bypasses the API
  ExpectError([&] { ValidateShardings(*g.m, 4); }, "%y", "device 1 appears twice");

  Fixture h;
  auto* z = h.Param({8}, "z");
  z->sharding = Sharding::Maximal(7);
  ExpectError([&] { ValidateShardings(*h.m, 4); }, "%z", "names device 7");
  z->sharding = Sharding::Tiled({2, 2}, {0, 1, 2, 3});
  ExpectError([&] { ValidateShardings(*h.m, 4); }, "%z", "2 tile dims for shape f32[8]");
  z->sharding = Sharding::Manual();
  ExpectError([&] { ValidateShardings(*h.m, 4); }, "%z", "{manual} outside a manual region");
  z->sharding.reset();
  ExpectError([&] { ValidateShardings(*h.m, 0); }, "mesh must have >= 1 device");
  CHECK_NOTHROW(ValidateShardings(*h.m, 1));
}

TEST_CASE("ValidateShardings looks into loop bodies too") {
  auto m = std::make_unique<ir::Module>("t");
  ir::Computation* body = m->AddComputation("body");
  ir::Builder bb(body);
  bb.Parameter(0, Shape(DType::kS32, {}), "i");
  auto* p = bb.Parameter(1, Shape(DType::kF32, {8}), "carried");
  bb.Tuple({bb.Exp(p)});
  Shard(p, {2}, {0, 9});
  ir::Computation* main = m->AddComputation("main", true);
  ir::Builder b(main);
  b.Loop({b.Parameter(0, Shape(DType::kF32, {8}), "x")}, body, 2);
  ExpectError([&] { ValidateShardings(*m, 4); }, "computation %body, instruction %carried",
              "unknown device 9");
}

}  // namespace
}  // namespace podsim::partitioner
