#pragma once
// Reads real XLA HLO text (what jax.jit(...).lower().compiler_ir("hlo"), XLA's --xla_dump_to and
// PyTorch/XLA write) into podsim's IR: a second reader beside podsim's own text format
// (ir/text.h), for programs podsim did not write. docs/hlo-import.md lists what it maps to what.
//
// What it reads: names with or without '%', layouts (dropped: podsim has no layouts), module
// header attributes, computations with signatures, ENTRY and ROOT anywhere, comments,
// instructions over several lines, typed operands; reductions with init operands and to_apply
// computations; call (inlined), while (a counted loop: the trip count from backend_config's
// known_trip_count, else from the condition's comparison of the induction variable against a
// constant, else from ImportOptions::trip_counts); collectives with explicit or iota replica
// groups; shardings; the Sharding custom-call. Advisory attributes (metadata,
// frontend_attributes, backend_config, channel_id, ...) never fail an import; metadata's op_name
// becomes the instruction's scope.
//
// Errors are podsim::Error "FILE:LINE:COL: what was expected" at the offending token.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"

namespace podsim::ir {

struct HloImportOptions {
  // Trip counts by while instruction name (without '%'), for loops whose count is not in the
  // module; they also override a count found there.
  std::map<std::string, int64_t> trip_counts;
  // Floating-point operations per call of a custom-call target podsim does not model (kept as a
  // custom-call that reads its operands and writes its result; 0 flops when not given here).
  std::map<std::string, double> custom_call_flops;
};

struct HloImport {
  std::unique_ptr<Module> module;
  // Whether the module is already an SPMD program (it has collectives or partition-id, or its
  // entry is named *_spmd): its shardings describe the global arrays and are dropped, and it
  // runs as written on num_partitions devices.
  bool partitioned = false;
  // Devices the program's collectives address (the header's num_partitions when given); 0 when
  // nothing says.
  int64_t num_partitions = 0;
  // What the import approximated or dropped, one line each ("FILE:LINE:COL: ...").
  std::vector<std::string> warnings;
};

HloImport ImportHlo(std::string_view text, const std::string& filename,
                    const HloImportOptions& options = {});

// Whether `text` is XLA HLO rather than podsim's own format: its first instruction has a name
// without '%', a layout after its shape, or attributes podsim's format does not have. A cheap
// look at the first lines, for readers that take either.
bool LooksLikeXlaHlo(std::string_view text);

}  // namespace podsim::ir
