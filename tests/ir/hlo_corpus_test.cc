// The real XLA HLO modules of ../shared/hlo-corpus/ (beside the project, never copied into it;
// $PODSIM_HLO_CORPUS overrides the folder): each one must import as the program it is (SPMD for
// its partition count, or global), verify, cost and round-trip through podsim's own text.
// Skipped, saying so, when the folder is absent.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
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

// What each file is: an SPMD program for this many partitions, or a global program (0).
const std::map<std::string, int64_t> kPartitions = {
    {"elementwise_add.hlo", 0},
    {"tfcompile_fully_connected.hlo", 0},
    {"jax_pjit_attention_fwd_bwd.hlo", 0},
    {"model_llama31_70b_bf16_16x8.hlo", 128},
    {"model_llama31_405b_fp8_16x8.hlo", 128},
    {"model_maxtext_train_step_before_opt.hlo", 0},
    {"model_mixtral_8x7b_bf16_1x8.hlo", 8},
    {"model_mobilenet_v2_train.hlo", 0},
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
    REQUIRE_MESSAGE(kPartitions.count(name), "a corpus file this test does not know");
    const HloImport r = ImportHlo(text, path);
    Verify(*r.module);
    const int64_t partitions = kPartitions.at(name);
    CHECK(r.partitioned == (partitions > 0));
    if (partitions > 0) CHECK(r.num_partitions == partitions);
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
