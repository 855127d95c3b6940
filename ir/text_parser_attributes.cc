// The attributes of the IR text format (ir/text_attributes.h, docs/ir.md): the Parser methods
// that read "dimensions={0,1}", "window={...}", "replica_groups=...", shardings and the rest.

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "ir/text_parser.h"

namespace podsim::ir::text_internal {

void Parser::ParseAttributes(Instruction& instr, Loc op_loc) {
  const auto allowed = text_internal::OpcodeAttrs(instr.opcode);
  uint64_t seen = 0;
  while (lex_.Consume(',')) {
    Loc loc = lex_.Here();
    std::string_view name = lex_.Word();
    if (name.empty()) lex_.Fail(loc, "expected an attribute name, got " + lex_.Describe());
    Attr a;
    if (!text_internal::LookupAttr(name, &a)) {
      lex_.Fail(loc, "unknown attribute '" + std::string(name) + "'");
    }
    if (a != Attr::kSharding && a != Attr::kScope &&
        std::find(allowed.begin(), allowed.end(), a) == allowed.end()) {
      lex_.Fail(loc, "attribute '" + std::string(name) + "' does not apply to " +
                         std::string(OpcodeName(instr.opcode)) + " (" + Takes(instr.opcode) +
                         ")");
    }
    uint64_t bit = uint64_t{1} << static_cast<int>(a);
    if (seen & bit) lex_.Fail(loc, "attribute '" + std::string(name) + "' is given twice");
    seen |= bit;
    lex_.Expect('=', [&] { return "after attribute name " + std::string(name); });
    ParseAttributeValue(instr, a);
  }
  if (std::string_view next = lex_.PeekWord(); !next.empty() && next != "ROOT") {
    lex_.FailHere("expected ',' before '" + std::string(next) +
                  "' (attributes are separated by commas)");
  }
  for (Attr a : allowed) {
    if (text_internal::AttrPresence(a) == Presence::kRequired &&
        !(seen & (uint64_t{1} << static_cast<int>(a)))) {
      lex_.Fail(op_loc, std::string(OpcodeName(instr.opcode)) + " %" + instr.name +
                            " needs attribute " + std::string(AttrName(a)) + "=");
    }
  }
  if (instr.opcode == Opcode::kRandomUniform &&
      !(seen & (uint64_t{1} << static_cast<int>(Attr::kGlobalDims))) && !instr.shape.is_tuple) {
    instr.rng_global_dims = instr.shape.dims;
  }
}

// "it takes dimensions, kind" for messages.
std::string Parser::Takes(Opcode op) {
  const auto attrs = text_internal::OpcodeAttrs(op);
  if (attrs.empty()) return "it takes only sharding and scope";
  std::string out = "it takes ";
  for (size_t k = 0; k < attrs.size(); ++k) {
    if (k) out += ", ";
    out += AttrName(attrs[k]);
  }
  return out + ", sharding, scope";
}

void Parser::ParseAttributeValue(Instruction& instr, Attr a) {
  switch (a) {
    case Attr::kDimensions:
    case Attr::kRegionDims: instr.dimensions = ReadIntList(lex_); break;
    case Attr::kSlice: ReadSlice(lex_, instr); break;
    case Attr::kDynamicSliceSizes: instr.slice_sizes = ReadIntList(lex_); break;
    case Attr::kPadding: ReadPadding(lex_, instr); break;
    case Attr::kLhsBatchDims: instr.dot.lhs_batch = ReadIntList(lex_); break;
    case Attr::kRhsBatchDims: instr.dot.rhs_batch = ReadIntList(lex_); break;
    case Attr::kLhsContractingDims: instr.dot.lhs_contracting = ReadIntList(lex_); break;
    case Attr::kRhsContractingDims: instr.dot.rhs_contracting = ReadIntList(lex_); break;
    case Attr::kWindow:
    case Attr::kRegionWindow: ReadWindow(lex_, instr); break;
    case Attr::kDimLabels: ReadDimLabels(lex_, instr); break;
    case Attr::kFeatureGroupCount: instr.feature_group_count = lex_.Int(); break;
    case Attr::kKind: {
      Loc loc = lex_.Here();
      std::string_view w = lex_.Word();
      if (!ParseReduceKind(w, &instr.reduce_kind)) {
        lex_.Fail(loc, "unknown reduction kind '" + std::string(w) +
                           "' (expected add, max, min, and or or)");
      }
      break;
    }
    case Attr::kDirection: {
      Loc loc = lex_.Here();
      std::string_view w = lex_.Word();
      if (!ParseComparison(w, &instr.comparison)) {
        lex_.Fail(loc, "unknown comparison direction '" + std::string(w) +
                           "' (expected EQ, NE, LT, LE, GT or GE)");
      }
      break;
    }
    case Attr::kExclusive: instr.exclusive = ReadBool(lex_); break;
    case Attr::kDescending: instr.descending = ReadBool(lex_); break;
    case Attr::kK: instr.k = lex_.Int(); break;
    case Attr::kSeed: instr.seed = lex_.Uint(); break;
    case Attr::kLow: instr.rng_low = lex_.Double(); break;
    case Attr::kHigh: instr.rng_high = lex_.Double(); break;
    case Attr::kGlobalDims: instr.rng_global_dims = ReadIntList(lex_); break;
    case Attr::kReplicaGroups:
      if (lex_.Peek('[')) {
        instr.iota_replica_groups = ReadIotaGroups(lex_);
      } else {
        instr.replica_groups = ReadGroups(lex_);
      }
      break;
    case Attr::kSourceTargetPairs: ReadPairs(lex_, instr); break;
    case Attr::kSplitDimension: instr.split_dimension = lex_.Int(); break;
    case Attr::kConcatDimension: instr.concat_dimension = lex_.Int(); break;
    case Attr::kTripCount: instr.trip_count = lex_.Int(); break;
    case Attr::kBody:
    case Attr::kRegion: {
      Loc loc = lex_.Here();
      lex_.Expect('%', "before the body computation's name");
      pending_bodies_.push_back({&instr, lex_.Name("a computation name"), loc});
      break;
    }
    case Attr::kIndex: instr.tuple_index = lex_.Int(); break;
    case Attr::kTiling: instr.tiling = ReadSharding(lex_); break;
    case Attr::kSharding: instr.sharding = ReadSharding(lex_); break;
    case Attr::kScope: instr.scope = lex_.QuotedString(); break;
    case Attr::kCustomCallTarget: instr.custom_call_target = lex_.QuotedString(); break;
    case Attr::kFlops: {
      const Loc loc = lex_.Here();
      instr.custom_call_flops = lex_.Double();
      if (!(instr.custom_call_flops >= 0) || !std::isfinite(instr.custom_call_flops)) {
        lex_.Fail(loc, "flops must be a finite number >= 0");
      }
      break;
    }
    case Attr::kRange: {
      lex_.Expect('{', "to open range={low,high}");
      const double low = lex_.Double();
      lex_.Expect(',', "between the low and high of range={low,high}");
      const double high = lex_.Double();
      lex_.Expect('}', "to close range={low,high}");
      instr.argument_range = std::make_pair(low, high);
      break;
    }
  }
}

}  // namespace podsim::ir::text_internal
