#pragma once
// Internal to ir/: readers of attribute values and literals over a text_internal::Lexer, shared
// by the native text parser and the XLA HLO importer. Each consumes its value and fails at the
// offending token ("FILE:LINE:COL: expected ...").

#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/instruction.h"
#include "ir/text_lexer.h"

namespace podsim::ir::text_internal {

// An array shape f32[8,16] or a tuple of shapes (nested at most kMaxShapeDepth deep); its
// element count and byte size must fit int64. With `xla_layouts`, a layout written right after
// the dims ({1,0}, tiled layouts) is skipped.
Shape ReadShape(Lexer& lex, bool xla_layouts, int depth = 0);
// {1,2,3} (possibly empty).
std::vector<int64_t> ReadIntList(Lexer& lex);
// true or false.
bool ReadBool(Lexer& lex);
// {[start:limit], [start:limit:stride], ...} into slice_starts/limits/strides.
void ReadSlice(Lexer& lex, Instruction& instr);
// low_high[_interior]x... into padding ({} for a scalar).
void ReadPadding(Lexer& lex, Instruction& instr);
// {size=AxB stride=... pad=l_hxl_h lhs_dilate=... rhs_dilate=...} into window.
void ReadWindow(Lexer& lex, Instruction& instr);
// b01f_01io->b01f into conv.
void ReadDimLabels(Lexer& lex, Instruction& instr);
// {{0,1},{2,3}}.
std::vector<std::vector<int64_t>> ReadGroups(Lexer& lex);
// [G,S]<=[dims] or [G,S]<=[dims]T(perm).
IotaReplicaGroupList ReadIotaGroups(Lexer& lex);
// {{src,dst},...} into source_target_pairs.
void ReadPairs(Lexer& lex, Instruction& instr);
// {replicated}, {devices=[...]...}, ... on one line.
Sharding ReadSharding(Lexer& lex);
// The sharding spelled by `block` (its braces included), read at `loc`; whitespace is free.
Sharding ShardingFromText(Lexer& lex, Loc loc, std::string_view block);
// A constant's values for `shape`: one value for a scalar, else '{...}' nested per dimension
// or flat row-major; the count must match the shape.
Literal ReadLiteral(Lexer& lex, const Shape& shape);

}  // namespace podsim::ir::text_internal
