#pragma once
// The flow model's clock arithmetic, shared by the flow network (sim/network/flow_network.cc) and
// its orbit-reduced form (sim/network/symmetric_flow.cc) so that both round ends alike.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "base/error.h"
#include "base/format.h"

namespace podsim::sim::internal {

constexpr double kPsPerSecond = 1e12;
// A class never ends later than this (ps, ~46 days): keeps end times far from overflow.
constexpr double kFarFuturePs = 4e18;
// Rates within this relative distance below an ending class's rate count as at its level, as
// the filler counts them (sim/network/maxmin.cc): refilled with it, not left behind by an ulp.
constexpr double kLevelTolerance = 1e-12;

// Picoseconds until `remaining` bytes are sent at `rate` B/s, rounded up: a class that has not
// ended has a true end > now, so at least 1 ps; kFarFuturePs (or more) when rate is 0.
inline double FlowDurationPs(double remaining, double rate) {
  return rate > 0 ? std::ceil(remaining / rate * kPsPerSecond) : kFarFuturePs;
}

// The end time of a class at time t with `ps` (FlowDurationPs) to go, clamped to the clock.
inline int64_t FlowEndPs(int64_t t, double ps) {
  const int64_t duration = std::max<int64_t>(1, static_cast<int64_t>(std::min(ps, kFarFuturePs)));
  return duration < std::numeric_limits<int64_t>::max() - t ? t + duration
                                                            : std::numeric_limits<int64_t>::max() - 1;
}

// A class whose rate puts its end beyond kFarFuturePs: a real transfer that long (more than
// 46 days) is an error, since its end cannot be represented; a rounding residue of a rate is
// not (it is refilled when its neighbours end). `fastest`: the fastest link's B/s.
inline void CheckFlowClockRange(int64_t t, double remaining, double fastest) {
  const double best_ps = remaining / fastest * kPsPerSecond;
  if (static_cast<double>(t) + best_ps >= kFarFuturePs) {
    throw Error("flow network: " + FormatG(remaining) + " bytes still to send at " +
                FormatG(static_cast<double>(t) * 1e-12) + " s need at least " +
                FormatG(best_ps * 1e-12) + " s even at the fastest link's " + FormatG(fastest) +
                " B/s: beyond the picosecond clock's range (" + FormatG(kFarFuturePs * 1e-12) +
                " s)");
  }
}

}  // namespace podsim::sim::internal
