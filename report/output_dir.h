#pragma once
// The output directory of one run (`podsim run --out DIR`, `podsim simulate --out DIR`).
//
// DIR/status says how far the run got; it is written before anything else and last:
//
//   status: running                      while the run is writing
//   status: done                         every file is complete; a "points:" line follows for
//   points: 3 (2 ok, 1 oom, 0 failed)    an experiment
//   status: failed                       the run stopped on an error (the files beside it are
//   error: <the message>                 what it had written, not a complete result)
//
// Every file is written atomically (base/io.h), so a run killed at any moment (kill -9) leaves
// either a complete result with "status: done" or "status: running" / no status at all, never a
// torn file that looks complete. A directory that holds files is refused, so that a new run's
// results never sit beside an earlier run's stale ones; `force` clears it first, but only when
// it is one of podsim's (it has a status file), never an arbitrary directory.

#include <string>

namespace podsim::report {

class OutputDir {
 public:
  // Creates `dir` (and its parents) or claims an existing one as described above: writes
  // "status: running", then, with `force`, removes every other entry. Throws podsim::Error
  // naming the directory when it holds files (without `force`), or files but no status file.
  static OutputDir Claim(const std::string& dir, bool force);
  // Claims `dir` to continue the run that left it (`podsim run --resume`): writes "status:
  // running" and keeps every file. A new or empty `dir` is claimed as by Claim. Throws
  // podsim::Error when `dir` holds files but no status file (not a podsim output directory).
  static OutputDir Resume(const std::string& dir);

  const std::string& path() const { return path_; }
  // "status: done" plus `details` lines ("points: ..."), written atomically.
  void Done(const std::string& details = "") const;
  // "status: failed" and the error, written atomically; never throws (it is called while an
  // exception is already on its way out).
  void Failed(const std::string& error) const noexcept;

 private:
  explicit OutputDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The file name of the status file inside an output directory.
inline constexpr const char* kStatusFile = "status";

}  // namespace podsim::report
