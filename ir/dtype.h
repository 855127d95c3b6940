#pragma once
// Element types of the IR.

#include <cstdint>
#include <string>
#include <string_view>

namespace podsim::ir {

enum class DType : uint8_t { kF32, kBF16, kS32, kPred };

// Bytes per element: f32 4, bf16 2, s32 4, pred 1.
int64_t ByteWidth(DType t);
// "f32", "bf16", "s32", "pred".
std::string_view DTypeName(DType t);
// Parses a DTypeName; throws podsim::Error on an unknown name.
DType ParseDType(std::string_view name);
bool IsFloating(DType t);

}  // namespace podsim::ir
