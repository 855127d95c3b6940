// podsim.Module (load, parse, build, print, cost, partition) and podsim.simulate().

#include <pybind11/stl.h>

#include "base/error.h"
#include "cli/module_io.h"
#include "ir/cost.h"
#include "ir/text.h"
#include "models/moe_transformer.h"
#include "partitioner/sharding_util.h"
#include "partitioner/spmd_partitioner.h"
#include "pipeline/simulate.h"
#include "python/bindings.h"
#include "report/chrome_trace.h"
#include "report/cost_report.h"
#include "report/run_report.h"
#include "sim/device/device.h"

namespace podsim::python {
namespace {

using namespace pybind11::literals;

// Immutable once built: every operation that changes a module works on a clone, so one Module
// may be simulated from several threads at once.
struct PyModule {
  std::shared_ptr<const ir::Module> module;
};

PyModule Wrap(std::unique_ptr<ir::Module> m) { return PyModule{std::move(m)}; }

// A mesh as the CLI takes it: 128, "8x16", "x=8,y=16" or [8, 16]; its device count.
int64_t MeshDevices(py::handle mesh) {
  if (py::isinstance<py::int_>(mesh)) {
    const int64_t n = mesh.cast<int64_t>();
    if (n < 1) throw ConfigError("mesh: must be >= 1, got " + std::to_string(n));
    return n;
  }
  if (py::isinstance<py::str>(mesh)) {
    return partitioner::DeviceMesh::Parse(mesh.cast<std::string>()).num_devices();
  }
  std::string text;
  for (py::handle axis : mesh) text += (text.empty() ? "" : "x") + py::str(axis).cast<std::string>();
  return partitioner::DeviceMesh::Parse(text).num_devices();
}

PyModule MoeLayerPair(int64_t num_devices, py::handle model) {
  models::MoeLayerConfig config = models::PaperMoeConfig(num_devices);
  if (!model.is_none()) {
    config = models::MoeLayerConfig::FromJson(ToJson(model, "model"), "model", config);
  }
  models::ValidateMoeConfig(config);
  py::gil_scoped_release release;
  return Wrap(models::BuildMoeLayerPair(config));
}

PyModule Partition(const PyModule& m, py::handle mesh) {
  const int64_t n = MeshDevices(mesh);
  py::gil_scoped_release release;
  std::unique_ptr<ir::Module> copy = m.module->Clone();
  return Wrap(std::move(partitioner::PropagateAndPartition(*copy, n).module));
}

py::dict Simulate(const PyModule& m, py::handle topology, py::handle mesh, py::handle device,
                  py::handle network, bool functional, int64_t seed, bool fusion,
                  bool async_collectives, py::handle trace, py::handle overrides) {
  sim::SimOptions defaults;
  if (!device.is_none()) defaults.device = sim::DeviceSpecFromConfig(ToJson(device, "device"), "device");
  if (!network.is_none()) defaults.network = network.cast<std::string>();
  if (!mesh.is_none()) defaults.num_partitions = MeshDevices(mesh);
  defaults.functional = functional;
  defaults.functional_seed = static_cast<uint64_t>(seed);
  defaults.fusion = fusion;
  defaults.async_collectives = async_collectives;
  const bool want_trace = !trace.is_none();
  const std::string trace_path = want_trace ? trace.cast<std::string>() : "";
  defaults.trace.enabled = want_trace;
  const nlohmann::json topology_config =
      py::isinstance<PyTopology>(topology) ? topology.cast<PyTopology>().config
                                           : ToJson(topology, "topology");
  const nlohmann::json config =
      pipeline::SimulationConfig(defaults, topology_config, Overrides(overrides),
                                 /*device_given=*/!device.is_none());

  nlohmann::json results;
  std::vector<std::string> notes;
  std::string equivalence;
  bool ok = true;
  {
    py::gil_scoped_release release;
    const pipeline::Simulation run = pipeline::Simulate(m.module->Clone(), config);
    results = report::ResultsToJson(run.result);
    notes = run.notes;
    ok = run.ok();
    if (run.result.functional) {
      results["check"] = {
          {"ok", ok},
          {"max_error_vs_interpreter", run.result.functional->max_error_vs_interpreter},
          {"vs_unpartitioned", run.equivalence ? run.equivalence->ToString() : ""}};
    }
    if (want_trace) report::WriteChromeTrace(run.result.trace, trace_path);
    results["partitioned"] = run.partitioned.has_value();
    results["config"] = config;
  }
  py::dict out = FromJson(results);
  out["notes"] = notes;
  return out;
}

}  // namespace

void BindProgram(py::module_& m) {
  m.def("device_presets", [] { return sim::DevicePresets().Names(); },
        "The names of the device presets.");

  py::class_<PyModule>(m, "Module", R"(An IR module (docs/ir.md). Build one with Module.load,
Module.parse or Module.moe_layer_pair; it does not change afterwards.)")
      .def_static(
          "load",
          [](const std::string& path) {
            py::gil_scoped_release release;
            return Wrap(cli::LoadModule(path));
          },
          py::arg("path"), "Reads and verifies IR text (.hlo, .txt) or binary protobuf (.pb).")
      .def_static(
          "parse",
          [](const std::string& text, const std::string& filename) {
            py::gil_scoped_release release;
            return Wrap(ir::ParseModule(text, filename));
          },
          py::arg("text"), py::arg("filename") = "<string>",
          "Parses and verifies IR text; errors name filename:line:col.")
      .def_static("moe_layer_pair", &MoeLayerPair, py::arg("num_devices"),
                  py::arg("model") = py::none(),
                  R"(The GShard MoE layer and its Transformer layer (Figure 8), annotated for
num_devices partitions with G = E = num_devices. model: sizes to change, as in experiment
configs ({"tokens_per_group": 1024, "dtype": "bf16", ...}).)")
      .def_property_readonly("name", [](const PyModule& p) { return p.module->name(); })
      .def_property_readonly("instruction_count",
                             [](const PyModule& p) { return p.module->InstructionCount(); })
      .def("text", [](const PyModule& p) { return ir::PrintModule(*p.module); },
           "The module as IR text.")
      .def(
          "save",
          [](const PyModule& p, const std::string& path) { cli::SaveModule(*p.module, path); },
          py::arg("path"), "Writes IR text, or binary protobuf when path ends in .pb.")
      .def(
          "cost",
          [](const PyModule& p, int64_t partitions) {
            nlohmann::json j;
            {
              py::gil_scoped_release release;
              j = report::ModuleCostJson(*p.module, ir::AnalyzeCost(*p.module, partitions));
            }
            return FromJson(j);
          },
          py::arg("partitions") = 1,
          "The cost analysis as `podsim ir cost --json` prints it (totals and per instruction).")
      .def("partition", &Partition, py::arg("mesh"),
           "Propagates the shardings and lowers to one SPMD program for the mesh (128, \"8x16\" "
           "or [8, 16]); returns the SPMD module.")
      .def("__str__", [](const PyModule& p) { return ir::PrintModule(*p.module); })
      .def("__repr__", [](const PyModule& p) {
        return "<podsim.Module " + p.module->name() + ": " +
               std::to_string(p.module->InstructionCount()) + " instructions>";
      });

  m.def("simulate", &Simulate, py::arg("module"), py::arg("topology"), py::kw_only(),
        py::arg("mesh") = py::none(), py::arg("device") = py::none(),
        py::arg("network") = py::none(), py::arg("functional") = false, py::arg("seed") = 1,
        py::arg("fusion") = true, py::arg("async_collectives") = true,
        py::arg("trace") = py::none(), py::arg("overrides") = py::none(),
        R"(Runs a module on every device of a pod, as `podsim simulate --json` does.

module      a podsim.Module: an SPMD program, or a global annotated module (partitioned here)
topology    a podsim.Topology, preset name, JSON file path or dict
mesh        partitions: 128, "8x16" or [8, 16] (default: every core)
device      a device preset name, JSON file path or dict (default: the one the topology
            preset names for its chip generation, else tpu-v3-core)
network     analytic, flow (default) or packet
functional  carry real tensors and check them against the interpreter (small pods); seed
            picks the random arguments
trace       a path: write a Chrome trace there
overrides   "PATH=VALUE" strings or a dict: {"device.hbm_bandwidth": 9e11,
            "topology.link_bandwidth": 2e11, "collective_overhead_us": 25}

Returns the results.json dict (step_time_us, categories, collectives, links, memory, ...) plus
"notes", "partitioned", the resolved "config" and, when functional, "check".)");
}

}  // namespace podsim::python
