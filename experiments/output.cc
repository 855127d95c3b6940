#include "experiments/output.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ir/error.h"

namespace podsim::experiments {

void CsvTable::AddRow(std::vector<std::string> row) {
  if (row.size() != header_.size()) {
    throw Error("CSV row has " + std::to_string(row.size()) + " cells, header has " +
                std::to_string(header_.size()));
  }
  rows_.push_back(std::move(row));
}

namespace {

std::string Quote(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void AppendLine(std::string& out, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += Quote(cells[i]);
  }
  out += '\n';
}

}  // namespace

std::string CsvTable::ToString() const {
  std::string out;
  AppendLine(out, header_);
  for (const auto& r : rows_) AppendLine(out, r);
  return out;
}

std::string FormatCell(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

void MakeDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir + "': " + ec.message());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("cannot write '" + path + "'");
  out << text;
  if (!out) throw Error("failed writing '" + path + "'");
}

void WriteJsonFile(const std::string& path, const nlohmann::json& json) {
  WriteText(path, json.dump(2) + "\n");
}

bool RenderPlot(const std::string& dir, const std::string& name, const std::string& script,
                int width_px, int height_px) {
  const std::string gp = dir + "/" + name + ".gp";
  WriteText(gp, script);
  const std::string size = std::to_string(width_px) + "," + std::to_string(height_px);
  const std::string terminals[][2] = {
      {"pngcairo size " + size + " font 'sans,10'", dir + "/" + name + ".png"},
      {"svg size " + size + " dynamic font 'sans,10'", dir + "/" + name + ".svg"}};
  for (const auto& [terminal, output] : terminals) {
    // The data paths inside the script are relative to DIR: run gnuplot there.
    std::string cmd = "cd '" + dir + "' && gnuplot -e \"set terminal " + terminal +
                      "; set output '" + std::filesystem::path(output).filename().string() +
                      "'\" '" + name + ".gp' 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) {
      std::cerr << "plot " << name << ": cannot run gnuplot\n";
      return false;
    }
    std::string log;
    char buf[512];
    while (fgets(buf, sizeof(buf), pipe)) log += buf;
    int status = pclose(pipe);
    if (status != 0) {
      std::cerr << "plot " << name << ": gnuplot failed (is gnuplot installed? setup.sh installs "
                << "gnuplot-nox):\n" << log;
      return false;
    }
  }
  return true;
}

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() {
  if (enabled_ && done_ > 0) std::cerr << "\n";
}

void Progress::Step(const std::string& what) {
  ++done_;
  if (!enabled_) return;
  std::cerr << "\r\033[K" << label_ << ": " << done_ << "/" << total_ << "  " << what
            << std::flush;
}

}  // namespace podsim::experiments
