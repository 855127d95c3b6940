#pragma once
// Reading and writing modules and literals for the CLI: IR text (.hlo, .txt) or binary
// protobuf (.pb) chosen by file extension, and real XLA HLO text (ir/hlo_import.h) recognised
// by its content; literals as nested JSON arrays.

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ir/hlo_import.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace podsim::cli {

// Loads and verifies a module (XLA HLO text is imported with `options`, its warnings printed to
// stderr); throws podsim::Error naming the file.
std::unique_ptr<ir::Module> LoadModule(const std::string& path,
                                       const ir::HloImportOptions& options = {});
// Imports XLA HLO `text` read from `path`, printing the warnings to stderr.
ir::HloImport ImportXlaHlo(const std::string& text, const std::string& path,
                           const ir::HloImportOptions& options);
void SaveModule(const ir::Module& module, const std::string& path);

// Nested arrays in row-major order (a scalar is a bare number); tuples become
// {"tuple": [...]}.
nlohmann::json LiteralToJson(const ir::Literal& literal);
// Reads `json` as a value of `shape`; errors name `where` and the offending index.
ir::Literal LiteralFromJson(const nlohmann::json& json, const ir::Shape& shape,
                            const std::string& where);


}  // namespace podsim::cli
