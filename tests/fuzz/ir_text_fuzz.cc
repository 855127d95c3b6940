// The IR text reader: parse (which verifies), print, re-parse. Bad text is a podsim::Error; a
// module that parses prints to text that parses back to the same text (docs/ir.md), and its
// cost analysis runs.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/cost.h"
#include "ir/text.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  podsim::fuzz::ExpectClearErrors([&] {
    const auto module = podsim::ir::ParseModule(text, "fuzz.hlo");
    const std::string printed = podsim::ir::PrintModule(*module);
    const auto again = podsim::ir::ParseModule(printed, "printed.hlo");
    FUZZ_CHECK(podsim::ir::PrintModule(*again) == printed, "print -> parse -> print round trip");
    podsim::ir::AnalyzeCost(*module);
  });
  return 0;
}
