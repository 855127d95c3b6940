// Functional mode (sim/program/functional_run.h): a hand-written SPMD program carries real tensors
// through the simulated run; its outputs equal the reference interpreter's, the unpartitioned
// result where the program reassembles it, and every collective's schedule reproduces the
// interpreter's collective.

#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "sim/program/functional_run.h"
#include "sim/program/simulate.h"
#include "topologies/config.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

using ir::Builder;
using ir::DType;
using ir::Literal;
using ir::Shape;

std::unique_ptr<topo::Topology> Grid2x2() {
  topo::TopologyConfig c;
  c.kind = "torus";
  c.dims = {2, 2};
  return topo::MakeTopology(c);
}

ir::DotDims MatMul() {
  ir::DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return d;
}

// Global: y = x @ w with x f32[8,16], w f32[16,8].
std::unique_ptr<ir::Module> Global() {
  auto m = std::make_unique<ir::Module>("global");
  Builder b(m->AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {8, 16}), "x");
  auto* w = b.Parameter(1, Shape(DType::kF32, {16, 8}), "w");
  b.Dot(x, w, MatMul());
  return m;
}

// The same computation written per partition (rows of x split 4 ways), exercising every
// collective on non-major dims, partition-id and dynamic-slice.
std::unique_ptr<ir::Module> Spmd() {
  auto m = std::make_unique<ir::Module>("spmd");
  Builder b(m->AddComputation("main", true));
  auto* xs = b.Parameter(0, Shape(DType::kF32, {2, 16}), "x_shard");
  auto* w = b.Parameter(1, Shape(DType::kF32, {16, 8}), "w");
  auto* ys = b.Dot(xs, w, MatMul());                                          // [2, 8]
  auto* ag = b.AllGather(ys, 0, {}, 4);                                       // [8, 8] = y
  auto* rs = b.ReduceScatter(ag, 1, ir::ReduceKind::kAdd, {}, 4);              // [8, 2]
  auto* a2a = b.AllToAll(ag, 1, 0, {}, 4);                                    // [32, 2]
  auto* start = b.Mul(b.PartitionId(), b.ConstantScalar(DType::kS32, 2));
  auto* ds = b.DynamicSlice(ag, {start, b.ConstantScalar(DType::kS32, 0)}, {2, 8});  // = ys
  auto* perm = b.CollectivePermute(ds, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  auto* ar = b.AllReduce(ys, ir::ReduceKind::kAdd, {{0, 1}, {2, 3}});
  auto* agt = b.AllGather(b.Transpose(ys, {1, 0}), 1, {{0, 2}, {1, 3}}, 4);   // [8, 4]
  b.Tuple({ag, rs, a2a, perm, ar, agt});
  return m;
}

// Rows [2p, 2p+2) of x.
Literal RowsOf(const Literal& x, int64_t p) {
  Literal out(Shape(DType::kF32, {2, 16}), {});
  out.values.assign(x.values.begin() + p * 32, x.values.begin() + (p + 1) * 32);
  return out;
}

TEST_CASE("functional mode equals the interpreter and the unpartitioned result") {
  const auto global = Global();
  const auto spmd = Spmd();
  const std::vector<Literal> args = ir::RandomArguments(*global, 7);
  SimOptions options;
  options.functional = true;
  for (int64_t p = 0; p < 4; ++p) options.functional_args.push_back({RowsOf(args[0], p), args[1]});
  const RunResult r = Simulate(*spmd, *Grid2x2(), options);
  REQUIRE(r.functional.has_value());
  const FunctionalResult& f = *r.functional;
  CHECK(f.max_error_vs_interpreter == 0);
  REQUIRE(f.collectives.size() == 6);
  for (const CollectiveCheck& c : f.collectives) {
    INFO(c.instruction << " " << c.note);
    CHECK(c.checked);
    CHECK(c.executions == 1);
    CHECK(c.ok());
  }
  CHECK(f.ok());
  // Every partition's all-gathered y equals the unpartitioned dot (same contraction order).
  const Literal expected = ir::Interpret(*global, args);
  for (int64_t p = 0; p < 4; ++p) {
    CHECK(f.outputs[static_cast<size_t>(p)].elements.at(0) == expected);
  }
  // The timing run happened too.
  CHECK(r.step_time > Time());
  CHECK(r.collectives.size() == 6);
}

TEST_CASE("functional mode runs loop bodies with their collectives trip_count times") {
  // Three times: x = permute(x) + x, around the ring of 4.
  ir::Module m("loop");
  ir::Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* x = b.Parameter(1, Shape(DType::kF32, {4}), "x");
    b.Tuple({b.Add(b.CollectivePermute(x, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}), x)});
  }
  Builder b(m.AddComputation("main", true));
  b.Loop({b.Parameter(0, Shape(DType::kF32, {4}), "x")}, body, 3);
  SimOptions options;
  options.functional = true;
  const RunResult r = Simulate(m, *Grid2x2(), options);
  REQUIRE(r.functional.has_value());
  CHECK(r.functional->max_error_vs_interpreter == 0);
  CHECK(r.functional->collectives.at(0).executions == 3);
  CHECK(r.functional->ok());
}

TEST_CASE("reductions the schedules cannot express are left to the interpreter, and said so") {
  ir::Module m("max");
  Builder b(m.AddComputation("main", true));
  b.AllReduce(b.Parameter(0, Shape(DType::kF32, {4}), "x"), ir::ReduceKind::kMax);
  SimOptions options;
  options.functional = true;
  const RunResult r = Simulate(m, *Grid2x2(), options);
  CHECK_FALSE(r.functional->collectives.at(0).checked);
  CHECK(r.functional->collectives.at(0).note.find("max") != std::string::npos);
  CHECK(r.functional->ok());
}

TEST_CASE("MaxAbsDifference treats NaN and infinities strictly") {
  const Literal a(Shape(DType::kF32, {3}), {1, std::nan(""), 2});
  Literal b = a;
  CHECK(MaxAbsDifference(a, b) == 0);
  b.values[2] = 2.5;
  CHECK(MaxAbsDifference(a, b) == 0.5);
  b.values[1] = 0;
  CHECK(std::isinf(MaxAbsDifference(a, b)));
}

}  // namespace
}  // namespace podsim::sim
