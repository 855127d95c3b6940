#include "experiments/sweep_plot.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "base/format.h"
#include "base/io.h"
#include "report/plot.h"

namespace podsim::experiments::sweep {

void WritePlot(const ExperimentContext& ctx, const SweepConfig& c,
               const std::vector<PointRecord>& records) {
  const std::vector<std::string> cols = c.Columns();
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  const size_t xc = column(c.plot_x), yc = column(c.plot_y);
  const size_t sc = c.plot_series.empty() ? cols.size() : column(c.plot_series);
  const size_t status_c = column("status");
  bool numeric_x = true;
  for (const PointRecord& r : records) {
    const nlohmann::json v = nlohmann::json::parse(r.row[xc], nullptr, false);
    numeric_x = numeric_x && v.is_number();
  }
  std::vector<std::string> series, xs;
  for (const PointRecord& r : records) {
    const std::string s = sc < cols.size() ? r.row[sc] : c.plot_y;
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    if (std::find(xs.begin(), xs.end(), r.row[xc]) == xs.end()) xs.push_back(r.row[xc]);
  }
  // Within a series, one line per combination of the other axes (a blank line between them:
  // gnuplot starts a new line there, in the series' colour), in point order.
  auto rest_of = [&](const PointRecord& r) {
    std::string key;
    for (size_t a = 0; a < c.axes.size(); ++a) {
      if (a != xc && a != sc) key += r.row[a] + '\x1f';
    }
    return key;
  };
  std::ostringstream data, gp;
  data << "# series x y status\n";
  for (size_t s = 0; s < series.size(); ++s) {
    if (s > 0) data << "\n\n";  // gnuplot data blocks: one per series (index s)
    std::vector<std::string> lines;
    for (const PointRecord& r : records) {
      const std::string key = rest_of(r);
      if ((sc < cols.size() ? r.row[sc] : c.plot_y) == series[s] &&
          std::find(lines.begin(), lines.end(), key) == lines.end()) {
        lines.push_back(key);
      }
    }
    for (size_t l = 0; l < lines.size(); ++l) {
      if (l > 0) data << '\n';
      for (const PointRecord& r : records) {
        if ((sc < cols.size() ? r.row[sc] : c.plot_y) != series[s] || rest_of(r) != lines[l]) {
          continue;
        }
        const std::string x =
            numeric_x ? r.row[xc]
                      : std::to_string(std::find(xs.begin(), xs.end(), r.row[xc]) - xs.begin());
        const std::string y = r.row[yc].empty() ? "?" : r.row[yc];
        data << '"' << series[s] << "\" " << x << ' ' << y << ' ' << r.row[status_c] << '\n';
      }
    }
  }
  gp << report::PaletteLinetypes();  // then gnuplot's own colours past the seventh series
  gp << "set title '" << c.name << ": " << c.plot_y << " against " << c.plot_x
     << " (a point that did not run is labelled with its status)' noenhanced\n"
     << "set xlabel '" << c.plot_x << "' noenhanced\nset ylabel '" << c.plot_y
     << "' noenhanced\nset grid\nset key outside right noenhanced\nset offsets graph 0.05, graph "
        "0.05, graph 0.05, graph 0.05\n";
  if (!numeric_x) {
    gp << "set xtics (";
    for (size_t i = 0; i < xs.size(); ++i) gp << (i ? ", " : "") << '"' << xs[i] << "\" " << i;
    gp << ") noenhanced\n";
  }
  int label = 0;
  for (const PointRecord& r : records) {
    if (!r.row[yc].empty()) continue;
    const std::string x =
        numeric_x ? r.row[xc]
                  : std::to_string(std::find(xs.begin(), xs.end(), r.row[xc]) - xs.begin());
    ++label;
    const std::string what =
        sc < cols.size() ? r.row[sc] + ": " + r.row[status_c] : r.row[status_c];
    gp << "set label " << label << " '" << what << "' at first " << x << ", graph "
       << FormatFixed(0.04 + 0.05 * static_cast<double>(label % 4), 2)
       << " center tc rgb '#444444' noenhanced\n";
  }
  gp << "plot ";
  for (size_t s = 0; s < series.size(); ++s) {
    gp << (s ? ", \\\n     " : "") << "'plot.csv' index " << s
       << " using 2:3 with linespoints pt 7 title '" << series[s] << "'";
  }
  gp << "\n";
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1100, 650);
}

}  // namespace podsim::experiments::sweep
