#pragma once
// Element types of the IR: those of XLA HLO that programs use. Every type has its byte width in
// the cost model and the simulator; the interpreter computes f32, bf16, f16, f64, s32 and pred
// (ir::IsInterpretable) and refuses the others with an error naming the instruction.

#include <cstdint>
#include <string>
#include <string_view>

namespace podsim::ir {

enum class DType : uint8_t {
  kF32,
  kBF16,
  kS32,
  kPred,
  kF16,
  kF64,
  kS8,
  kU8,
  kS16,
  kU16,
  kU32,
  kS64,
  kU64,
  kF8E4M3FN,
  kF8E5M2,
  kToken,
};

// Every DType, in enum order.
inline constexpr DType kAllDTypes[] = {
    DType::kF32, DType::kBF16, DType::kS32,  DType::kPred,     DType::kF16,    DType::kF64,
    DType::kS8,  DType::kU8,   DType::kS16,  DType::kU16,      DType::kU32,    DType::kS64,
    DType::kU64, DType::kF8E4M3FN, DType::kF8E5M2, DType::kToken};

// Bytes per element: f64/s64/u64 8; f32/s32/u32 4; bf16/f16/s16/u16 2; pred/s8/u8/f8 1; token 0.
int64_t ByteWidth(DType t);
// The HLO spelling: "f32", "bf16", "f8e4m3fn", "token", ...
std::string_view DTypeName(DType t);
// Parses a DTypeName; throws podsim::Error listing the types on an unknown name.
DType ParseDType(std::string_view name);
// As ParseDType; returns false instead of throwing.
bool LookupDType(std::string_view name, DType* t);
// Floating point: f32, bf16, f16, f64, f8e4m3fn, f8e5m2.
bool IsFloating(DType t);
// Signed or unsigned integers (not pred).
bool IsInteger(DType t);
bool IsUnsigned(DType t);
// Unit roundoff of a floating type (half an ulp of 1: f32 2^-24, bf16 2^-8, f16 2^-11, f64
// 2^-53, f8e4m3fn 2^-4, f8e5m2 2^-3); 0 for the exact types.
double UnitRoundoff(DType t);
// Whether the interpreter computes values of this type.
bool IsInterpretable(DType t);

}  // namespace podsim::ir
