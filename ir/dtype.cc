#include "ir/dtype.h"

#include "base/error.h"

namespace podsim::ir {

int64_t ByteWidth(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kS32: return 4;
    case DType::kPred: return 1;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kS32: return "s32";
    case DType::kPred: return "pred";
  }
  return "?";
}

DType ParseDType(std::string_view name) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kS32, DType::kPred}) {
    if (DTypeName(t) == name) return t;
  }
  throw Error("unknown element type '" + std::string(name) + "' (expected f32, bf16, s32 or pred)");
}

bool IsFloating(DType t) { return t == DType::kF32 || t == DType::kBF16; }

}  // namespace podsim::ir
