// report/plot.h: gnuplot runs with an argument vector in the output directory, so a directory
// name with quotes and shell syntax is only a name (the plot step once built a shell command
// from it); the image appears under its final name only when complete.

#include "report/plot.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "base/io.h"

namespace podsim::report {
namespace {

namespace fs = std::filesystem;

TEST_CASE("a hostile output directory name reaches no shell") {
  const fs::path base = fs::temp_directory_path() / "podsim_plot_test";
  fs::remove_all(base);
  const fs::path dir = base / "out'; touch pwned; echo '$(touch pwned2)";
  fs::create_directories(dir);
  WriteFileAtomic((dir / "data.csv").string(), "x,y\n1,1\n2,4\n3,9\n");
  const bool drawn = RenderPlot(dir.string(), "plot",
                                "set datafile separator ','\nplot 'data.csv' using 1:2 every ::1 "
                                "with lines notitle\n",
                                320, 240);
  CHECK(drawn);  // gnuplot is installed by setup.sh
  CHECK(fs::file_size(dir / "plot.png") > 0);
  CHECK(fs::exists(dir / "plot.svg"));
  CHECK(!fs::exists(dir / "plot.png.tmp"));
  CHECK(!fs::exists(dir / "plot.log"));
  // Nothing ran the injected commands, wherever a shell would have run them.
  for (const fs::path& where : {base, dir, fs::current_path()}) {
    CHECK(!fs::exists(where / "pwned"));
    CHECK(!fs::exists(where / "pwned2"));
  }
  fs::remove_all(base);
}

}  // namespace
}  // namespace podsim::report

TEST_CASE("the palette's linetypes set each series colour in order, at the width asked") {
  const std::string lines = podsim::report::PaletteLinetypes(2);
  // Seven lines, one per colour: "set linetype N lc rgb '#RRGGBB' lw 2".
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 7);
  CHECK(lines.rfind("set linetype 1 lc rgb '#0072B2' lw 2\n", 0) == 0);
  CHECK(lines.find("set linetype 7 lc rgb '#000000' lw 2\n") != std::string::npos);
}
