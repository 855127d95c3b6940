// The experiment config loaders up to validation (experiments::CheckExperimentConfig): the
// experiment kinds, and through them the collective, simulator (device, network, collectives),
// model and topology configs. Bad JSON or values are podsim::Errors; nothing is run.

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config.h"
#include "experiments/experiment.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  podsim::fuzz::ExpectClearErrors([&] {
    const nlohmann::json json = podsim::ParseJson(text, "fuzz.json");
    podsim::experiments::CheckExperimentConfig(json, "fuzz.json");
  });
  return 0;
}
