#pragma once
// Where podsim's data files live (topology and device presets, paper reference figures), so the
// binary does not depend on the checkout it was built from.
//
// The data directory holds the data files at the same relative paths as the source tree
// (`topologies/presets/tpu-v3-128.json`, `sim/device/presets/tpu-v3-core.json`,
// `experiments/reference/gshard-paper.json`). It is, in order:
// 1. $PODSIM_DATA_DIR, when set;
// 2. the directory a program embedding the library set with SetEmbedderDataDir (the Python
//    module sets its own: python/podsim/__init__.py);
// 3. `<dir of the executable>/share/podsim` (the build tree: build/podsim, build/share/podsim);
// 4. `<dir of the executable>/../share/podsim` (an install: bin/podsim, share/podsim; and the
//    test binaries in build/tests/).

#include <string>

namespace podsim {

// Sets the data directory of step 2 (empty: none). Call it before any thread uses the library.
void SetEmbedderDataDir(const std::string& dir);

// The data directory; throws Error saying where it looked if none exists.
std::string DataDir();

// A data file named by a relative path: the path itself when it names a file relative to the
// working directory (or is absolute), otherwise DataDir()/path. Throws Error if neither exists.
std::string FindDataFile(const std::string& path);

}  // namespace podsim
