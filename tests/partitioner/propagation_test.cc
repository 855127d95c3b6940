// Sharding propagation: elementwise, data movement, tuples and loops, the priority rules and
// determinism. Each expected sharding is derived by hand in the comment next to it (tile arrays
// are row-major; "[4,1]0,1,2,3" means dim 0 cut 4 ways over devices 0..3 in order).

#include <doctest/doctest.h>

#include <map>

#include "tests/partitioner/propagation_test_util.h"

namespace podsim::partitioner {
namespace {

using ir::Comparison;
using ir::DType;
using ir::Shape;
using testing::ModuleFixture;
using testing::Propagate;
using testing::Listed;
using testing::S;

constexpr const char* kRows4 = "{devices=[4,1]0,1,2,3}";
constexpr const char* kCols4 = "{devices=[1,4]0,1,2,3}";

TEST_CASE("elementwise: Split(x,0,4) then exp(x) is tiled [4,1]; operands take it backward") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 8}, "x"), 0, 4);
  auto* w = f.Param({8, 8}, "w");
  auto* y = f.b.Exp(x);
  auto* z = f.b.Add(y, w);  // forward from y
  auto* p = f.b.Compare(z, w, Comparison::kGt);
  auto* s = f.b.Select(p, z, w);
  CHECK(Propagate(*f.m, 4));
  CHECK(S(y) == kRows4);
  CHECK(S(z) == kRows4);
  CHECK(S(p) == kRows4);
  CHECK(S(s) == kRows4);
  CHECK(S(w) == kRows4);  // backward from add/compare/select
  CHECK(S(x) == kRows4);
}

TEST_CASE("a module with no annotations ends up replicated; a second run changes nothing") {
  ModuleFixture f;
  auto* x = f.Param({8}, "x");
  auto* y = f.b.Exp(x);
  CHECK(Propagate(*f.m, 4));
  CHECK(S(x) == "{replicated}");
  CHECK(S(y) == "{replicated}");
  CHECK(!Propagate(*f.m, 4));
}

TEST_CASE("user annotations are never overwritten") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 8}, "x"), 0, 4);
  auto* y = Replicate(f.b.Exp(x));    // less specific than its operand, still kept
  auto* z = Split(f.b.Neg(y), 1, 4);  // disagrees with the forward flow, still kept
  auto* u = f.b.Abs(z);
  auto* m = f.b.Tanh(y);              // forward from a replicated annotation
  Propagate(*f.m, 4);
  CHECK(S(x) == kRows4);
  CHECK(S(y) == "{replicated}");
  CHECK(S(z) == kCols4);
  CHECK(S(u) == kCols4);
  CHECK(S(m) == "{replicated}");
}

TEST_CASE("maximal annotations stay put and neither give nor take") {
  ModuleFixture f;
  auto* x = f.Param({8}, "x");
  x->sharding = Sharding::Maximal(2);
  auto* y = f.b.Exp(x);
  Propagate(*f.m, 4);
  CHECK(S(x) == "{maximal device=2}");
  CHECK(S(y) == "{replicated}");
}

TEST_CASE("priority: a more specific sharding wins over a less specific one") {
  // x split 2 (rows over {0,1}|{2,3}); y's user wants 4 rows: y takes the 4-way split.
  ModuleFixture f;
  auto* x = Shard(f.Param({8, 8}, "x"), {2, 1, 2}, {0, 1, 2, 3}, true);
  auto* y = f.b.Exp(x);
  auto* z = Split(f.b.Neg(y), 0, 4);
  Propagate(*f.m, 4);
  CHECK(S(y) == kRows4);
  CHECK(S(z) == kRows4);
}

TEST_CASE("priority: between equally specific shardings, forward beats backward") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 8}, "x"), 0, 4);
  auto* y = f.b.Exp(x);
  Split(f.b.Neg(y), 1, 4);
  Propagate(*f.m, 4);
  CHECK(S(y) == kRows4);
}

TEST_CASE("priority: forward ties go to the lower operand index") {
  // [4,1] and [1,4] over the same 4 devices cannot merge (16 tiles > 4 devices).
  ModuleFixture f;
  auto* a = Split(f.Param({8, 8}, "a"), 0, 4);
  auto* b = Split(f.Param({8, 8}, "b"), 1, 4);
  auto* ab = f.b.Add(a, b);
  auto* ba = f.b.Add(b, a);
  Propagate(*f.m, 4);
  CHECK(S(ab) == kRows4);
  CHECK(S(ba) == kCols4);
}

TEST_CASE("compatible partial shardings merge into a finer one") {
  // a: rows over {0,1}|{2,3}; b: cols over {0,2}|{1,3}; a+b: device d holds (d/2, d%2).
  ModuleFixture f;
  auto* a = Shard(f.Param({8, 8}, "a"), {2, 1, 2}, {0, 1, 2, 3}, true);
  auto* b = Shard(f.Param({8, 8}, "b"), {1, 2, 2}, {0, 2, 1, 3}, true);
  auto* sum = f.b.Add(a, b);
  Propagate(*f.m, 4);
  CHECK(S(sum) == "{devices=[2,2]0,1,2,3}");
  PropagationOptions no_merge;
  no_merge.merge_compatible = false;
  ModuleFixture g;
  auto* a2 = Shard(g.Param({8, 8}, "a"), {2, 1, 2}, {0, 1, 2, 3}, true);
  auto* b2 = Shard(g.Param({8, 8}, "b"), {1, 2, 2}, {0, 2, 1, 3}, true);
  auto* sum2 = g.b.Add(a2, b2);
  Propagate(*g.m, 4, no_merge);
  CHECK(S(sum2) == S(a2));  // operand 0 wins the tie
}

TEST_CASE("priority: backward ties go to the sharding most users want, then canonical order") {
  // x has users wanting [4,1], [1,4]: a tie in votes; [1,4] < [4,1] canonically.
  ModuleFixture f;
  auto* x = f.Param({8, 8}, "x");
  Split(f.b.Exp(x), 0, 4);
  Split(f.b.Neg(x), 1, 4);
  Propagate(*f.m, 4);
  CHECK(S(x) == kCols4);
  // A third user wanting [4,1] outvotes.
  ModuleFixture g;
  auto* x2 = g.Param({8, 8}, "x");
  Split(g.b.Exp(x2), 0, 4);
  Split(g.b.Neg(x2), 1, 4);
  Split(g.b.Abs(x2), 0, 4);
  Propagate(*g.m, 4);
  CHECK(S(x2) == kRows4);
}

TEST_CASE("forward-only propagation leaves unreached values replicated") {
  ModuleFixture f;
  auto* x = f.Param({8, 8}, "x");
  auto* y = f.b.Exp(x);
  Split(f.b.Neg(y), 0, 4);
  PropagationOptions forward_only;
  forward_only.backward = false;
  Propagate(*f.m, 4, forward_only);
  CHECK(S(x) == "{replicated}");
  CHECK(S(y) == "{replicated}");
}

TEST_CASE("broadcast maps operand dims; broadcast dims are not cut") {
  ModuleFixture f;
  auto* x = Split(f.Param({8}, "x"), 0, 4);
  auto* y = f.b.Broadcast(x, {3, 8}, {1});  // x's dim 0 is y's dim 1
  auto* v = f.Param({5}, "v");
  auto* w = f.b.Broadcast(v, {5, 4}, {0});
  Shard(f.b.Neg(w), {1, 4}, {0, 1, 2, 3});  // only the broadcast dim is cut
  Propagate(*f.m, 4);
  CHECK(S(y) == kCols4);
  CHECK(S(w) == kCols4);
  CHECK(S(v) == "{replicated}");  // dim 1 of w is not v's: nothing carries back
}

TEST_CASE("broadcast backward: output dims that come from the operand carry back") {
  // y = broadcast(v[8] -> [8,3]) split [4,1]: v gets [4].
  ModuleFixture f;
  auto* v = f.Param({8}, "v");
  auto* y = Split(f.b.Broadcast(v, {8, 3}, {0}), 0, 4);
  Propagate(*f.m, 4);
  CHECK(S(y) == kRows4);
  CHECK(S(v) == "{devices=[4]0,1,2,3}");
}

TEST_CASE("reshape [8,6] -> [48] with dim 0 split 2 is split [2]; and back") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 6}, "x"), 0, 2);
  auto* flat = f.b.Reshape(x, {48});
  auto* back = f.b.Reshape(flat, {8, 6});
  auto* minor = Split(f.Param({4, 6}, "minor"), 1, 2);
  auto* flat_minor = f.b.Reshape(minor, {24});  // minor-dim split is not contiguous
  Propagate(*f.m, 2);
  CHECK(S(flat) == "{devices=[2]0,1}");
  CHECK(S(back) == "{devices=[2,1]0,1}");
  CHECK(S(flat_minor) == "{replicated}");
}

TEST_CASE("reshape backward splits the major output dim into the operand") {
  ModuleFixture f;
  auto* x = f.Param({48}, "x");
  Split(f.b.Reshape(x, {8, 6}), 0, 4);
  Propagate(*f.m, 4);
  CHECK(S(x) == "{devices=[4]0,1,2,3}");
}

TEST_CASE("transpose permutes tile dims and the device array") {
  // x tiles [2,4] = rows {0,1,2,3},{4,5,6,7}; transposed array rows {0,4},{1,5},{2,6},{3,7}.
  ModuleFixture f;
  auto* x = Shard(f.Param({8, 8}, "x"), {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto* t = f.b.Transpose(x, {1, 0});
  auto* y = f.Param({4, 6, 8}, "y");
  Split(f.b.Transpose(y, {2, 0, 1}), 0, 8);  // output dim 0 is y's dim 2
  Propagate(*f.m, 8);
  CHECK(S(t) == "{devices=[4,2]0,4,1,5,2,6,3,7}");
  CHECK(S(y) == "{devices=[1,1,8]0,1,2,3,4,5,6,7}");
}

TEST_CASE("slice keeps cuts on whole dims and on sliced dims still at least as long as the cut") {
  ModuleFixture f;
  auto* x = Shard(f.Param({16, 8}, "x"), {4, 1}, {0, 1, 2, 3});
  auto* wide = f.b.Slice(x, {2, 0}, {10, 8});   // 8 rows >= 4 tiles: kept
  auto* narrow = f.b.Slice(x, {0, 0}, {2, 8});  // 2 rows < 4 tiles: dropped
  auto* cols = f.b.Slice(x, {0, 0}, {16, 4});   // dim 0 whole
  Propagate(*f.m, 4);
  CHECK(S(wide) == kRows4);
  CHECK(S(narrow) == "{replicated}");
  CHECK(S(cols) == kRows4);
  ModuleFixture g;
  auto* x2 = Split(g.Param({16, 8}, "x"), 0, 4);
  auto* wide2 = g.b.Slice(x2, {2, 0}, {10, 8});
  PropagationOptions no_spatial;
  no_spatial.spatial_partitioning = false;
  Propagate(*g.m, 4, no_spatial);
  CHECK(S(wide2) == "{replicated}");
}

TEST_CASE("pad, concatenate and reverse keep cuts; pad values are replicated") {
  ModuleFixture f;
  auto* x = Split(f.Param({8, 8}, "x"), 0, 4);
  auto* zero = f.b.ConstantScalar(DType::kF32, 0.0);
  auto* padded = f.b.Pad(x, zero, {{1, 1, 0}, {0, 0, 0}});
  auto* cat = f.b.Concatenate({x, f.Param({8, 8}, "y")}, 1);
  auto* rev = f.b.Reverse(x, {0});
  Propagate(*f.m, 4);
  CHECK(S(padded) == kRows4);
  CHECK(S(cat) == kRows4);
  CHECK(S(rev) == kRows4);
  CHECK(S(zero) == "{replicated}");
  CHECK(S(f.c->parameters()[1]) == kRows4);  // y, backward from the concatenate
}

TEST_CASE("dynamic-slice drops cuts on sliced dims; dynamic-update-slice follows its operand") {
  ModuleFixture f;
  auto* x = Shard(f.Param({8, 8}, "x"), {2, 2}, {0, 1, 2, 3});
  auto* i = f.Param({}, "i", DType::kS32);
  auto* ds = f.b.DynamicSlice(x, {i, i}, {8, 2});  // dim 0 whole, dim 1 sliced
  auto* u = f.Param({8, 2}, "u");
  auto* dus = f.b.DynamicUpdateSlice(x, u, {i, i});
  Propagate(*f.m, 4);
  // [2,2] minus dim 1: rows over {0,1}|{2,3}.
  CHECK(S(ds) == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(S(dus) == "{devices=[2,2]0,1,2,3}");
  CHECK(S(u) == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");  // update: dim 0 whole
  CHECK(S(i) == "{replicated}");
}

TEST_CASE("iota, constants and rng take their users' sharding") {
  ModuleFixture f;
  auto* x = Split(f.Param({4, 8}, "x"), 0, 4);
  auto* iota = f.b.Iota(Shape(DType::kF32, {4, 8}), 1);
  auto* one = f.b.ConstantScalar(DType::kF32, 1.0);
  auto* ones = f.b.BroadcastScalar(one, {4, 8});
  auto* rng = f.b.RandomUniform(Shape(DType::kF32, {4, 8}), 7);
  auto* y = f.b.Add(f.b.Add(f.b.Mul(iota, x), ones), rng);
  auto* pid = f.b.PartitionId();
  Propagate(*f.m, 4);
  CHECK(S(iota) == kRows4);
  CHECK(S(ones) == kRows4);
  CHECK(S(rng) == kRows4);
  CHECK(S(y) == kRows4);
  CHECK(S(one) == "{replicated}");
  CHECK(S(pid) == "{replicated}");
}

TEST_CASE("collectives already present pass untouched dims through") {
  ModuleFixture f;
  auto* x = Shard(f.Param({8, 8}, "x"), {2, 2}, {0, 1, 2, 3});
  auto* ar = f.b.AllReduce(x, ir::ReduceKind::kAdd);
  auto* ag = f.b.AllGather(x, 1, {{0, 1}, {2, 3}});
  auto* a2a = f.b.AllToAll(x, 0, 1, {{0, 1}, {2, 3}});
  auto* cp = f.b.CollectivePermute(x, {{0, 1}, {1, 0}});
  Propagate(*f.m, 4);
  CHECK(S(ar) == S(x));
  CHECK(S(cp) == S(x));
  CHECK(S(ag) == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(S(a2a) == "{replicated}");
}

TEST_CASE("tuples and get-tuple-element carry element shardings") {
  ModuleFixture f;
  auto* a = Split(f.Param({8}, "a"), 0, 4);
  auto* b = f.Param({6}, "b");
  auto* t = f.b.Tuple({a, b});
  auto* g0 = f.b.GetTupleElement(t, 0);
  auto* g1 = f.b.GetTupleElement(t, 1);
  Shard(f.b.Exp(g1), {2, 2}, {0, 1, 2, 3}, /*last_tile_dim_replicate=*/true);
  Propagate(*f.m, 4);
  CHECK(S(g0) == "{devices=[4]0,1,2,3}");
  CHECK(S(g1) == "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(S(b) == "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}");  // back through gte, tuple
  CHECK(S(t) == "{replicated}");      // placeholder; elements via TupleElementSharding
  CHECK(Listed(TupleElementSharding(*t, 0)) == "{devices=[4]0,1,2,3}");
  CHECK(Listed(TupleElementSharding(*t, 1)) == "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}");
  auto* nested = f.b.Tuple({t, a});
  CHECK(Listed(TupleElementSharding(*f.b.GetTupleElement(nested, 0), 0)) ==
        "{devices=[4]0,1,2,3}");
}

// main: x -> loop(x) -> gte; body: carried' = exp(carried).
struct LoopFixture {
  std::unique_ptr<ir::Module> m = std::make_unique<ir::Module>("t");
  ir::Computation* body = m->AddComputation("body");
  ir::Instruction* iter = nullptr;
  ir::Instruction* carried = nullptr;
  ir::Instruction* next = nullptr;
  ir::Computation* main = nullptr;
  ir::Instruction* x = nullptr;
  ir::Instruction* loop = nullptr;
  ir::Instruction* out = nullptr;

  LoopFixture() {
    ir::Builder bb(body);
    iter = bb.Parameter(0, Shape(DType::kS32, {}), "iter");
    carried = bb.Parameter(1, Shape(DType::kF32, {8, 4}), "carried");
    next = bb.Exp(carried);
    bb.Tuple({next});
    main = m->AddComputation("main", true);
    ir::Builder b(main);
    x = b.Parameter(0, Shape(DType::kF32, {8, 4}), "x");
    loop = b.Loop({x}, body, 3);
    out = b.GetTupleElement(loop, 0);
  }
};

TEST_CASE("loops: a carried value's sharding flows from the loop operand through the body") {
  LoopFixture f;
  Split(f.x, 0, 4);
  Propagate(*f.m, 4);
  CHECK(S(f.carried) == kRows4);
  CHECK(S(f.next) == kRows4);
  CHECK(S(f.out) == kRows4);
  CHECK(S(f.iter) == "{replicated}");
  CHECK(Listed(TupleElementSharding(*f.loop, 0)) == kRows4);
}

TEST_CASE("loops: backward from the loop's users and from inside the body") {
  LoopFixture f;
  Split(f.out, 1, 4);
  Propagate(*f.m, 4);
  CHECK(S(f.carried) == kCols4);
  CHECK(S(f.next) == kCols4);
  CHECK(S(f.x) == kCols4);
  LoopFixture g;
  Split(g.next, 0, 4);  // the body root's element: reaches the parameter over the back edge
  Propagate(*g.m, 4);
  CHECK(S(g.carried) == kRows4);
  CHECK(S(g.x) == kRows4);
  CHECK(S(g.out) == kRows4);
}

TEST_CASE("loops: carried values swapped by the body share one sharding across the back edge") {
  // body(i, p1, p2) = (p2, p1): p1's value becomes p2's next and vice versa, so a split of the
  // first loop operand reaches p1 (forward), p2 (back edge) and the second loop operand.
  auto m = std::make_unique<ir::Module>("t");
  ir::Computation* body = m->AddComputation("body");
  ir::Builder bb(body);
  bb.Parameter(0, Shape(DType::kS32, {}), "iter");
  auto* p1 = bb.Parameter(1, Shape(DType::kF32, {8, 4}), "p1");
  auto* p2 = bb.Parameter(2, Shape(DType::kF32, {8, 4}), "p2");
  bb.Tuple({p2, p1});
  ir::Builder b(m->AddComputation("main", true));
  auto* x1 = Split(b.Parameter(0, Shape(DType::kF32, {8, 4}), "x1"), 0, 4);
  auto* x2 = b.Parameter(1, Shape(DType::kF32, {8, 4}), "x2");
  auto* loop = b.Loop({x1, x2}, body, 5);
  auto* out1 = b.GetTupleElement(loop, 1);
  Propagate(*m, 4);
  CHECK(S(p1) == kRows4);
  CHECK(S(p2) == kRows4);
  CHECK(S(x2) == kRows4);
  CHECK(S(out1) == kRows4);
}

// Two branches a -> exp -> neg and b -> log, joined by add; built in two orders.
std::map<std::string, std::string> BuildBranches(bool a_first) {
  ModuleFixture f;
  auto* a = Split(f.Param({8, 8}, "a"), 0, 4);
  auto* b = Split(f.Param({8, 8}, "b"), 1, 4);
  ir::Instruction *ea = nullptr, *na = nullptr, *lb = nullptr;
  auto branch_a = [&] {
    ea = f.b.Exp(a);
    na = f.b.Neg(ea);
  };
  auto branch_b = [&] { lb = f.b.Log(b); };
  if (a_first) {
    branch_a();
    branch_b();
  } else {
    branch_b();
    branch_a();
  }
  auto* w = f.Param({8, 8}, "w");
  f.b.Add(f.b.Mul(na, w), f.b.Mul(lb, w));
  Propagate(*f.m, 4);
  std::map<std::string, std::string> out;
  out["ea"] = S(ea);
  out["na"] = S(na);
  out["lb"] = S(lb);
  out["w"] = S(w);
  out["root"] = S(f.c->root());
  return out;
}

TEST_CASE("determinism: same result twice, and independent of the instruction order") {
  const auto first = BuildBranches(true);
  CHECK(first == BuildBranches(true));
  CHECK(first == BuildBranches(false));
  CHECK(first.at("root") == kRows4);  // add's operand 0 (na * w) comes from a
  CHECK(first.at("w") == kCols4);     // w: users want [4,1] and [1,4], one vote each
}

TEST_CASE("propagation validates annotations first") {
  ModuleFixture f;
  Split(f.b.Exp(f.Param({8}, "x")), 0, 8);
  try {
    PropagateShardings(*f.m, 4);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("%exp") != std::string::npos);
  }
}

}  // namespace
}  // namespace podsim::partitioner
