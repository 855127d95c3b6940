#pragma once
// Reading and writing modules and literals for the CLI: IR text (.hlo, .txt) or binary
// protobuf (.pb) chosen by file extension; literals as nested JSON arrays.

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ir/literal.h"
#include "ir/module.h"

namespace podsim::cli {

// Loads and verifies a module; throws podsim::Error naming the file.
std::unique_ptr<ir::Module> LoadModule(const std::string& path);
void SaveModule(const ir::Module& module, const std::string& path);

// Nested arrays in row-major order (a scalar is a bare number); tuples become
// {"tuple": [...]}.
nlohmann::json LiteralToJson(const ir::Literal& literal);
// Reads `json` as a value of `shape`; errors name `where` and the offending index.
ir::Literal LiteralFromJson(const nlohmann::json& json, const ir::Shape& shape,
                            const std::string& where);


}  // namespace podsim::cli
