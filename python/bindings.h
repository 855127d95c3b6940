#pragma once
// The pieces of the Python module `podsim` (python/module.cc defines it; docs/python.md is the
// user's reference). Each Bind* adds one group of classes and functions; the helpers convert
// between Python values and the library's JSON configs.
//
// Conventions: a config is what the CLI and the JSON files take (a dict here), results are
// dicts with the CLI's --json keys, errors are podsim.Error / podsim.ConfigError whose message
// is the CLI's (the JSON path, the file:line:col or the instruction at fault). The GIL is
// released while the library runs; Python values are converted before and after.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include "topologies/topology.h"

namespace podsim::python {

namespace py = pybind11;

// A Python value (dict, list, str, number, bool, None) as JSON; a float that is integral stays a
// float. Anything else is a TypeError naming `what`.
nlohmann::json ToJson(py::handle value, const std::string& what);
// JSON as the Python value (dicts, lists, str, int, float, bool, None).
py::object FromJson(const nlohmann::json& value);

// A list of doubles as a NumPy array when NumPy imports, else a Python list.
py::object FloatArray(const std::vector<double>& values);

// Overrides as the library takes them ("PATH=VALUE" strings, applied in order) from None, a
// list of such strings, or a dict {PATH: value} (values of any JSON type, in the dict's order).
std::vector<std::string> Overrides(py::handle value);

// A topology and the config it was built from (overrides applied).
struct PyTopology {
  std::shared_ptr<const topo::Topology> topology;
  nlohmann::json config;
};

// A topology given to a function: a podsim.Topology, a preset name, a JSON file path or a dict.
PyTopology TopologyArgument(py::handle value);

void BindTopology(py::module_& m);
void BindCollective(py::module_& m);
void BindProgram(py::module_& m);
void BindExperiment(py::module_& m);

}  // namespace podsim::python
