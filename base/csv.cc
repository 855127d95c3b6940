#include "base/csv.h"

#include <cmath>

#include "base/error.h"
#include "base/format.h"

namespace podsim {
namespace {

void AppendLine(std::string& out, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += CsvField(cells[i]);
  }
  out += '\n';
}

}  // namespace

std::string CsvField(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvNumber(double v) { return std::isnan(v) ? "" : FormatShortest(v); }

std::string CsvFixed(double v, int decimals) {
  if (std::isnan(v)) return "";
  const std::string text = FormatFixed(v, decimals);
  // No "-0.000": a value that rounds to zero is zero.
  return text.find_first_not_of("-0.") == std::string::npos ? FormatFixed(0.0, decimals) : text;
}

void CsvTable::AddRow(std::vector<std::string> row) {
  if (row.size() != header_.size()) {
    throw Error("CSV row has " + std::to_string(row.size()) + " cells, header has " +
                std::to_string(header_.size()));
  }
  rows_.push_back(std::move(row));
}

std::string CsvTable::ToString() const {
  std::string out;
  AppendLine(out, header_);
  for (const auto& r : rows_) AppendLine(out, r);
  return out;
}

}  // namespace podsim
