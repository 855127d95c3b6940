// Per-device memory liveness (sim/program/memory.h) on hand-traced programs.

#include <doctest/doctest.h>

#include <memory>

#include "ir/builder.h"
#include "sim/program/memory.h"
#include "sim/program/program_plan.h"
#include "topologies/config.h"
#include "topologies/load.h"

namespace podsim::sim {
namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;

std::unique_ptr<topo::Topology> Ring(int64_t chips) {
  topo::TopologyConfig c;
  c.kind = "torus";
  c.dims = {chips};
  return topo::MakeTopology(c);
}

MemoryResult Analyze(const ir::Module& m, int64_t partitions, double capacity, bool async,
                     bool fusion = false) {
  const auto topology = Ring(partitions);
  PlanOptions options;
  options.fusion = fusion;
  options.num_partitions = partitions;
  return AnalyzeMemory(BuildProgramPlan(m, *topology, options), capacity, async);
}

// p0, p1: f32[256] (1 KiB each). Unfused steps and what is live while each runs:
//   a = exp(p0)            p0 p1 a          3 KiB   (a freed after b)
//   b = add(a, p1)         p0 p1 a b        4 KiB
//   c = broadcast(b) [4,256]  p0 p1 b c     7 KiB   (b freed after c)   <- first peak
//   d = reduce(c) [256]    p0 p1 c d        7 KiB   (d is the output)
void BuildChain(ir::Module& m) {
  Builder b(m.AddComputation("main", true));
  const Shape s(DType::kF32, {256});
  auto* p0 = b.Parameter(0, s, "p0");
  auto* p1 = b.Parameter(1, s, "p1");
  auto* a = b.Exp(p0);
  a->name = "a";
  auto* sum = b.Add(a, p1);
  auto* c = b.Broadcast(sum, {4, 256}, {1});
  c->name = "c";
  b.Reduce(c, {0}, ir::ReduceKind::kAdd);
}

TEST_CASE("liveness on a hand-traced program: peak and breakdown at the peak") {
  ir::Module m("chain");
  BuildChain(m);
  const MemoryResult r = Analyze(m, 1, 1e9, true);
  CHECK(r.peak_bytes == 7 * 1024);
  CHECK(r.peak_instruction == "%c");
  CHECK(r.at_peak.parameters == 2048);
  CHECK(r.at_peak.temporaries == 1024 + 4096);  // b and c
  CHECK(r.at_peak.outputs == 0);
  CHECK_FALSE(r.oom);
  CHECK(r.message.empty());
}

TEST_CASE("fusion keeps intermediates out of memory") {
  // Fused, the reduce's kernel computes exp, add and the broadcast inline: live p0 p1 d = 3 KiB.
  ir::Module m("chain");
  BuildChain(m);
  const MemoryResult r = Analyze(m, 1, 1e9, true, /*fusion=*/true);
  CHECK(r.peak_bytes == 3 * 1024);
  CHECK(r.at_peak.outputs == 1024);
}

// p0: f32[256] (1 KiB). Fused (sim/device/fusion.h): log is expensive, so it is not duplicated into
// the divide; log and the sum over it form one multi-output kernel writing e (1 KiB) and s
// (4 B); the divide kernel (the broadcast of s duplicated into it) reads both and writes d.
// While the divide runs: p0 + e + s + d = 1024 + 1024 + 4 + 1024 = 3076 B.
TEST_CASE("a multi-output fusion's outputs are all live") {
  ir::Module m("softmax");
  Builder b(m.AddComputation("main", true));
  const Shape s(DType::kF32, {256});
  auto* e = b.Log(b.Parameter(0, s, "p0"));
  auto* sum = b.Reduce(e, {0}, ir::ReduceKind::kAdd);
  b.Div(e, b.Broadcast(sum, {256}, {}));
  const MemoryResult r = Analyze(m, 1, 1e9, true, /*fusion=*/true);
  CHECK(r.peak_bytes == 3076);
}

// p0: f32[1,256] (1 KiB). The transpose to [256,1] moves only a unit dim (a bitcast: no kernel,
// no buffer of its own); the negate writes 1 KiB. Peak: p0 + negate = 2048 B.
TEST_CASE("a bitcast shares its operand's buffer") {
  ir::Module m("bitcast");
  Builder b(m.AddComputation("main", true));
  auto* t = b.Transpose(b.Parameter(0, Shape(DType::kF32, {1, 256}), "p0"), {1, 0});
  b.Neg(t);
  CHECK(Analyze(m, 1, 1e9, true).peak_bytes == 2048);
}

TEST_CASE("an out-of-memory device is a result naming the instruction and the bytes") {
  ir::Module m("chain");
  BuildChain(m);
  const MemoryResult r = Analyze(m, 1, 6 * 1024, true);
  CHECK(r.oom);
  CHECK(r.message == "OOM at %c: needs 7 KiB of 6 KiB");
  CHECK(FormatBytes(17.2 * 1073741824.0) == "17.2 GiB");
  CHECK(FormatBytes(16.0 * 1073741824.0) == "16 GiB");
}

// p0 f32[256]; x = neg(p0); ar = all-reduce(x); big = broadcast(p0) [8,256] (8 KiB);
// y = reduce(big) [256]; z = add(ar, y).
// Sync: x is freed after the all-reduce; at y: p0 ar big y = 11 KiB.
// Async: the all-reduce is done at z (its first reader), so x lives until then:
// at y: p0 x ar big y = 12 KiB.
TEST_CASE("an async collective keeps its operand until it is done") {
  ir::Module m("async");
  Builder b(m.AddComputation("main", true));
  const Shape s(DType::kF32, {256});
  auto* p0 = b.Parameter(0, s, "p0");
  auto* ar = b.AllReduce(b.Neg(p0), ir::ReduceKind::kAdd);
  auto* y = b.Reduce(b.Broadcast(p0, {8, 256}, {1}), {0}, ir::ReduceKind::kAdd);
  y->name = "y";
  b.Add(ar, y);
  const MemoryResult sync = Analyze(m, 2, 1e9, false);
  CHECK(sync.peak_bytes == 11 * 1024);
  CHECK(sync.peak_instruction == "%y");
  const MemoryResult async = Analyze(m, 2, 1e9, true);
  CHECK(async.peak_bytes == 12 * 1024);
  CHECK(async.at_peak.temporaries == 11 * 1024);
}

// entry: p0 f32[256]; l = loop(p0) x3; root gte(l, 0).
// body: c = param 1 (aliases the carried tuple); big = broadcast(c) [4,256] (4 KiB);
//       r = reduce(big) (1 KiB); root tuple(r).   Body peak at r: big + r = 5 KiB.
// At the loop: p0 (1 KiB, parameter) + the carried tuple (1 KiB, the output) + 5 KiB = 7 KiB.
TEST_CASE("loop bodies add their temporaries to what is live outside") {
  ir::Module m("loop");
  ir::Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* c = b.Parameter(1, Shape(DType::kF32, {256}), "c");
    auto* r = b.Reduce(b.Broadcast(c, {4, 256}, {1}), {0}, ir::ReduceKind::kAdd);
    r->name = "r";
    b.Tuple({r});
  }
  Builder b(m.AddComputation("main", true));
  auto* p0 = b.Parameter(0, Shape(DType::kF32, {256}), "p0");
  auto* l = b.Loop({p0}, body, 3);
  b.GetTupleElement(l, 0);
  const MemoryResult r = Analyze(m, 1, 1e9, true);
  CHECK(r.peak_bytes == 7 * 1024);
  CHECK(r.peak_instruction == "%r");
  CHECK(r.at_peak.parameters == 1024);
  CHECK(r.at_peak.temporaries == 5 * 1024);
  CHECK(r.at_peak.outputs == 1024);
}


// A carried value the body returns unchanged (a layer loop's stacked weights) stays in its
// operand's buffer: entry p0 f32[256] (1 KiB), w f32[1024] (4 KiB); l = loop(p0, w) x3, the body
// as above but returning (r, w). At the body's peak: p0 + w (parameters, 5 KiB) + the carried
// x (1 KiB) + the body's big + r (5 KiB) = 11 KiB; a copy of w would make it 15 KiB.
TEST_CASE("a loop's passed-through carried values are not copied") {
  ir::Module m("loop");
  ir::Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* c = b.Parameter(1, Shape(DType::kF32, {256}), "c");
    auto* w = b.Parameter(2, Shape(DType::kF32, {1024}), "w");
    auto* r = b.Reduce(b.Broadcast(c, {4, 256}, {1}), {0}, ir::ReduceKind::kAdd);
    b.Tuple({r, w});
  }
  Builder b(m.AddComputation("main", true));
  auto* p0 = b.Parameter(0, Shape(DType::kF32, {256}), "p0");
  auto* w = b.Parameter(1, Shape(DType::kF32, {1024}), "w");
  auto* l = b.Loop({p0, w}, body, 3);
  b.GetTupleElement(l, 0);
  const MemoryResult r = Analyze(m, 1, 1e9, true);
  CHECK(r.peak_bytes == 11 * 1024);
  CHECK(r.at_peak.parameters == 5 * 1024);
  CHECK(r.at_peak.by_kind.at("weights") == 5 * 1024);
}

// Donation (ir::OutputAlias): w f32[256] (1 KiB) is updated to u = w + w, written over w.
//   u = add(w, w)            w u              2 KiB   (w's last read: freed after, donated)
//   big = broadcast(u) [4,256]  u big         5 KiB
//   out = reduce(big)        u big out        6 KiB   <- peak; root tuple(u, out), {0}: (0)
// Without the alias w lives to the end and the peak is 7 KiB.
TEST_CASE("a donated parameter is freed after its last read; its output takes its place") {
  ir::Module m("update");
  Builder b(m.AddComputation("main", true));
  auto* w = b.Parameter(0, Shape(DType::kF32, {256}), "w");
  auto* u = b.Add(w, w);
  auto* big = b.Broadcast(u, {4, 256}, {1});
  auto* out = b.Reduce(big, {0}, ir::ReduceKind::kAdd);
  b.Tuple({u, out});
  m.set_output_aliases({{0, 0}});
  const MemoryResult donated = Analyze(m, 1, 1e9, true);
  CHECK(donated.peak_bytes == 6 * 1024);
  CHECK(donated.at_peak.parameters == 1024);  // u, in w's place
  CHECK(donated.at_peak.temporaries == 4096);
  CHECK(donated.at_peak.outputs == 1024);
  CHECK(donated.at_peak.by_kind.at("weights") == 1024);
  CHECK(donated.at_peak.by_kind.at("activations") == 4096);
  CHECK(donated.at_peak.by_kind.at("outputs") == 1024);
  m.set_output_aliases({});
  CHECK(Analyze(m, 1, 1e9, true).peak_bytes == 7 * 1024);
}

// Kinds by scope: a = exp(w) in the forward, read by a "backward/ffn" step, is a saved
// activation; the backward step's own result is "backward", an "optimizer/w" one "optimizer".
//   a = exp(w)                  w a          2 KiB
//   g = mul(a, a)  backward/ffn    w a g     3 KiB
//   n = sub(w, g)  optimizer/w     w g n     3 KiB (a freed after g)
//   t = broadcast(n) [4,256] optimizer/w  w n t  6 KiB  <- peak; root t
TEST_CASE("the breakdown by kind and scope: saved activations, backward, optimizer") {
  ir::Module m("kinds");
  Builder b(m.AddComputation("main", true));
  auto* w = b.Parameter(0, Shape(DType::kF32, {256}), "w");
  b.set_scope("ffn");
  auto* a = b.Exp(w);
  b.set_scope("backward/ffn");
  auto* g = b.Mul(a, a);
  b.set_scope("optimizer/w");
  auto* n = b.Sub(w, g);
  b.Broadcast(n, {4, 256}, {1});
  const MemoryResult r = Analyze(m, 1, 1e9, true);
  CHECK(r.peak_bytes == 6 * 1024);
  const MemoryBreakdown& k = r.at_peak;
  CHECK(k.by_kind.at("weights") == 1024);
  CHECK(k.by_kind.at("optimizer") == 1024);  // n
  CHECK(k.by_kind.at("outputs") == 4096);    // t
  CHECK(k.by_scope.at("optimizer") == 1024 + 4096);
  // At the second step a is live and read by the backward: a saved activation.
  ir::Module m2("kinds2");
  Builder b2(m2.AddComputation("main", true));
  auto* w2 = b2.Parameter(0, Shape(DType::kF32, {256}), "w");
  b2.set_scope("ffn");
  auto* a2 = b2.Exp(w2);
  b2.set_scope("backward/ffn");
  b2.Broadcast(b2.Mul(a2, a2), {4, 256}, {1});
  // mul: w a2 g (3 KiB); broadcast: w g out (6 KiB) <- peak, a2 freed. Peak kinds: weights,
  // backward (g), outputs.
  const MemoryResult r2 = Analyze(m2, 1, 1e9, true);
  CHECK(r2.peak_bytes == 6 * 1024);
  CHECK(r2.at_peak.by_kind.at("backward") == 1024);
  CHECK(r2.at_peak.by_kind.count("saved_activations") == 0);
  CHECK(r2.at_peak.by_scope.at("backward") == 1024 + 4096);
}

TEST_CASE("saved activations: forward values the backward reads, live into it") {
  // a = exp(w) (ffn); b = broadcast(w) [4,256] (ffn, 4 KiB, a forward temporary the backward
  // never reads); c = reduce(b) (ffn); g = mul(a, c) (backward/ffn).
  // At c: w a big c = 7 KiB <- peak; a and c are read by g: saved_activations 2 KiB; big is
  // not: activations 4 KiB.
  ir::Module m("saved");
  Builder b(m.AddComputation("main", true));
  auto* w = b.Parameter(0, Shape(DType::kF32, {256}), "w");
  b.set_scope("ffn");
  auto* a = b.Exp(w);
  auto* big = b.Broadcast(w, {4, 256}, {1});
  auto* c = b.Reduce(big, {0}, ir::ReduceKind::kAdd);
  b.set_scope("backward/ffn");
  b.Mul(a, c);
  const MemoryResult r = Analyze(m, 1, 1e9, true);
  CHECK(r.peak_bytes == 7 * 1024);  // at c: w a big c
  CHECK(r.at_peak.by_kind.at("saved_activations") == 2048);
  CHECK(r.at_peak.by_kind.at("activations") == 4096);
  CHECK(r.at_peak.by_scope.at("ffn") == 6 * 1024);
}

// A carried value whose operand the loop reads last is updated in the operand's buffer:
// entry p0 f32[256] (1 KiB), z = broadcast(0) f32[4,256] (4 KiB, read only by the loop);
// l = loop(p0, z), the body returning (negate(c), negate(zz)). Body peak: both negates, 5 KiB.
// At the loop: p0 + carried c (1 KiB) + carried z, in z's buffer (4 KiB) + 5 KiB = 11 KiB; a
// separate buffer for the carried z would make it 15 KiB.
TEST_CASE("a loop updates a carried value in place when the loop is its operand's last reader") {
  ir::Module m("loop");
  ir::Computation* body = m.AddComputation("body");
  {
    Builder b(body);
    b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* c = b.Parameter(1, Shape(DType::kF32, {256}), "c");
    auto* zz = b.Parameter(2, Shape(DType::kF32, {4, 256}), "zz");
    b.Tuple({b.Neg(c), b.Neg(zz)});
  }
  Builder b(m.AddComputation("main", true));
  auto* p0 = b.Parameter(0, Shape(DType::kF32, {256}), "p0");
  auto* z = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0), {4, 256});
  auto* l = b.Loop({p0, z}, body, 3);
  b.GetTupleElement(l, 0);
  const MemoryResult r = Analyze(m, 1, 1e9, true);
  CHECK(r.peak_bytes == 11 * 1024 + 4);  // + the 4-byte constant
}

// A loop whose body writes row i of a carried stack zz [4,256] (4 KiB) with
// dynamic-update-slice. When the update is zz's last read in the body, it is written into the
// carried buffer (counted outside the body); when the body reads zz afterwards, the result is a
// copy of its own.
std::unique_ptr<ir::Module> StackLoop(bool read_after) {
  auto m = std::make_unique<ir::Module>("stack");
  ir::Computation* body = m->AddComputation("body");
  {
    Builder b(body);
    auto* i = b.Parameter(0, Shape(DType::kS32, {}), "i");
    auto* c = b.Parameter(1, Shape(DType::kF32, {256}), "c");
    auto* zz = b.Parameter(2, Shape(DType::kF32, {4, 256}), "zz");
    auto* n = b.Neg(c);
    auto* row = b.Reshape(n, {1, 256});
    auto* dus = b.DynamicUpdateSlice(zz, row, {i, b.ConstantScalar(DType::kS32, 0)});
    auto* next = read_after ? b.Add(n, b.Reduce(zz, {0}, ir::ReduceKind::kAdd)) : n;
    b.Tuple({next, dus});
  }
  Builder b(m->AddComputation("main", true));
  auto* p0 = b.Parameter(0, Shape(DType::kF32, {256}), "p0");
  auto* z = b.BroadcastScalar(b.ConstantScalar(DType::kF32, 0), {4, 256});
  auto* l = b.Loop({p0, z}, body, 4);
  b.GetTupleElement(l, 1);
  return m;
}

TEST_CASE("dynamic-update-slice writes in place into a carried stack it is the last reader of") {
  // Outside the body: p0 1 KiB, the zero stack 4 KiB (the loop's carried zz in its place, the
  // loop being its last reader), the carried c 1 KiB, the zero constant 4 B. In the body: neg(c)
  // 1 KiB and the s32 constant 4 B; the reshape is a bitcast and the update goes into zz.
  const MemoryResult in_place = Analyze(*StackLoop(false), 1, 1e9, true);
  CHECK(in_place.peak_bytes == 1024 + 4096 + 1024 + 4 + 1024 + 4);
  // Read after the update, zz must survive it: the update is a second 4 KiB stack.
  const MemoryResult copy = Analyze(*StackLoop(true), 1, 1e9, true);
  CHECK(copy.peak_bytes >= in_place.peak_bytes + 4096);
}

}  // namespace
}  // namespace podsim::sim
