// The real XLA HLO modules of ../shared/hlo-corpus/ (beside the project, never copied into it;
// $PODSIM_HLO_CORPUS overrides the folder): each one podsim imports must verify, cost and
// round-trip through podsim's own text; each one it does not import yet must fail with an error
// located at FILE:LINE:COL, never a crash. Skipped, saying so, when the folder is absent.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "base/error.h"
#include "base/io.h"
#include "ir/cost.h"
#include "ir/hlo_import.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace podsim::ir {
namespace {

std::filesystem::path CorpusDir() {
  if (const char* dir = std::getenv("PODSIM_HLO_CORPUS")) return dir;
  return std::filesystem::path(PODSIM_SOURCE_DIR) / ".." / "shared" / "hlo-corpus";
}

// The files the importer takes today (the rest are expected to fail with a located error).
const std::set<std::string> kImported = {
    "elementwise_add.hlo",
    "tfcompile_fully_connected.hlo",
    "jax_pjit_attention_fwd_bwd.hlo",
    "model_llama31_70b_bf16_16x8.hlo",
    "model_llama31_405b_fp8_16x8.hlo",
    "model_mobilenet_v2_train.hlo",
};

TEST_CASE("the real HLO corpus imports, verifies, costs and round-trips") {
  const auto dir = CorpusDir();
  if (!std::filesystem::is_directory(dir)) {
    MESSAGE("skipped: no HLO corpus at " << dir.string());
    return;
  }
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hlo") continue;
    const std::string name = entry.path().filename().string();
    const std::string path = entry.path().string();
    CAPTURE(name);
    ++seen;
    const std::string text = ReadFile(path);
    CHECK(LooksLikeXlaHlo(text));
    if (!kImported.count(name)) {
      try {
        ImportHlo(text, path);
        MESSAGE(name << " now imports: add it to kImported");
      } catch (const Error& e) {
        const std::string m = e.what();
        // "<path>:LINE:COL: ..."
        CHECK_MESSAGE(m.rfind(path + ":", 0) == 0, m);
        MESSAGE(name << " not imported yet: " << m.substr(0, 300));
      }
      continue;
    }
    const HloImport r = ImportHlo(text, path);
    Verify(*r.module);
    const ModuleCost cost = AnalyzeCost(*r.module, std::max<int64_t>(r.num_partitions, 1));
    CHECK(cost.total.bytes_read > 0);
    const std::string printed = PrintModule(*r.module);
    const auto back = ParseModule(printed, name + " (printed)");
    CHECK(back->InstructionCount() == r.module->InstructionCount());
    CHECK(PrintModule(*back) == printed);
  }
  CHECK(seen == 8);
}

}  // namespace
}  // namespace podsim::ir
