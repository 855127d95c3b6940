#include "cli/module_io.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/io.h"
#include "ir/hlo_import.h"
#include "ir/proto.h"
#include "ir/text.h"

namespace podsim::cli {

namespace {

bool IsProtoPath(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
}

void FlattenJson(const nlohmann::json& j, const ir::Shape& shape, size_t dim,
                 const std::string& where, std::vector<double>& out) {
  if (dim == shape.dims.size()) {
    if (j.is_boolean()) {
      out.push_back(j.get<bool>() ? 1.0 : 0.0);
    } else if (j.is_number()) {
      out.push_back(ir::RoundToDType(j.get<double>(), shape.dtype));
    } else if (j.is_string() && (j == "inf" || j == "-inf" || j == "nan")) {
      std::string s = j.get<std::string>();
      // Rounded like a number: an s32 or pred value never holds NaN or infinity.
      out.push_back(ir::RoundToDType(s == "nan" ? std::nan("") : (s == "inf" ? HUGE_VAL : -HUGE_VAL),
                                     shape.dtype));
    } else {
      throw Error(where + ": expected a number, got " + j.dump());
    }
    return;
  }
  if (!j.is_array() || static_cast<int64_t>(j.size()) != shape.dims[dim]) {
    throw Error(where + ": expected an array of " + std::to_string(shape.dims[dim]) +
                " elements for dimension " + std::to_string(dim) + " of " + shape.ToString() +
                ", got " + (j.is_array() ? std::to_string(j.size()) + " elements" : j.type_name()));
  }
  for (size_t k = 0; k < j.size(); ++k) {
    FlattenJson(j[k], shape, dim + 1, where + "[" + std::to_string(k) + "]", out);
  }
}

nlohmann::json NestJson(const ir::Literal& l, size_t dim, int64_t& pos) {
  if (dim == l.shape.dims.size()) {
    double v = l.values[pos++];
    if (l.shape.dtype == ir::DType::kPred) return v != 0;
    if (l.shape.dtype == ir::DType::kS32) return static_cast<int64_t>(v);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
  }
  nlohmann::json arr = nlohmann::json::array();
  for (int64_t k = 0; k < l.shape.dims[dim]; ++k) arr.push_back(NestJson(l, dim + 1, pos));
  return arr;
}

}  // namespace

std::unique_ptr<ir::Module> LoadModule(const std::string& path,
                                       const ir::HloImportOptions& options) {
  std::string bytes = ReadFile(path);
  if (IsProtoPath(path)) {
    try {
      return ir::ModuleFromProtoBytes(bytes);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  }
  if (ir::LooksLikeXlaHlo(bytes)) return ImportXlaHlo(bytes, path, options).module;
  return ir::ParseModule(bytes, path);
}

ir::HloImport ImportXlaHlo(const std::string& text, const std::string& path,
                           const ir::HloImportOptions& options) {
  ir::HloImport imported = ir::ImportHlo(text, path, options);
  for (const std::string& w : imported.warnings) std::cerr << "podsim: warning: " << w << "\n";
  return imported;
}

void SaveModule(const ir::Module& module, const std::string& path) {
  WriteFileAtomic(path, IsProtoPath(path) ? ir::ModuleToProtoBytes(module) : ir::PrintModule(module));
}

nlohmann::json LiteralToJson(const ir::Literal& literal) {
  if (literal.shape.is_tuple) {
    nlohmann::json arr = nlohmann::json::array();
    for (const ir::Literal& e : literal.elements) arr.push_back(LiteralToJson(e));
    return {{"tuple", arr}};
  }
  int64_t pos = 0;
  return NestJson(literal, 0, pos);
}

ir::Literal LiteralFromJson(const nlohmann::json& json, const ir::Shape& shape,
                            const std::string& where) {
  if (shape.is_tuple) throw Error(where + ": tuple-shaped inputs are not supported");
  std::vector<double> values;  // grows with the JSON given, not with what the shape claims
  FlattenJson(json, shape, 0, where, values);
  return ir::Literal(shape, std::move(values));
}

}  // namespace podsim::cli
