#pragma once
// Plots (PNG and SVG rendered by gnuplot from the CSV files), and terminal progress that stays
// quiet when stderr is not a terminal.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace podsim::report {

// The series colours of every plot: Okabe-Ito's palette without its yellow (readable on white
// and by colour-blind readers), in the order series take them.
inline constexpr std::array<const char*, 7> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                        "#56B4E9", "#E69F00", "#000000"};

// gnuplot lines setting linetypes 1..7 to kPalette at line width `width`.
std::string PaletteLinetypes(double width = 1.5);

// Writes `script` to DIR/NAME.gp and runs gnuplot on it twice, once with a pngcairo terminal
// (DIR/NAME.png) and once with svg (DIR/NAME.svg); the script must not set terminal or output.
// Returns false (and says why on stderr) if gnuplot is missing or fails: plots are a
// convenience, the CSV is the result.
bool RenderPlot(const std::string& dir, const std::string& name, const std::string& script,
                int width_px = 900, int height_px = 600);

// A one-line progress counter on stderr, only when stderr is a terminal:
//   "sweep: 12/32  0:42 elapsed, ETA 1:10  running model.experts=512 topology=tpu-v3-512"
// The ETA is the mean time of the points done in this process times the points left.
class Progress {
 public:
  // `already`: points done before this process started (a resumed run); they count as done but
  // not in the ETA.
  Progress(std::string label, int64_t total, int64_t already = 0);
  ~Progress();
  // The point now running.
  void Start(const std::string& what);
  // A point done (`what`: its name, shown until the next Start).
  void Step(const std::string& what);
  // A line for the user (a point that failed, say) on stderr, whether or not it is a terminal;
  // on a terminal the progress line is redrawn below it.
  void Note(const std::string& line) const;

 private:
  void Show(const std::string& what) const;
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  int64_t done_here_ = 0;
  double start_s_;
  bool enabled_;
  mutable bool shown_ = false;
};

}  // namespace podsim::report
