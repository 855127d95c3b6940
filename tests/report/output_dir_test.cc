// report/output_dir.h: the status file, refusing a directory that holds files, --force clearing
// only podsim's own directories.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/io.h"
#include "report/output_dir.h"

namespace podsim::report {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / name) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

TEST_CASE("a new directory is created and says running, then done or failed") {
  TempDir t("podsim_output_dir_new");
  const std::string dir = t / "a/b";  // parents are created too
  const OutputDir out = OutputDir::Claim(dir, /*force=*/false);
  CHECK(ReadFile(dir + "/status") == "status: running\n");
  out.Done("points: 3 (3 ok, 0 oom, 0 failed)");
  CHECK(ReadFile(dir + "/status") == "status: done\npoints: 3 (3 ok, 0 oom, 0 failed)\n");
  out.Failed("line one\nline two");
  CHECK(ReadFile(dir + "/status") == "status: failed\nerror: line one line two\n");
  // An existing empty directory is claimed as it is.
  fs::create_directories(t / "empty");
  OutputDir::Claim(t / "empty", false);
  CHECK(ReadFile(t / "empty/status") == "status: running\n");
}

TEST_CASE("a directory holding an earlier run's files is refused, --force clears it") {
  TempDir t("podsim_output_dir_rerun");
  const std::string dir = t / "run";
  OutputDir::Claim(dir, false).Done();
  WriteFileAtomic(dir + "/results.csv", "a\n");
  fs::create_directories(dir + "/128E");
  WriteFileAtomic(dir + "/128E/ops.csv", "b\n");
  CHECK_THROWS_WITH_AS(OutputDir::Claim(dir, false),
                       doctest::Contains("already holds files (128E, results.csv, status) of an "
                                         "earlier run; pass --force"),
                       Error);
  CHECK(fs::exists(dir + "/results.csv"));  // a refusal touches nothing
  CHECK(ReadFile(dir + "/status") == "status: done\n");
  OutputDir::Claim(dir, true);
  CHECK(!fs::exists(dir + "/results.csv"));
  CHECK(!fs::exists(dir + "/128E"));
  CHECK(ReadFile(dir + "/status") == "status: running\n");
}

TEST_CASE("--force does not clear a directory that is not podsim's") {
  TempDir t("podsim_output_dir_foreign");
  fs::create_directories(t.path);
  WriteFileAtomic(t / "thesis.tex", "precious\n");
  CHECK_THROWS_WITH_AS(OutputDir::Claim(t.path.string(), true),
                       doctest::Contains("holds files (thesis.tex) but no podsim status file"),
                       Error);
  CHECK(ReadFile(t / "thesis.tex") == "precious\n");
  CHECK(!fs::exists(t / "status"));
  CHECK_THROWS_WITH_AS(OutputDir::Claim(t / "thesis.tex", true),
                       doctest::Contains("exists and is not a directory"), Error);
}

}  // namespace
}  // namespace podsim::report
