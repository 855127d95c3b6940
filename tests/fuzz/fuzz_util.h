#pragma once
// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cc, docs/testing.md). A target feeds its
// input to a reader; a podsim::Error is the expected answer to bad input, so it is swallowed.
// Anything else (another exception type, a crash, a sanitizer report, a failed invariant)
// is a finding: an invariant is checked with FUZZ_CHECK, which prints and aborts.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"

#define FUZZ_CHECK(cond, what)                                                     \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", std::string(what).c_str(), \
                   __FILE__, __LINE__);                                            \
      std::abort();                                                                \
    }                                                                              \
  } while (false)

namespace podsim::fuzz {

// Runs f; a podsim::Error (a clear error for bad input) ends the run quietly.
template <typename F>
void ExpectClearErrors(F&& f) {
  try {
    f();
  } catch (const podsim::Error&) {
  }
}

}  // namespace podsim::fuzz
