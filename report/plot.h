#pragma once
// Plots (PNG and SVG rendered by gnuplot from the CSV files), and terminal progress that stays
// quiet when stderr is not a terminal.

#include <cstdint>
#include <string>
#include <vector>


namespace podsim::report {

// Writes `script` to DIR/NAME.gp and runs gnuplot on it twice, once with a pngcairo terminal
// (DIR/NAME.png) and once with svg (DIR/NAME.svg); the script must not set terminal or output.
// Returns false (and says why on stderr) if gnuplot is missing or fails: plots are a
// convenience, the CSV is the result.
bool RenderPlot(const std::string& dir, const std::string& name, const std::string& script,
                int width_px = 900, int height_px = 600);

// A one-line progress counter on stderr ("fig9: 12/32 ..."), only when stderr is a terminal.
class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  void Step(const std::string& what);

 private:
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool enabled_;
};

}  // namespace podsim::report
