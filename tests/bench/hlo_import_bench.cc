// Speed of the XLA HLO importer (ir/hlo_import.h).
//
//   ninja -C build hlo_import_bench && build/tests/hlo_import_bench
//
// BM_ImportSynthetic imports a 42,000-instruction module written as XLA writes it (bare names,
// layouts, metadata with op_name and source positions, reductions with to_apply, typed
// constants): the size of the corpus's Mixtral module, which must import in under 2 s.
// BM_ImportCorpus/<file> imports each file of ../shared/hlo-corpus/ (when that folder is there);
// a file the importer does not take yet reports imported=0 and the time to its error.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/error.h"
#include "base/io.h"
#include "ir/hlo_import.h"

namespace podsim::ir {
namespace {

std::string SyntheticModule(int64_t instructions) {
  std::string t = "HloModule synthetic, entry_computation_layout={(f32[128,1024]{1,0})->f32[]}\n\n";
  t += "region_add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
       "  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n";
  t += "  x.0 = f32[128,1024]{1,0} parameter(0)\n  zero = f32[] constant(0)\n";
  int64_t n = 2, k = 0;
  for (; n + 6 < instructions; ++k) {
    const std::string s = std::to_string(k);
    const std::string meta = ", metadata={op_name=\"jit(step)/layer_" + std::to_string(k % 80) +
                             "/mlp/mul\" source_file=\"/app/model.py\" source_line=" +
                             std::to_string(100 + k % 50) + "}";
    t += "  c." + s + " = f32[] constant(1.5)\n";
    t += "  b." + s + " = f32[128,1024]{1,0} broadcast(c." + s + "), dimensions={}\n";
    t += "  m." + s + " = f32[128,1024]{1,0} multiply(x." + s + ", b." + s + ")" + meta + "\n";
    t += "  e." + s + " = f32[128,1024]{1,0} exponential(m." + s + ")" + meta + "\n";
    t += "  r." + s + " = f32[128]{0} reduce(e." + s + ", zero), dimensions={1}, to_apply=region_add\n";
    t += "  x." + std::to_string(k + 1) + " = f32[128,1024]{1,0} add(m." + s + ", e." + s + ")\n";
    n += 6;
  }
  // The root reads the last x: every instruction but the row sums is live.
  t += "  ROOT out = f32[] reduce(x." + std::to_string(k) +
       ", zero), dimensions={0,1}, to_apply=region_add\n}\n";
  return t;
}

void BM_ImportSynthetic(benchmark::State& state) {
  const std::string text = SyntheticModule(42000);
  int64_t instructions = 0;
  for (auto _ : state) {
    HloImport r = ImportHlo(text, "synthetic.hlo");
    instructions = 0;
    for (const auto& c : r.module->computations()) {
      instructions += static_cast<int64_t>(c->instructions().size());
    }
    benchmark::DoNotOptimize(r);
  }
  state.counters["text_lines"] = 42000;
  state.counters["instructions_kept"] = static_cast<double>(instructions);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ImportSynthetic)->Unit(benchmark::kMillisecond);

void RegisterCorpus() {
  std::filesystem::path dir = std::filesystem::path(PODSIM_SOURCE_DIR) / ".." / "shared" /
                              "hlo-corpus";
  if (const char* env = std::getenv("PODSIM_HLO_CORPUS")) dir = env;
  if (!std::filesystem::is_directory(dir)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hlo") continue;
    const std::string path = entry.path().string();
    benchmark::RegisterBenchmark(
        ("BM_ImportCorpus/" + entry.path().filename().string()).c_str(),
        [path](benchmark::State& state) {
          const std::string text = ReadFile(path);
          bool imported = true;
          for (auto _ : state) {
            try {
              HloImport r = ImportHlo(text, path);
              benchmark::DoNotOptimize(r);
            } catch (const Error&) {
              imported = false;
            }
          }
          state.counters["imported"] = imported ? 1 : 0;
          state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
        })
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace podsim::ir

int main(int argc, char** argv) {
  podsim::ir::RegisterCorpus();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
