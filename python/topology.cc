// podsim.Topology: a pod built from a preset, a JSON file or a dict; its description, routes,
// links and mesh mapping.

#include <pybind11/stl.h>

#include "base/error.h"
#include "python/bindings.h"
#include "topologies/describe.h"
#include "topologies/load.h"

namespace podsim::python {
namespace {

PyTopology LoadPyTopology(py::handle spec, py::handle overrides) {
  const nlohmann::json value = ToJson(spec, "topology");
  if (!value.is_string() && !value.is_object()) {
    throw py::type_error("topology: expected a preset name, a JSON file path or a dict");
  }
  const std::vector<std::string> assignments = Overrides(overrides);
  PyTopology t;
  py::gil_scoped_release release;
  t.topology = topo::LoadTopology(value, assignments, &t.config);
  return t;
}

void CheckCores(const topo::Topology& t, const char* what, int64_t src, int64_t dst) {
  for (int64_t core : {src, dst}) {
    if (core < 0 || core >= t.num_cores()) {
      throw ConfigError(std::string(what) + ": core " + std::to_string(core) +
                        " does not exist (topology " + t.name() + " has " +
                        std::to_string(t.num_cores()) + " cores)");
    }
  }
}

}  // namespace

PyTopology TopologyArgument(py::handle value) {
  if (py::isinstance<PyTopology>(value)) return value.cast<PyTopology>();
  return LoadPyTopology(value, py::none());
}

void BindTopology(py::module_& m) {
  m.def("topology_presets", [] { return topo::TopologyPresets().Names(); },
        "The names of the topology presets.");

  py::class_<PyTopology>(m, "Topology", R"(A pod: chips, cores (the partitions) and directed links.

Topology(spec, overrides=None)
  spec       a preset name ("tpu-v3-128", see topology_presets()), a JSON file path, or a dict
             as in docs/config.md ("topology")
  overrides  "topology.PATH=VALUE" strings, or a dict {"topology.link_bandwidth": 2e11}
)")
      .def(py::init(&LoadPyTopology), py::arg("spec"), py::arg("overrides") = py::none())
      .def_property_readonly("name", [](const PyTopology& t) { return t.topology->name(); })
      .def_property_readonly("num_chips",
                             [](const PyTopology& t) { return t.topology->num_chips(); })
      .def_property_readonly("cores_per_chip",
                             [](const PyTopology& t) { return t.topology->cores_per_chip(); })
      .def_property_readonly("num_cores",
                             [](const PyTopology& t) { return t.topology->num_cores(); })
      .def_property_readonly("num_links", [](const PyTopology& t) {
        return static_cast<int64_t>(t.topology->links().size());
      })
      .def_property_readonly(
          "config", [](const PyTopology& t) { return FromJson(t.config); },
          "The config it was built from (preset expanded, overrides applied): a dict that "
          "Topology() takes back.")
      .def("describe", [](const PyTopology& t) { return t.topology->Describe(); },
           "The text `podsim topology NAME` prints.")
      .def(
          "to_dict",
          [](const PyTopology& t, bool links) {
            return FromJson(topo::DescribeJson(*t.topology, links));
          },
          py::arg("links") = false, "`podsim topology NAME --json [--links]` as a dict.")
      .def(
          "links",
          [](const PyTopology& t) {
            return FromJson(topo::DescribeJson(*t.topology, true).at("link_list"));
          },
          "Every directed link as a dict (id, chips, kind, bandwidth, latency, dim, "
          "direction), by link id.")
      .def(
          "route",
          [](const PyTopology& t, int64_t src, int64_t dst) {
            CheckCores(*t.topology, "route", src, dst);
            return FromJson(topo::RouteJson(*t.topology, src, dst));
          },
          py::arg("src"), py::arg("dst"),
          "The route between two cores as `podsim topology --route SRC DST --json` gives it.")
      .def(
          "route_links",
          [](const PyTopology& t, int64_t src, int64_t dst) {
            CheckCores(*t.topology, "route_links", src, dst);
            return t.topology->Route(src, dst);
          },
          py::arg("src"), py::arg("dst"), "The directed link ids from src to dst, in hop order.")
      .def(
          "mesh_mapping",
          [](const PyTopology& t, const std::vector<int64_t>& shape) {
            return FromJson(topo::MeshMappingJson(*t.topology, shape));
          },
          py::arg("shape"), "How a logical device mesh ([8, 16]) maps onto cores and chips.")
      .def("__repr__", [](const PyTopology& t) {
        return "<podsim.Topology " + t.topology->name() + ": " +
               std::to_string(t.topology->num_chips()) + " chips, " +
               std::to_string(t.topology->num_cores()) + " cores>";
      });
}

}  // namespace podsim::python
