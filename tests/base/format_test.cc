// base/format.h, base/csv.h, base/io.h and base/error.h: expected text written by hand.

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"

namespace podsim {
namespace {

TEST_CASE("number formatters") {
  CHECK(FormatShortest(0.1) == "0.1");
  CHECK(FormatShortest(-3) == "-3");
  CHECK(FormatShortest(1e20) == "1e+20");
  CHECK(FormatShortest(std::nan("")) == "nan");
  CHECK(FormatShortest(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(FormatG(1e11) == "1e+11");
  CHECK(FormatG(2.5) == "2.5");
  CHECK(FormatG(1.0 / 3, 9) == "0.333333333");
  CHECK(FormatFixed(1.25, 1) == "1.2");  // 1.25 is exact: ties to even, as printf
  CHECK(FormatFixed(2.0, 3) == "2.000");
  CHECK(FormatFixed(1e300, 0).size() == 301);
  CHECK(FormatSi(999) == "999");
  CHECK(FormatSi(1234567) == "1.235M");
  CHECK(FormatSi(2.5e13) == "25T");
}

TEST_CASE("CSV quoting and tables") {
  CHECK(CsvField("plain") == "plain");
  CHECK(CsvField("a,b") == "\"a,b\"");
  CHECK(CsvField("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(CsvNumber(std::nan("")) == "");
  CHECK(CsvNumber(285) == "285");
  // Fixed decimals: 0.1 + 0.2 has binary noise in its last digits; a tiny negative is 0.
  CHECK(CsvNumber(0.1 + 0.2) == "0.30000000000000004");
  CHECK(CsvFixed(0.1 + 0.2, 3) == "0.300");
  CHECK(CsvFixed(2396.7451419999998, 3) == "2396.745");
  CHECK(CsvFixed(-1e-9, 3) == "0.000");
  CHECK(CsvFixed(-1.5, 1) == "-1.5");
  CHECK(CsvFixed(std::nan(""), 3) == "");
  CsvTable t({"a", "b"});
  t.AddRow({"1", "x,y"});
  CHECK(t.ToString() == "a,b\n1,\"x,y\"\n");
  CHECK_THROWS_WITH(t.AddRow({"1"}), "CSV row has 1 cells, header has 2");
}

TEST_CASE("atomic file output replaces the whole file and leaves no temporary behind") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "podsim_io_test";
  std::filesystem::remove_all(dir);
  MakeDirectories(dir.string());
  const std::string file = (dir / "out.txt").string();
  WriteFileAtomic(file, "first version, longer\n");
  WriteFileAtomic(file, "second\n");
  CHECK(ReadFile(file) == "second\n");
  WriteJsonFile((dir / "r.json").string(), nlohmann::json{{"b", 1}, {"a", 2}});
  CHECK(ReadFile((dir / "r.json").string()) == "{\n  \"a\": 2,\n  \"b\": 1\n}\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 2);
  CHECK_THROWS_WITH(WriteFileAtomic((dir / "missing" / "x").string(), "x"),
                    doctest::Contains("cannot write '"));
  CHECK_THROWS_WITH(ReadFile((dir / "nope").string()), doctest::Contains("cannot read '"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("ConfigError is an Error and names the file once") {
  const ConfigError e("topology.dims[1]: must be >= 1, got 0");
  const Error& as_error = e;
  CHECK(std::string(as_error.what()) == "topology.dims[1]: must be >= 1, got 0");
  const ConfigError in_file = e.InFile("pod.json");
  CHECK(std::string(in_file.what()) == "pod.json: topology.dims[1]: must be >= 1, got 0");
  CHECK(std::string(in_file.InFile("pod.json").what()) == in_file.what());
}

}  // namespace
}  // namespace podsim
