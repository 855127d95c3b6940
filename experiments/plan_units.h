#pragma once
// Units the plan's reasons (plan.cc) and its table (plan_output.cc) print in.

#include <string>

#include "base/format.h"

namespace podsim::experiments::plan_units {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Seconds as milliseconds with one decimal.
inline std::string Ms(double s) { return FormatFixed(s * 1e3, 1); }

}  // namespace podsim::experiments::plan_units
