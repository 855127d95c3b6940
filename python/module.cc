// The Python module `podsim` (built as podsim._podsim; python/podsim/__init__.py re-exports it).

#include <pybind11/stl.h>

#include <pybind11_json/pybind11_json.hpp>

#include "base/error.h"
#include "base/resources.h"
#include "base/version.h"
#include "python/bindings.h"

namespace podsim::python {

using namespace pybind11::literals;

nlohmann::json ToJson(py::handle value, const std::string& what) {
  try {
    return pyjson::to_json(value);
  } catch (const std::runtime_error& e) {
    throw py::type_error(what + ": " + e.what() + " (expected dict, list, str, number, bool or None)");
  }
}

py::object FromJson(const nlohmann::json& value) { return pyjson::from_json(value); }

py::object FloatArray(const std::vector<double>& values) {
  py::module_ numpy;
  try {
    numpy = py::module_::import("numpy");
  } catch (const py::error_already_set&) {
    return py::cast(values);
  }
  return numpy.attr("array")(py::cast(values), "dtype"_a = "float64");
}

std::vector<std::string> Overrides(py::handle value) {
  std::vector<std::string> out;
  if (value.is_none()) return out;
  if (py::isinstance<py::dict>(value)) {
    for (const auto& [path, v] : value.cast<py::dict>()) {
      out.push_back(py::str(path).cast<std::string>() + "=" + ToJson(v, "overrides").dump());
    }
    return out;
  }
  if (py::isinstance<py::str>(value)) {
    throw py::type_error("overrides: expected a list of \"PATH=VALUE\" strings or a dict, got a str");
  }
  for (py::handle item : value) {
    if (!py::isinstance<py::str>(item)) {
      throw py::type_error("overrides: expected \"PATH=VALUE\" strings, got " +
                           py::repr(item).cast<std::string>());
    }
    out.push_back(item.cast<std::string>());
  }
  return out;
}

}  // namespace podsim::python

PYBIND11_MODULE(_podsim, m) {
  namespace py = pybind11;
  using namespace podsim::python;
  m.doc() = "podsim: a discrete-event simulator of SPMD programs on TPU-style pods";
  m.attr("__version__") = podsim::Version();

  // ConfigError is registered after Error, so that pybind11 tries it first.
  static py::exception<podsim::Error> error(m, "Error");
  static py::exception<podsim::ConfigError> config_error(m, "ConfigError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const podsim::ConfigError& e) {
      config_error(e.what());
    } catch (const podsim::Error& e) {
      error(e.what());
    }
  });
  error.doc() = "An error podsim's CLI would print: it names the JSON path, file:line:col, or "
                "instruction at fault.";
  config_error.doc() = "A config value that is missing, of the wrong type or out of range.";

  m.def("set_data_dir", &podsim::SetEmbedderDataDir, py::arg("path"),
        "Where the presets and reference figures are (the package sets it on import; "
        "$PODSIM_DATA_DIR wins over it).");
  m.def("data_dir", &podsim::DataDir, "The data directory in use.");

  BindTopology(m);
  BindCollective(m);
  BindProgram(m);
  BindExperiment(m);
}
