// Speed of the IR text format on a 10,000-instruction module: a stack of Transformer-like
// blocks (dots with contracting dims, broadcasts, reductions, compares, collectives with replica
// groups, slices, pads, constants) where every instruction has a scope and many a sharding.
//
//   ninja -C build ir_text_bench && build/tests/ir_text_bench
//
// BM_PrintModule prints the module; BM_ParseModule parses the printed text (which includes
// shape inference and the verifier).

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "ir/builder.h"
#include "ir/text.h"

namespace podsim::ir {
namespace {

constexpr int64_t kInstructions = 10000;

std::unique_ptr<Module> BuildModule(int64_t min_instructions) {
  auto m = std::make_unique<Module>("text_bench");
  Computation* main = m->AddComputation("main", /*is_entry=*/true);
  Builder b(main);
  const int64_t kB = 8, kS = 128, kM = 512, kH = 2048;
  auto* x0 = b.Parameter(0, Shape(DType::kF32, {kB, kS, kM}), "x");
  x0->sharding = Sharding::Tiled({4, 1, 1}, {0, 1, 2, 3});
  auto* w1 = b.Parameter(1, Shape(DType::kF32, {kM, kH}), "w1");
  w1->sharding = Sharding::Tiled({1, 4}, {0, 1, 2, 3});
  auto* w2 = b.Parameter(2, Shape(DType::kF32, {kH, kM}), "w2");
  w2->sharding = Sharding::Tiled({4, 1}, {0, 1, 2, 3});
  auto* bias = b.Parameter(3, Shape(DType::kF32, {kH}), "bias");
  auto* pid = b.PartitionId();
  Instruction* x = x0;
  DotDims in_proj;
  in_proj.lhs_contracting = {2};
  in_proj.rhs_contracting = {0};
  for (int layer = 0; m->InstructionCount() < min_instructions; ++layer) {
    Builder::ScopeGuard scope(b, "layer" + std::to_string(layer) + "/ffn");
    auto* h = b.Dot(x, w1, in_proj);
    auto* a = b.Add(h, b.Broadcast(bias, {kB, kS, kH}, {2}));
    auto* o = b.Dot(b.Tanh(a), w2, in_proj);
    auto* ar = b.AllReduce(o, ReduceKind::kAdd, {{0, 1, 2, 3}, {4, 5, 6, 7}});
    ar->sharding = Sharding::Tiled({4, 1, 1}, {0, 1, 2, 3});
    auto* res = b.Add(x, ar);
    b.set_scope("layer" + std::to_string(layer) + "/norm");
    auto* mean = b.Reduce(res, {2}, ReduceKind::kAdd);
    auto* mb = b.Broadcast(mean, {kB, kS, kM}, {0, 1});
    auto* gt = b.Compare(res, mb, Comparison::kGt);
    auto* sel = b.Select(gt, res, mb);
    auto* scale = b.Constant(Literal(Shape(DType::kF32, {4}), {0.5, -1.25, 3, 1e-3}));
    auto* s0 = b.Slice(scale, {1}, {2});
    auto* s = b.Reshape(s0, {});
    auto* y = b.Mul(sel, b.BroadcastScalar(s, {kB, kS, kM}));
    b.set_scope("layer" + std::to_string(layer) + "/dispatch");
    auto* t = b.Transpose(y, {1, 0, 2});
    auto* zero = b.ConstantScalar(DType::kS32, 0);
    auto* ds = b.DynamicSlice(t, {pid, zero, zero}, {kS, kB, kM});
    auto* bf = b.Convert(ds, DType::kBF16);
    auto* back = b.Convert(bf, DType::kF32);
    auto* fzero = b.ConstantScalar(DType::kF32, 0);
    auto* padded = b.Pad(back, fzero, {{0, 0, 0}, {1, -1, 0}, {0, 0, 0}});
    x = b.Transpose(padded, {1, 0, 2});
    x->sharding = Sharding::Tiled({4, 1, 1}, {0, 1, 2, 3});
  }
  return m;
}

void BM_PrintModule(benchmark::State& state) {
  auto m = BuildModule(kInstructions);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = PrintModule(*m);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["instructions"] = static_cast<double>(m->InstructionCount());
  state.counters["text_bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations() * m->InstructionCount());
}
BENCHMARK(BM_PrintModule)->Unit(benchmark::kMillisecond);

void BM_ParseModule(benchmark::State& state) {
  auto m = BuildModule(kInstructions);
  const std::string text = PrintModule(*m);
  for (auto _ : state) {
    auto parsed = ParseModule(text, "bench.hlo");
    benchmark::DoNotOptimize(parsed);
  }
  state.counters["instructions"] = static_cast<double>(m->InstructionCount());
  state.SetItemsProcessed(state.iterations() * m->InstructionCount());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseModule)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace podsim::ir

BENCHMARK_MAIN();
