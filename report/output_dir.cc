#include "report/output_dir.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <vector>

#include "base/error.h"
#include "base/io.h"

namespace podsim::report {

namespace fs = std::filesystem;

namespace {

std::string StatusPath(const std::string& dir) { return (fs::path(dir) / kStatusFile).string(); }

// The sorted names of the entries of `dir`.
std::vector<std::string> Entries(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) throw Error("cannot list directory '" + dir + "': " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

std::string SomeNames(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 4);
  for (size_t k = 0; k < shown; ++k) out += (k ? ", " : "") + names[k];
  if (names.size() > shown) out += ", ... " + std::to_string(names.size()) + " entries";
  return out;
}

}  // namespace

OutputDir OutputDir::Claim(const std::string& dir, bool force) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) {
    throw Error("--out '" + dir + "' exists and is not a directory");
  }
  if (!fs::exists(st)) {
    MakeDirectories(dir);
    WriteFileAtomic(StatusPath(dir), "status: running\n");
    return OutputDir(dir);
  }
  const std::vector<std::string> names = Entries(dir);
  if (!names.empty()) {
    const bool ours = std::find(names.begin(), names.end(), kStatusFile) != names.end();
    if (!force) {
      throw Error("--out '" + dir + "' already holds files (" + SomeNames(names) + ")" +
                  (ours ? " of an earlier run; pass --force to replace them"
                        : "; choose an empty or new directory") +
                  ", so that no stale result sits beside the new ones");
    }
    if (!ours) {
      throw Error("--out '" + dir + "' holds files (" + SomeNames(names) +
                  ") but no podsim status file: it is not a podsim output directory, so --force "
                  "does not clear it; choose an empty or new directory");
    }
  }
  // "running" first: a run killed while clearing leaves a directory that says so.
  WriteFileAtomic(StatusPath(dir), "status: running\n");
  for (const std::string& name : names) {
    if (name == kStatusFile) continue;
    fs::remove_all(fs::path(dir) / name, ec);
    if (ec) throw Error("cannot clear '" + (fs::path(dir) / name).string() + "': " + ec.message());
  }
  return OutputDir(dir);
}

OutputDir OutputDir::Resume(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec) || Entries(dir).empty()) return Claim(dir, false);
  if (!fs::is_directory(dir, ec)) throw Error("--out '" + dir + "' exists and is not a directory");
  const std::vector<std::string> names = Entries(dir);
  if (std::find(names.begin(), names.end(), kStatusFile) == names.end()) {
    throw Error("--out '" + dir + "' holds files (" + SomeNames(names) +
                ") but no podsim status file: there is no run to resume there");
  }
  WriteFileAtomic(StatusPath(dir), "status: running\n");
  return OutputDir(dir);
}

void OutputDir::Done(const std::string& details) const {
  std::string text = "status: done\n" + details;
  if (!details.empty() && details.back() != '\n') text += "\n";
  WriteFileAtomic(StatusPath(path_), text);
}

void OutputDir::Failed(const std::string& error) const noexcept {
  try {
    // One line per field: a multi-line message is folded.
    std::string folded = error;
    std::replace(folded.begin(), folded.end(), '\n', ' ');
    WriteFileAtomic(StatusPath(path_), "status: failed\nerror: " + folded + "\n");
  } catch (const std::exception& e) {
    std::cerr << "warning: could not record the failure in " << StatusPath(path_) << ": "
              << e.what() << "\n";
  }
}

}  // namespace podsim::report
