#include "base/resources.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "base/error.h"

namespace podsim {
namespace {

namespace fs = std::filesystem;

bool IsDirectory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::string& EmbedderDataDir() {
  static std::string dir;
  return dir;
}

}  // namespace

void SetEmbedderDataDir(const std::string& dir) { EmbedderDataDir() = dir; }

std::string DataDir() {
  if (const char* env = std::getenv("PODSIM_DATA_DIR"); env != nullptr && *env != '\0') {
    if (!IsDirectory(env)) {
      throw Error(std::string("PODSIM_DATA_DIR='") + env + "' is not a directory");
    }
    return env;
  }
  if (const std::string& dir = EmbedderDataDir(); !dir.empty()) {
    if (!IsDirectory(dir)) throw Error("podsim's data directory '" + dir + "' does not exist");
    return dir;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    for (const fs::path& candidate : {dir / "share" / "podsim", dir / ".." / "share" / "podsim"}) {
      if (IsDirectory(candidate)) return candidate.lexically_normal().string();
    }
  }
  throw Error("cannot find podsim's data directory (presets, reference figures): looked in "
              "share/podsim beside and above the executable; set PODSIM_DATA_DIR");
}

std::string FindDataFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (fs::path(path).is_relative()) {
    const fs::path in_data = fs::path(DataDir()) / path;
    if (fs::is_regular_file(in_data, ec)) return in_data.string();
  }
  throw Error("cannot find '" + path + "' (neither a file nor in the data directory)");
}

}  // namespace podsim
