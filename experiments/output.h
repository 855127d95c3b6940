#pragma once
// Writing experiment outputs: CSV tables, JSON files, gnuplot plots (PNG and SVG rendered by
// gnuplot from the CSV), and terminal progress that stays quiet when stderr is not a terminal.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace podsim::experiments {

// A CSV table: a header and rows of already-formatted cells (RFC 4180 quoting on write).
class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> header) : header_(std::move(header)) {}
  // Throws podsim::Error if the row's width differs from the header's.
  void AddRow(std::vector<std::string> row);
  std::string ToString() const;
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Shortest text that reads back as v ("1.5", "285"); "" for NaN (an absent value).
std::string FormatCell(double v);

// Creates `dir` and its parents; throws podsim::Error if it cannot.
void MakeDirectories(const std::string& dir);
void WriteText(const std::string& path, const std::string& text);
// Pretty-printed with 2-space indent and a trailing newline; keys in sorted order.
void WriteJsonFile(const std::string& path, const nlohmann::json& json);

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

}  // namespace podsim::experiments
