#pragma once
// One point of a sweep, run: its row of results.csv and its results.json entry, and the one
// JSON text a point travels as (a line of the points log, an MPI rank's answer).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/sweep_config.h"

namespace podsim::experiments::sweep {

// One finished point: its row of results.csv (the axis cells first) and its results.json entry.
struct PointRecord {
  int64_t index = 0;
  std::vector<std::string> row;
  nlohmann::json detail;
};

// Runs point k. Its status says how it ended: ok, oom, invalid (the configuration cannot run:
// the reason), failed (the simulation raised podsim::Error: the message) or skipped.
PointRecord RunPoint(const SweepConfig& c, int64_t k);

// Runs point k as a record text; any other exception also becomes a failed point, not a lost
// rank.
std::string RunPointText(const SweepConfig& c, int64_t k, const std::string& fingerprint);

// A record as one JSON text (the points log's line without its newline, and what an MPI rank
// sends back): the fingerprint of the config it belongs to, the index, the row and the entry.
std::string RecordText(const PointRecord& rec, const std::string& fingerprint);

// Reads a record back; throws podsim::Error naming `where` if it is not one of this sweep's
// (another config's fingerprint, an index or a row width that does not fit).
PointRecord ParseRecord(const std::string& text, const std::string& fingerprint, int64_t num_points,
                        size_t row_width, const std::string& where);

}  // namespace podsim::experiments::sweep
