// podsim.run_experiment(), check_experiment(), read_results(): experiment configs as
// `podsim run` takes them, from a file or a dict.

#include <filesystem>

#include <pybind11/stl.h>

#include "base/config.h"
#include "base/error.h"
#include "base/io.h"
#include "experiments/experiment.h"
#include "python/bindings.h"

namespace podsim::python {
namespace {

using namespace pybind11::literals;

// A config argument: a file path (read as `podsim run` reads it) or a dict.
struct ConfigArgument {
  nlohmann::json config;
  std::string path;  // the file, or "<dict>"
};

ConfigArgument ReadConfigArgument(py::handle config, py::handle overrides) {
  ConfigArgument c;
  if (py::isinstance<py::str>(config) ||
      py::isinstance(config, py::module_::import("os").attr("PathLike"))) {
    c.path = py::str(config).cast<std::string>();
    py::gil_scoped_release release;
    c.config = ReadJsonFile(c.path);
  } else {
    c.path = "<dict>";
    c.config = ToJson(config, "config");
  }
  for (const std::string& o : Overrides(overrides)) ApplyOverride(c.config, o);
  return c;
}

py::dict RunExperiment(py::handle config, const std::string& out, py::handle overrides, bool force,
                       bool resume, int jobs) {
  if (jobs < 0) throw ConfigError("jobs: must be >= 0, got " + std::to_string(jobs));
  ConfigArgument c = ReadConfigArgument(config, py::none());
  experiments::RunOptions options;
  options.out_dir = out;
  options.force = force;
  options.resume = resume;
  options.jobs = jobs;
  options.overrides = Overrides(overrides);
  experiments::RunSummary s;
  {
    py::gil_scoped_release release;
    s = experiments::RunExperiment(std::move(c.config), c.path, options);
  }
  return py::dict("name"_a = s.name, "points"_a = s.points(), "ok"_a = s.ok, "oom"_a = s.oom,
                  "failed"_a = s.failed, "invalid"_a = s.invalid, "skipped"_a = s.skipped,
                  "all_failed"_a = s.all_failed(), "out"_a = out);
}

py::dict ReadResults(const std::string& out) {
  const std::filesystem::path dir(out);
  nlohmann::json results;
  std::string status;
  {
    py::gil_scoped_release release;
    results = ReadJsonFile((dir / "results.json").string());
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "status", ec)) {
      status = ReadFile((dir / "status").string());
    }
  }
  py::dict d = FromJson(results);
  // DIR/status: "status: done" and details (report/output_dir.h).
  const std::string first = status.substr(0, status.find('\n'));
  d["run_status"] = first.rfind("status: ", 0) == 0 ? first.substr(8) : "";
  return d;
}

}  // namespace

void BindExperiment(py::module_& m) {
  m.def("experiment_kinds", &experiments::ExperimentKinds,
        "The values an experiment config's \"experiment\" key may take.");
  m.def("run_experiment", &RunExperiment, py::arg("config"), py::arg("out"), py::kw_only(),
        py::arg("overrides") = py::none(), py::arg("force") = false, py::arg("resume") = false,
        py::arg("jobs") = 0,
        R"(Runs an experiment config as `podsim run CONFIG --out OUT` does.

config      a JSON file path or a dict (docs/config.md)
out         the output directory: new or empty (force=True replaces an earlier run's files;
            resume=True continues the sweep that left it, as --resume)
overrides   "PATH=VALUE" strings or a dict, applied to the config in order
jobs        points run at once where they are independent (collective sweeps); 0: one per
            hardware thread (--jobs); results are the same for any value

Writes results.csv, results.json, plots and OUT/status; returns how the points ended:
{name, points, ok, oom, failed, invalid, skipped, all_failed, out}. read_results(out) reads them.)");
  m.def(
      "check_experiment",
      [](py::handle config, py::handle overrides) {
        ConfigArgument c = ReadConfigArgument(config, overrides);
        experiments::CheckExperimentConfig(c.config, c.path);
      },
      py::arg("config"), py::kw_only(), py::arg("overrides") = py::none(),
      "Raises the ConfigError run_experiment would raise before its first point; runs nothing.");
  m.def("read_results", &ReadResults, py::arg("out"),
        "OUT/results.json as a dict, with run_status from OUT/status (running, done, failed).");
}

}  // namespace podsim::python
