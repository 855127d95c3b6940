// podsim.collective(): one collective on a pod, as `podsim collective --json` runs it, with the
// per-link bytes and utilisation, per-step times and, on request, every transfer.

#include <pybind11/stl.h>

#include "base/config.h"
#include "base/error.h"
#include "experiments/collective_run.h"
#include "python/bindings.h"
#include "sim/collectives/explain.h"
#include "topologies/load.h"

namespace podsim::python {
namespace {

using namespace pybind11::literals;

py::list StepTimes(const sim::TimingResult& t) {
  py::list steps;
  for (const sim::StepTiming& s : t.steps) {
    const bool ran = s.transfers > 0;
    steps.append(py::dict("step"_a = s.step, "start_us"_a = ran ? s.start.micros() : 0.0,
                          "end_us"_a = ran ? s.end.micros() : 0.0, "transfers"_a = s.transfers,
                          "bytes"_a = s.bytes));
  }
  return steps;
}

py::list Transfers(const sim::Schedule& schedule, const sim::TimingResult& t) {
  py::list out;
  for (size_t i = 0; i < schedule.transfers.size(); ++i) {
    const sim::ChunkTransfer& c = schedule.transfers[i];
    out.append(py::dict("step"_a = c.step, "src"_a = c.src, "dst"_a = c.dst,
                        "bytes"_a = schedule.Bytes(c), "elements"_a = c.elements,
                        "src_offset"_a = c.src_offset, "dst_offset"_a = c.dst_offset,
                        "local"_a = c.local(),
                        "reduce"_a = c.reduce, "src_buffer"_a = sim::BufferName(c.src_buffer),
                        "dst_buffer"_a = sim::BufferName(c.dst_buffer),
                        "start_us"_a = t.transfer_start[i].micros(),
                        "end_us"_a = t.transfer_end[i].micros()));
  }
  return out;
}

py::dict Collective(const std::string& op, py::handle topology, py::handle bytes,
                    const std::string& algorithm, const std::string& network, int64_t chunks,
                    int64_t partitions, py::handle groups, py::handle pairs, int64_t dtype_bytes,
                    double overhead_us, py::handle network_options, py::handle overrides,
                    bool transfers, bool explain) {
  PyTopology topo_arg = TopologyArgument(topology);
  nlohmann::json config = {{"topology", topo_arg.config},
                           {"op", op},
                           {"bytes", ToJson(bytes, "bytes")},
                           {"dtype_bytes", dtype_bytes},
                           {"algorithm", algorithm},
                           {"network", network},
                           {"chunks", chunks},
                           {"partitions", partitions},
                           {"overhead_us", overhead_us}};
  if (!groups.is_none()) config["replica_groups"] = ToJson(groups, "groups");
  if (!pairs.is_none()) config["source_target_pairs"] = ToJson(pairs, "pairs");
  if (!network_options.is_none()) {
    config["network_options"] = ToJson(network_options, "network_options");
  }
  for (const std::string& o : Overrides(overrides)) ApplyOverride(config, o);
  const experiments::CollectiveRunConfig run =
      experiments::CollectiveRunConfig::FromJson(config, "");

  experiments::CollectiveRunResult r;
  std::string explanation;
  std::vector<double> utilization;
  {
    py::gil_scoped_release release;
    // An override of a topology value builds the topology again.
    std::shared_ptr<const topo::Topology> t = topo_arg.topology;
    if (run.topology != topo_arg.config) t = topo::LoadTopology(run.topology, "topology");
    r = experiments::RunCollective(run, *t);
    if (transfers) experiments::RecordTransferTimes(run, *t, r);
    if (explain) experiments::EnsureSchedule(run, *t, r);
    if (explain) explanation = sim::ExplainSchedule(r.schedule, *t, &r.timing);
    const double seconds = r.timing.total.seconds();
    utilization.resize(r.timing.link_bytes.size(), 0.0);
    for (size_t l = 0; l < utilization.size() && seconds > 0; ++l) {
      utilization[l] = r.timing.link_bytes[l] /
                       (t->links()[l].bandwidth.value * seconds);
    }
  }
  py::dict out = FromJson(experiments::CollectiveRunJson(run, r));
  out["link_bytes"] = FloatArray(r.timing.link_bytes);
  out["link_utilization"] = FloatArray(utilization);
  out["step_times"] = StepTimes(r.timing);
  if (transfers) out["transfers"] = Transfers(r.schedule, r.timing);
  if (explain) out["explain"] = explanation;
  return out;
}

}  // namespace

void BindCollective(py::module_& m) {
  m.def("collective", &Collective, py::arg("op"), py::arg("topology"),
        py::arg("bytes") = "8MiB", py::kw_only(), py::arg("algorithm") = "default",
        py::arg("network") = "flow", py::arg("chunks") = 1, py::arg("partitions") = 0,
        py::arg("groups") = py::none(), py::arg("pairs") = py::none(),
        py::arg("dtype_bytes") = 4, py::arg("overhead_us") = 0.0,
        py::arg("network_options") = py::none(), py::arg("overrides") = py::none(),
        py::arg("transfers") = false, py::arg("explain") = false,
        R"(Times one collective on a pod, as `podsim collective --json` does.

op          all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute
topology    a podsim.Topology, preset name, JSON file path or dict
bytes       per-partition payload: an int or "8MiB", "32MB", ...
algorithm   "default", "best" (time every one that applies, keep the fastest, list them under
            "candidates") or a name: ring, ring-bidir, torus, direct, dim-staged
network     flow (links shared max-min fairly), packet (packets queued link by link) or
            analytic (links take turns; fastest)
chunks      pipelining depth of ring / torus pieces
partitions  one group of cores 0..N-1 (0: every core); or groups=[[0,1],[2,3]]
pairs       collective-permute pairs [[0,1],[1,0]]
overrides   "PATH=VALUE" strings or a dict, applied to the config (topology.link_bandwidth=2e11)
transfers   also return every transfer with its start and end time
explain     also return the step-by-step text of --explain

Returns the --json dict (time_us, algorithm, bandwidths, busiest link, lower bounds, config) plus
link_bytes and link_utilization (NumPy arrays by link id when NumPy is installed, else lists)
and step_times (one dict per step).)");
}

}  // namespace podsim::python
