#pragma once
// Plots: PNG and SVG rendered by gnuplot from the CSV files.

#include <array>
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

}  // namespace podsim::report
