// The program runner (sim/program/simulate.h): step times derived by hand on a ring of 4 chips
// (1 core each, 1e11 B/s links, 1 us per hop) with a round-number device (1 TFLOP/s matrix and
// vector units, 100 GB/s HBM, 1 us per op).

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "ir/builder.h"
#include "report/chrome_trace.h"
#include "report/run_report.h"
#include "sim/program/run_result.h"
#include "sim/program/simulate.h"
#include "sim/program/trace.h"
#include "topologies/config.h"
#include "topologies/load.h"

namespace doctest {
template <>
struct StringMaker<podsim::Time> {
  static String convert(const podsim::Time& t) { return (std::to_string(t.picos()) + " ps").c_str(); }
};
}  // namespace doctest

namespace podsim::sim {
namespace {

using ir::Builder;
using report::ChromeTrace;
using report::ResultsToJson;
using ir::DType;
using ir::Instruction;
using ir::Shape;

std::unique_ptr<topo::Topology> Ring4() {
  topo::TopologyConfig c;
  c.kind = "torus";
  c.dims = {4};
  c.link_bandwidth = 1e11;
  c.hop_latency_us = 1.0;
  return topo::MakeTopology(c);
}

SimOptions HandOptions() {
  SimOptions o;
  o.device.name = "hand";
  o.device.matrix_bf16 = FlopsPerSecond{1e12};
  o.device.vector = FlopsPerSecond{1e12};
  o.device.hbm_bandwidth = BytesPerSecond{1e11};
  o.device.hbm_capacity = Bytes{1000000000};
  o.device.op_overhead_us = 1.0;
  return o;
}

ir::DotDims SimulateMatMul() {
  ir::DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return d;
}

// bf16 [256,512] x [512,384]: 100.663296 us at peak, modelled 101.663296 us (device_test).
constexpr double kDotUs = 101.663296;
Instruction* BigDot(Builder& b, int64_t first_param) {
  auto* x = b.Parameter(first_param, Shape(DType::kBF16, {256, 512}), "x");
  auto* w = b.Parameter(first_param + 1, Shape(DType::kBF16, {512, 384}), "w");
  return b.Dot(x, w, SimulateMatMul());
}

// Ring permute 0->1->2->3->0 of f32[1024] (4096 B): each transfer one hop on its own link:
// 1 us + 4096 B / 1e11 B/s = 1.04096 us.
constexpr double kPermuteUs = 1.04096;
std::vector<std::pair<int64_t, int64_t>> RingPairs() { return {{0, 1}, {1, 2}, {2, 3}, {3, 0}}; }

TEST_CASE("compute only: the step is the sum of modelled op times") {
  ir::Module m("dot");
  Builder b(m.AddComputation("main", true));
  BigDot(b, 0);
  const RunResult r = Simulate(m, *Ring4(), HandOptions());
  CHECK(r.status == RunStatus::kOk);
  CHECK(r.step_time == Time::FromMicros(kDotUs));
  CHECK(r.compute_time == r.step_time);
  CHECK(r.communication_time == Time());
  CHECK(r.roofline_time == Time::FromMicros(100.663296));
  CHECK(r.roofline_fraction == doctest::Approx(100.663296 / kDotUs));
  CHECK(r.devices.size() == 4);
}

TEST_CASE("a permute on its own links takes latency + bytes / bandwidth") {
  ir::Module m("permute");
  Builder b(m.AddComputation("main", true));
  b.CollectivePermute(b.Parameter(0, Shape(DType::kF32, {1024}), "x"), RingPairs());
  for (const char* network : {"flow", "analytic"}) {
    INFO(network);
    SimOptions o = HandOptions();
    o.network = network;
    const RunResult r = Simulate(m, *Ring4(), o);
    CHECK(r.step_time == Time::FromMicros(kPermuteUs));
    CHECK(r.communication_time == r.step_time);
    CHECK(r.collectives.at(0).executions == 1);
    CHECK(r.links.busy_links == 4);
    CHECK(r.links.busiest.bytes == 4096);
  }
}

// dot (T) then an all-reduce in groups {0,1} and {2,3}; device 1 computes twice as slowly.
TEST_CASE("a group starts when its slowest member arrives; other groups do not wait") {
  auto build = [](ir::Module& m) {
    Builder b(m.AddComputation("main", true));
    auto* d = BigDot(b, 0);
    b.AllReduce(d, ir::ReduceKind::kAdd, {{0, 1}, {2, 3}});
  };
  ir::Module m("gated");
  build(m);
  const RunResult even = Simulate(m, *Ring4(), HandOptions());
  const Time t = Time::FromMicros(kDotUs);
  const Time a = even.step_time - t;  // the all-reduce alone
  CHECK(a > Time());
  SimOptions o = HandOptions();
  o.stragglers[1] = 2.0;
  const RunResult r = Simulate(m, *Ring4(), o);
  CHECK(r.devices[2].finish == t + a);
  CHECK(r.devices[3].finish == t + a);
  CHECK(r.devices[0].finish == t + t + a);  // waited for device 1
  CHECK(r.devices[1].finish == t + t + a);
  CHECK(r.step_time == t + t + a);
  CHECK(r.critical_device == 0);
  // Device 0 waits for device 1 inside the collective: that counts as communication.
  CHECK(r.communication_time == t + a);
  CHECK(r.idle_time == Time());
}

// Chips 0-1-2-3 in a line; the 0-1 link is slow (1e9 B/s). Permutes 0<->1 and 2<->3 of
// f32[1024] (4096 B): 1 us + 4096 / 1e9 = 5.096 us on the slow link, 1.04096 us on the fast.
TEST_CASE("a slow link delays exactly the partitions whose transfers cross it") {
  topo::TopologyConfig c;
  c.kind = "custom";
  c.num_chips = 4;
  c.edges = {{0, 1, 1e9, std::nullopt}, {1, 2, std::nullopt, std::nullopt},
             {2, 3, std::nullopt, std::nullopt}};
  const auto line = topo::MakeTopology(c);
  ir::Module m("pairs");
  Builder b(m.AddComputation("main", true));
  b.CollectivePermute(b.Parameter(0, Shape(DType::kF32, {1024}), "x"), {{0, 1}, {1, 0}, {2, 3}, {3, 2}});
  const RunResult r = Simulate(m, *line, HandOptions());
  // The flow model rounds a rate-limited end up to the next picosecond.
  auto near = [](Time t, double us) { return std::llabs(t.picos() - Time::FromMicros(us).picos()) <= 1; };
  CHECK(near(r.devices[0].finish, 5.096));
  CHECK(near(r.devices[1].finish, 5.096));
  CHECK(r.devices[2].finish == Time::FromMicros(kPermuteUs));
  CHECK(r.devices[3].finish == Time::FromMicros(kPermuteUs));
  CHECK(r.step_time == r.devices[0].finish);
}

TEST_CASE("fusion removes the intermediate's HBM traffic from the step") {
  // mul(add(x, y), z), f32[1024,1024]: fused 16 MiB -> 167.77216 us + 1 us; unfused two ops of
  // 12 MiB each: 2 x (125.82912 + 1) us.
  ir::Module m("chain");
  Builder b(m.AddComputation("main", true));
  const Shape s(DType::kF32, {1024, 1024});
  b.Mul(b.Add(b.Parameter(0, s, "x"), b.Parameter(1, s, "y")), b.Parameter(2, s, "z"));
  const RunResult fused = Simulate(m, *Ring4(), HandOptions());
  CHECK(fused.step_time == Time::FromMicros(168.77216));
  CHECK(fused.fusion_groups == 1);
  CHECK(fused.fusion_bytes_saved == 8 * 1048576.0);
  SimOptions o = HandOptions();
  o.fusion = false;
  CHECK(Simulate(m, *Ring4(), o).step_time == Time::FromMicros(2 * 126.82912));
}

// all-reduce of a parameter, then an independent dot; the root reads both.
TEST_CASE("async collectives overlap independent compute; sync ones do not") {
  ir::Module alone("alone");
  {
    Builder b(alone.AddComputation("main", true));
    b.AllReduce(b.Parameter(0, Shape(DType::kF32, {1024}), "a"), ir::ReduceKind::kAdd);
  }
  const Time a = Simulate(alone, *Ring4(), HandOptions()).step_time;
  CHECK(a > Time());
  CHECK(a < Time::FromMicros(kDotUs));

  ir::Module m("overlap");
  Builder b(m.AddComputation("main", true));
  auto* ar = b.AllReduce(b.Parameter(0, Shape(DType::kF32, {1024}), "a"), ir::ReduceKind::kAdd);
  auto* d = BigDot(b, 1);
  b.Tuple({ar, d});
  const RunResult async = Simulate(m, *Ring4(), HandOptions());
  CHECK(async.step_time == Time::FromMicros(kDotUs));  // the all-reduce hides behind the dot
  CHECK(async.communication_time == a);
  CHECK(async.overlap_time == a);
  CHECK(async.exposed_communication == Time());
  SimOptions o = HandOptions();
  o.async_collectives = false;
  const RunResult sync = Simulate(m, *Ring4(), o);
  CHECK(sync.step_time == a + Time::FromMicros(kDotUs));
  CHECK(sync.overlap_time == Time());
}

TEST_CASE("a counted loop runs its body trip_count times") {
  // Compute-only body: d = dot(x, w) with x bf16[256,512], w bf16[512,512]:
  // 2*256*512*512 = 134,217,728 flops -> 134.217728 us + 1 us, five times = 676.08864 us.
  ir::Module m("loop");
  ir::Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* x = b.Parameter(1, Shape(DType::kBF16, {256, 512}), "x");
    auto* w = b.Parameter(2, Shape(DType::kBF16, {512, 512}), "w");
    b.Tuple({b.Dot(x, w, SimulateMatMul()), w});
  }
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kBF16, {256, 512}), "x");
  auto* w = b.Parameter(1, Shape(DType::kBF16, {512, 512}), "w");
  b.Loop({x, w}, body, 5);
  const RunResult r = Simulate(m, *Ring4(), HandOptions());
  CHECK(r.step_time == Time::FromMicros(5 * 135.217728));
  CHECK(r.ops.at(0).executions == 5);
}

TEST_CASE("a loop with a collective: trip_count x (permute + op)") {
  // Body: p = permute(x) (1.04096 us), n = neg(p) (f32[1024]: 8192 B -> 0.08192 us + 1 us).
  // Five iterations: 5 x 2.12288 us = 10.6144 us; the permute runs 5 times.
  ir::Module m("loop_permute");
  ir::Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* x = b.Parameter(1, Shape(DType::kF32, {1024}), "x");
    b.Tuple({b.Neg(b.CollectivePermute(x, RingPairs()))});
  }
  Builder b(m.AddComputation("main", true));
  b.Loop({b.Parameter(0, Shape(DType::kF32, {1024}), "x")}, body, 5);
  const RunResult r = Simulate(m, *Ring4(), HandOptions());
  CHECK(r.step_time == Time::FromMicros(5 * (kPermuteUs + 1.08192)));
  CHECK(r.collectives.at(0).executions == 5);
  CHECK(r.collectives.at(0).memoized == 5);
}

// HandOptions with every collective instance on the shared network (no memo): the reference
// the fast paths must match.
SimOptions LiveOptions() {
  SimOptions live = HandOptions();
  live.memoize_collectives = false;
  return live;
}

// A line of 4 chips (a mesh: not translation symmetric), 1e11 B/s and 1 us per hop as Ring4.
std::unique_ptr<topo::Topology> Line4() {
  topo::TopologyConfig lc;
  lc.kind = "mesh";
  lc.dims = {4};
  lc.link_bandwidth = 1e11;
  lc.hop_latency_us = 1.0;
  return topo::MakeTopology(lc);
}

// Runs `m` (two all-to-alls, the first of f32[262144] per partition) on a line of 4 chips and
// on the ring of 4, memoized and fully live (every instance on the shared network): the devices
// finish at exactly the same times, the links carry the same bytes, and the pair takes longer
// than the first alone. check(memoized run, is the ring) adds the counter checks.
template <typename Check>
void CheckMemoizedMatchesLive(const ir::Module& m, Check check) {
  const std::unique_ptr<topo::Topology> line = Line4();
  const std::unique_ptr<topo::Topology> ring4 = Ring4();
  for (const topo::Topology* t : {line.get(), ring4.get()}) {
    CAPTURE(t->name());
    const RunResult a = Simulate(m, *t, HandOptions());
    const RunResult c = Simulate(m, *t, LiveOptions());
    CHECK(a.step_time == c.step_time);
    for (size_t d = 0; d < a.devices.size(); ++d) CHECK(a.devices[d].finish == c.devices[d].finish);
    CHECK(c.collectives.at(0).replayed == 0);
    CHECK(c.collectives.at(0).live_groups == 1);
    CHECK(a.links.total_bytes == doctest::Approx(c.links.total_bytes));
    check(a, t != line.get());
    // Sharing links cannot make the pair faster than the first alone.
    ir::Module alone("alone");
    Builder ba(alone.AddComputation("main", true));
    ba.AllToAll(ba.Parameter(0, Shape(DType::kF32, {262144}), "x"), 0, 0, {}, 4);
    CHECK(Simulate(alone, *t, HandOptions()).step_time < a.step_time);
  }
}

// Two all-to-alls of 1 MiB per partition; the second is issued 1.08192 us after the first
// (a neg in between), while the first is still running. On a line of 4 chips (not translation
// symmetric) the first, started on the fast path, is replayed on the shared network and both
// share links from then on; on the ring of 4 the second joins the first and the symmetric flow
// model solves both together.
TEST_CASE("memoized and fully simulated collectives agree, also under contention") {
  ir::Module m("contention");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {262144}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {1024}), "y");
  auto* first = b.AllToAll(x, 0, 0, {}, 4);
  auto* second = b.AllToAll(b.Neg(y), 0, 0, {}, 4);
  b.Tuple({first, second});
  CheckMemoizedMatchesLive(m, [](const RunResult& a, bool ring) {
    CHECK(a.collectives.at(0).replayed == (ring ? 0 : 1));
    CHECK(a.collectives.at(1).joined == (ring ? 1 : 0));
    CHECK(a.collectives.at(1).live_groups == (ring ? 0 : 1));
  });
}

// Two independent all-to-alls issued at the same time (a backward pass's two): on the ring of 4
// (translation symmetric) the first starts on its memo and the second joins it, both solved
// together by the symmetric flow model; on the line of 4 both run on the shared network.
TEST_CASE("all-to-alls issued together are solved together, as the full simulation runs them") {
  ir::Module m("together");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {262144}), "x");
  auto* y = b.Parameter(1, Shape(DType::kF32, {131072}), "y");
  b.Tuple({b.AllToAll(x, 0, 0, {}, 4), b.AllToAll(y, 0, 0, {}, 4)});
  CheckMemoizedMatchesLive(m, [](const RunResult& a, bool ring) {
    CHECK(a.collectives.at(0).live_groups == (ring ? 0 : 1));
    CHECK(a.collectives.at(1).live_groups == (ring ? 0 : 1));
    CHECK(a.collectives.at(1).joined == (ring ? 1 : 0));
  });
}

// Two 4-byte all-reduces over the ring, the second issued while the first runs: both are
// latency-bound (a few bytes per link at 1e11 B/s: picoseconds of a collective of microseconds
// of hop latency), so the second runs on its memo beside the first instead of both being replayed
// on the shared network. Sharing links can move a completion by at most the other's
// busiest-link time: the devices finish within 1 ns of the full simulation.
TEST_CASE("latency-bound collectives overlap on their memos") {
  ir::Module m("latency");
  Builder b(m.AddComputation("main", true));
  auto* x = b.Parameter(0, Shape(DType::kF32, {1}), "x");
  auto* first = b.AllReduce(x, ir::ReduceKind::kAdd);
  auto* second = b.AllReduce(b.Neg(x), ir::ReduceKind::kAdd);
  b.Tuple({first, second});
  const RunResult a = Simulate(m, *Ring4(), HandOptions());
  const RunResult c = Simulate(m, *Ring4(), LiveOptions());
  CHECK(a.collectives.at(1).joined == 1);
  CHECK(a.collectives.at(0).replayed == 0);
  CHECK(a.collectives.at(1).live_groups == 0);
  CHECK(c.collectives.at(1).live_groups == 1);
  for (size_t d = 0; d < a.devices.size(); ++d) {
    CHECK(std::llabs(a.devices[d].finish.picos() - c.devices[d].finish.picos()) <= 1000);
  }
}

TEST_CASE("time per category comes from the top-level name scope") {
  ir::Module m("scopes");
  Builder b(m.AddComputation("main", true));
  Instruction* d;
  {
    Builder::ScopeGuard s(b, "ffn/in");
    d = BigDot(b, 0);
  }
  {
    Builder::ScopeGuard s(b, "comm");
    b.CollectivePermute(b.Convert(d, DType::kF32), RingPairs());
  }
  const RunResult r = Simulate(m, *Ring4(), HandOptions());
  REQUIRE(r.categories.size() == 2);  // sorted: comm, ffn
  CHECK(r.categories[0].category == "comm");
  CHECK(r.categories[0].communication > Time());
  CHECK(r.categories[1].category == "ffn");
  CHECK(r.categories[1].compute == Time::FromMicros(kDotUs));
  CHECK(r.categories[1].communication == Time());
}

TEST_CASE("out of memory is a result, not an error") {
  ir::Module m("dot");
  Builder b(m.AddComputation("main", true));
  BigDot(b, 0);
  SimOptions o = HandOptions();
  o.device.hbm_capacity = Bytes{1000};
  const RunResult r = Simulate(m, *Ring4(), o);
  CHECK(r.status == RunStatus::kOom);
  CHECK(r.memory.oom);
  CHECK(r.memory.message.rfind("OOM at %", 0) == 0);
  CHECK(ResultsToJson(r)["status"] == "oom");
}

TEST_CASE("bad input is a clear error") {
  ir::Module m("dot");
  Builder b(m.AddComputation("main", true));
  BigDot(b, 0);
  SimOptions o = HandOptions();
  o.num_partitions = 8;
  CHECK_THROWS_WITH(Simulate(m, *Ring4(), o), doctest::Contains("num_partitions: 8 partitions do not fit"));
  o = HandOptions();
  o.device.hbm_bandwidth = BytesPerSecond{0};
  CHECK_THROWS_WITH(Simulate(m, *Ring4(), o), "sim.device.hbm_bandwidth: must be > 0, got 0");
  ir::Module global("global");
  Builder g(global.AddComputation("main", true));
  auto* x = g.Parameter(0, Shape(DType::kF32, {8, 8}), "x");
  x->sharding = ir::Sharding::Tiled({4, 1}, {0, 1, 2, 3});
  g.Neg(x);
  CHECK_THROWS_WITH(Simulate(global, *Ring4(), HandOptions()), doctest::Contains("partition it first"));
  ir::Module groups("groups");
  Builder gb(groups.AddComputation("main", true));
  gb.AllReduce(gb.Parameter(0, Shape(DType::kF32, {8}), "x"), ir::ReduceKind::kAdd, {{0, 1}, {2, 7}});
  CHECK_THROWS_WITH(Simulate(groups, *Ring4(), HandOptions()), doctest::Contains("partition 7"));
  // Partitioned for 2 partitions (all-gather f32[2] -> f32[4]), run on 4.
  ir::Module two("two");
  Builder tb(two.AddComputation("main", true));
  tb.AllGather(tb.Parameter(0, Shape(DType::kF32, {2}), "x"), 0, {}, 2);
  CHECK_THROWS_WITH(Simulate(two, *Ring4(), HandOptions()),
                    doctest::Contains("means groups of 2, but a group has 4 members"));
}

TEST_CASE("same config, byte-identical results.json; the trace has device and link tracks") {
  ir::Module m("overlap");
  Builder b(m.AddComputation("main", true));
  auto* ar = b.AllReduce(b.Parameter(0, Shape(DType::kF32, {1024}), "a"), ir::ReduceKind::kAdd);
  b.Tuple({ar, BigDot(b, 1)});
  SimOptions o = HandOptions();
  o.trace.enabled = true;
  const RunResult r1 = Simulate(m, *Ring4(), o);
  const RunResult r2 = Simulate(m, *Ring4(), o);
  CHECK(ResultsToJson(r1).dump(2) == ResultsToJson(r2).dump(2));
  CHECK(ChromeTrace(r1.trace).dump() == ChromeTrace(r2.trace).dump());
  const nlohmann::json trace = ChromeTrace(r1.trace);
  bool compute_track = false, dot_span = false, link_span = false;
  for (const auto& e : trace["traceEvents"]) {
    // (const json: operator[] of a missing key is undefined; value() is not.)
    if (e["ph"] == "M" && e["args"].value("name", "") == "device 0 compute") compute_track = true;
    if (e["ph"] == "X" && e["args"].value("op", "") == "dot") dot_span = true;
    if (e["ph"] == "X" && e.value("cat", "") == "network") link_span = true;
  }
  CHECK(compute_track);
  CHECK(dot_span);
  CHECK(link_span);
  CHECK(r1.config["topology"].is_object());
  CHECK(r1.config["num_partitions"] == 4);
  CHECK(SimOptions::FromJson([&] {
          nlohmann::json c = r1.config;
          c.erase("topology");
          return c;
        }()).ToJson() == [&] {
          nlohmann::json c = r1.config;
          c.erase("topology");
          return c;
        }());
}

}  // namespace
}  // namespace podsim::sim
