#include "ir/opcode.h"

#include <array>
#include <cmath>
#include <limits>

namespace podsim::ir {

namespace {

#define PODSIM_OPCODE_NAME(e, name, handler, family) name,
constexpr std::array<std::string_view, kNumOpcodes> kNames = {PODSIM_OPCODES(PODSIM_OPCODE_NAME)};
#undef PODSIM_OPCODE_NAME

#define PODSIM_OPCODE_FAMILY(e, name, handler, family) OpFamily::k##family,
constexpr std::array<OpFamily, kNumOpcodes> kFamilies = {PODSIM_OPCODES(PODSIM_OPCODE_FAMILY)};
#undef PODSIM_OPCODE_FAMILY

}  // namespace

std::string_view OpcodeName(Opcode op) { return kNames[static_cast<int>(op)]; }

bool ParseOpcode(std::string_view name, Opcode* op) {
  for (int i = 0; i < kNumOpcodes; ++i) {
    if (kNames[i] == name) {
      *op = static_cast<Opcode>(i);
      return true;
    }
  }
  return false;
}

OpFamily FamilyOf(Opcode op) { return kFamilies[static_cast<int>(op)]; }

bool IsElementwiseUnary(Opcode op) { return FamilyOf(op) == OpFamily::kElementwiseUnary; }
bool IsElementwiseBinary(Opcode op) { return FamilyOf(op) == OpFamily::kElementwiseBinary; }
bool IsElementwise(Opcode op) {
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) ||
         FamilyOf(op) == OpFamily::kElementwiseTernary;
}
bool IsCollective(Opcode op) { return FamilyOf(op) == OpFamily::kCollective; }

std::string_view ReduceKindName(ReduceKind k) {
  switch (k) {
    case ReduceKind::kAdd: return "add";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kAnd: return "and";
    case ReduceKind::kOr: return "or";
  }
  return "?";
}

bool ParseReduceKind(std::string_view name, ReduceKind* k) {
  for (ReduceKind c : {ReduceKind::kAdd, ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kAnd,
                       ReduceKind::kOr}) {
    if (ReduceKindName(c) == name) {
      *k = c;
      return true;
    }
  }
  return false;
}

double ReduceIdentity(ReduceKind k) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (k) {
    case ReduceKind::kAdd: return 0;
    case ReduceKind::kMax: return -kInf;
    case ReduceKind::kMin: return kInf;
    case ReduceKind::kAnd: return 1;
    case ReduceKind::kOr: return 0;
  }
  return 0;
}

double ApplyReduce(ReduceKind k, double a, double b) {
  switch (k) {
    case ReduceKind::kAdd: return a + b;
    case ReduceKind::kMax: return (std::isnan(a) || a > b) ? a : b;
    case ReduceKind::kMin: return (std::isnan(a) || a < b) ? a : b;
    case ReduceKind::kAnd: return (a != 0 && b != 0) ? 1 : 0;
    case ReduceKind::kOr: return (a != 0 || b != 0) ? 1 : 0;
  }
  return 0;
}

std::string_view ComparisonName(Comparison c) {
  switch (c) {
    case Comparison::kEq: return "EQ";
    case Comparison::kNe: return "NE";
    case Comparison::kLt: return "LT";
    case Comparison::kLe: return "LE";
    case Comparison::kGt: return "GT";
    case Comparison::kGe: return "GE";
  }
  return "?";
}

bool ParseComparison(std::string_view name, Comparison* c) {
  for (Comparison d : {Comparison::kEq, Comparison::kNe, Comparison::kLt, Comparison::kLe,
                       Comparison::kGt, Comparison::kGe}) {
    if (ComparisonName(d) == name) {
      *c = d;
      return true;
    }
  }
  return false;
}

}  // namespace podsim::ir
