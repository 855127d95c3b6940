#pragma once
// Structural checks of a Schedule, for tests and for schedules built by hand: well-formed
// dependencies and pieces, and (quadratic, small schedules only) the absence of races.

#include <cstdint>
#include <optional>
#include <string>

#include "sim/collectives/schedule.h"

namespace podsim::sim {

// Throws podsim::Error naming the transfer when a dep is not an earlier transfer, a piece lies
// outside its buffer, the segments do not add up to `elements`, an input buffer is written, or a
// step is negative.
void ValidateSchedule(const Schedule& schedule);

// A description of the first pair of transfers that touch overlapping elements of one buffer
// (not both reading, not both reducing) without being ordered by the deps; nullopt if none.
// Time and memory grow as transfers^2 / 64: meant for schedules of up to ~20,000 transfers.
std::optional<std::string> FindRace(const Schedule& schedule);

}  // namespace podsim::sim
