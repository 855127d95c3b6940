// The protobuf reader: bytes -> module (verified) -> text -> module -> bytes -> module. Bad bytes
// are a podsim::Error; a module that loads survives both conversions unchanged (its printed
// text is the comparison).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/proto.h"
#include "ir/text.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  podsim::fuzz::ExpectClearErrors([&] {
    const auto module = podsim::ir::ModuleFromProtoBytes(bytes);
    const std::string printed = podsim::ir::PrintModule(*module);
    const auto from_text = podsim::ir::ParseModule(printed, "printed.hlo");
    FUZZ_CHECK(podsim::ir::PrintModule(*from_text) == printed, "proto -> text -> module");
    const auto again = podsim::ir::ModuleFromProtoBytes(podsim::ir::ModuleToProtoBytes(*from_text));
    FUZZ_CHECK(podsim::ir::PrintModule(*again) == printed, "proto -> text -> proto");
  });
  return 0;
}
