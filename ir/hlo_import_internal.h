#pragma once
// Internal to the XLA HLO importer (ir/hlo_import.h): the module as written, read in one pass by
// hlo_import_parse.cc and lowered to podsim's IR by hlo_import_lower.cc.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/instruction.h"
#include "ir/text_lexer.h"

namespace podsim::ir::hlo_internal {

using text_internal::Loc;

struct NameRef {
  std::string name;  // without '%'
  Loc loc;
};

// One instruction as written. `attrs` holds the attributes whose meaning podsim's IR shares
// (dimensions, slice, padding, window, dim_labels, dot dims, feature_group_count, direction,
// replica groups, pairs, dynamic_slice_sizes, sharding); the rest are below.
struct HloInstr {
  std::string name;
  Loc loc;        // the name (or ROOT)
  Loc shape_loc;
  Loc opcode_loc;
  bool is_root = false;
  Shape shape;
  std::string opcode;
  std::vector<NameRef> operands;
  std::optional<Literal> literal;  // constant
  Instruction attrs;
  std::vector<std::string> seen;  // attribute keys given, to tell "absent" from a default
  // A tuple sharding ({{...}, {...}}): one entry per element.
  std::vector<Sharding> tuple_sharding;

  std::optional<NameRef> to_apply, condition, body, calls, true_computation, false_computation;
  std::optional<NameRef> select, scatter;  // select-and-scatter
  std::vector<NameRef> branch_computations;
  std::string custom_call_target;
  std::string backend_config;
  std::string op_name;  // metadata={op_name="..."}
  int64_t iota_dimension = -1;
  int64_t tuple_index = -1;  // get-tuple-element index=
  int64_t exponent_bits = -1, mantissa_bits = -1;
  std::optional<bool> largest;
  double epsilon = 0;  // batch-norm-*
  // Integer-list attributes of gather/scatter and others, by key.
  std::map<std::string, std::vector<int64_t>, std::less<>> int_lists;
  std::map<std::string, int64_t, std::less<>> ints;

  bool Has(std::string_view key) const;
};

struct HloComputation {
  std::string name;
  Loc loc;
  bool is_entry = false;
  std::vector<HloInstr> instrs;
  size_t root = 0;  // index in instrs (the ROOT, else the last)
  std::unordered_map<std::string, size_t> by_name;
};

struct HloText {
  std::string name;
  int64_t num_partitions = 0;
  std::vector<std::pair<int64_t, int64_t>> aliases;  // (output index, parameter)
  std::vector<HloComputation> computations;
  std::unordered_map<std::string, size_t> by_name;
  size_t entry = 0;
};

// Reads the text; errors are "FILE:LINE:COL: ...". `lex` stays usable for errors found later.
HloText ParseHloText(text_internal::Lexer& lex);

}  // namespace podsim::ir::hlo_internal
