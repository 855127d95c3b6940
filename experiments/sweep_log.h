#pragma once
// A sweep's points log, DIR/points.jsonl: what makes a sweep resumable and safe.
//
// Each finished point is appended to the log (one line, written with one append and synced) as
// it completes. `podsim run --resume` on a directory a run left (killed, failed or done) keeps
// the points it finished (a torn last line is dropped), runs the rest, and writes exactly the
// results a clean run writes: rows in point order, every cell as the point wrote it. A log of
// another config (its fingerprint differs) is refused.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/sweep_point.h"

namespace podsim::experiments::sweep {

inline constexpr const char* kLogFile = "points.jsonl";

// FNV-1a, 64 bits, of the config's JSON text: the config's fingerprint in the points log
// (stable across runs and builds), as 16 hex digits.
std::string Fingerprint(const nlohmann::json& config);

// The points log of an output directory: one line per finished point.
class PointsLog {
 public:
  PointsLog(std::string path, std::string fingerprint, int64_t num_points, size_t row_width)
      : path_(std::move(path)),
        fingerprint_(std::move(fingerprint)),
        num_points_(num_points),
        row_width_(row_width) {}
  ~PointsLog();
  PointsLog(const PointsLog&) = delete;
  PointsLog& operator=(const PointsLog&) = delete;

  // Opens the log for appending, first (resume) reading the points an earlier run finished
  // into `done` and rewriting the log without a torn last line; otherwise starting it empty.
  void Open(bool resume, std::map<int64_t, PointRecord>& done);

  // Adds the points another run of this config finished (its directory's log: a shard's, say)
  // that `done` lacks, appending each to this log.
  void Merge(const std::string& dir, std::map<int64_t, PointRecord>& done);

  // Appends a record: one write, then fsync, so that a point is either whole in the log or
  // (killed mid-write) a torn last line that Open drops.
  void Append(const std::string& record_text);

 private:
  std::string path_;
  std::string fingerprint_;
  int64_t num_points_;
  size_t row_width_;
  int fd_ = -1;
};

}  // namespace podsim::experiments::sweep
