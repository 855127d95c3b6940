#pragma once
// Helpers of the XLA HLO importer's tests (tests/ir/hlo_import*_test.cc).

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/hlo_import.h"
#include "ir/interpreter.h"
#include "ir/module.h"

namespace podsim::ir {

inline HloImport Import(const std::string& text, const HloImportOptions& options = {}) {
  return ImportHlo(text, "t.hlo", options);
}

inline Literal Run(const Module& m, std::vector<Literal> args) { return Interpret(m, args); }

inline Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal(Shape(DType::kF32, std::move(dims)), std::move(v));
}

inline const Instruction* Find(const Module& m, const std::string& name) {
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->name == name) return i.get();
    }
  }
  return nullptr;
}

inline int Count(const Module& m, Opcode op) {
  int n = 0;
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) n += i->opcode == op;
  }
  return n;
}

// The error of importing `text`: "t.hlo:LINE:COL: ..." (checked), returned whole.
inline std::string ImportError(const std::string& text, const HloImportOptions& options = {}) {
  try {
    Import(text, options);
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_MESSAGE(m.rfind("t.hlo:", 0) == 0, m);
    return m;
  }
  FAIL("expected an import error");
  return "";
}

}  // namespace podsim::ir
