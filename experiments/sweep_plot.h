#pragma once
// A sweep's plot (DIR/plot.png from DIR/plot.csv, with gnuplot): the config's "plot" y column
// against its x column, one line per series value, each point that did not run labelled with
// its status.

#include <vector>

#include "experiments/runners.h"
#include "experiments/sweep_point.h"

namespace podsim::experiments::sweep {

// `records` in point order; c.plot_x and c.plot_y are set.
void WritePlot(const ExperimentContext& ctx, const SweepConfig& c,
               const std::vector<PointRecord>& records);

}  // namespace podsim::experiments::sweep
