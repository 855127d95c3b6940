// The XLA HLO importer (ir/hlo_import.h): import, print in podsim's text, re-parse. Bad text is
// a podsim::Error; an imported module verifies, prints to text that parses back to the same
// text, and its cost analysis runs.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/cost.h"
#include "ir/hlo_import.h"
#include "ir/text.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  podsim::fuzz::ExpectClearErrors([&] {
    podsim::ir::LooksLikeXlaHlo(text);
    const auto imported = podsim::ir::ImportHlo(text, "fuzz.hlo");
    const std::string printed = podsim::ir::PrintModule(*imported.module);
    const auto again = podsim::ir::ParseModule(printed, "printed.hlo");
    FUZZ_CHECK(podsim::ir::PrintModule(*again) == printed, "import -> print -> parse -> print");
    podsim::ir::AnalyzeCost(*imported.module);
  });
  return 0;
}
