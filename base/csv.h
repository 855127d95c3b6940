#pragma once
// CSV tables (RFC 4180 quoting), the one CSV writer of podsim.

#include <string>
#include <vector>

namespace podsim {

// A CSV field, quoted when it holds a comma, a quote or a newline ("a,b" -> "\"a,b\"").
std::string CsvField(const std::string& cell);

// A number as a CSV cell: the shortest text that reads back as v ("1.5", "285"); "" for NaN
// (an absent value).
std::string CsvNumber(double v);

// A number with `decimals` digits after the point ("2396.745"), for a modelled quantity whose
// last binary digits are noise (a time in us to the nanosecond: 3); "" for NaN.
std::string CsvFixed(double v, int decimals);

// A CSV table: a header and rows of already-formatted cells.
class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> header) : header_(std::move(header)) {}
  // Throws Error if the row's width differs from the header's.
  void AddRow(std::vector<std::string> row);
  // The header line, then one line a row, each ending in '\n'.
  std::string ToString() const;
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  size_t columns() const { return header_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace podsim
