#include "ir/dtype.h"

#include <string>

#include "base/error.h"

namespace podsim::ir {

int64_t ByteWidth(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kS64:
    case DType::kU64: return 8;
    case DType::kF32:
    case DType::kS32:
    case DType::kU32: return 4;
    case DType::kBF16:
    case DType::kF16:
    case DType::kS16:
    case DType::kU16: return 2;
    case DType::kPred:
    case DType::kS8:
    case DType::kU8:
    case DType::kF8E4M3FN:
    case DType::kF8E5M2: return 1;
    case DType::kToken: return 0;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kS32: return "s32";
    case DType::kPred: return "pred";
    case DType::kF16: return "f16";
    case DType::kF64: return "f64";
    case DType::kS8: return "s8";
    case DType::kU8: return "u8";
    case DType::kS16: return "s16";
    case DType::kU16: return "u16";
    case DType::kU32: return "u32";
    case DType::kS64: return "s64";
    case DType::kU64: return "u64";
    case DType::kF8E4M3FN: return "f8e4m3fn";
    case DType::kF8E5M2: return "f8e5m2";
    case DType::kToken: return "token";
  }
  return "?";
}

bool LookupDType(std::string_view name, DType* t) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) {
      *t = d;
      return true;
    }
  }
  return false;
}

DType ParseDType(std::string_view name) {
  DType t;
  if (LookupDType(name, &t)) return t;
  std::string all;
  for (DType d : kAllDTypes) all += (all.empty() ? "" : ", ") + std::string(DTypeName(d));
  throw Error("unknown element type '" + std::string(name) + "' (expected one of " + all + ")");
}

bool IsFloating(DType t) {
  return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16 || t == DType::kF64 ||
         t == DType::kF8E4M3FN || t == DType::kF8E5M2;
}

bool IsUnsigned(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

bool IsInteger(DType t) {
  return IsUnsigned(t) || t == DType::kS8 || t == DType::kS16 || t == DType::kS32 ||
         t == DType::kS64;
}

double UnitRoundoff(DType t) {
  switch (t) {
    case DType::kF32: return 0x1p-24;
    case DType::kBF16: return 0x1p-8;
    case DType::kF16: return 0x1p-11;
    case DType::kF64: return 0x1p-53;
    case DType::kF8E4M3FN: return 0x1p-4;
    case DType::kF8E5M2: return 0x1p-3;
    default: return 0;
  }
}

bool IsInterpretable(DType t) {
  return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16 || t == DType::kF64 ||
         t == DType::kS32 || t == DType::kPred;
}

}  // namespace podsim::ir
