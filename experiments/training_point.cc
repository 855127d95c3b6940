#include "experiments/training_point.h"

#include "base/config.h"
#include "base/error.h"
#include "experiments/runners.h"
#include "sim/device/device.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

nlohmann::json TopologyJson(const TrainingPointSpec& spec, const std::string& path) {
  return PointTopologyJson(spec.topology, spec.topology_overrides, path);
}

models::GShardModelConfig Model(const TrainingPointSpec& spec, const std::string& path,
                                int64_t cores) {
  models::GShardModelConfig m =
      models::GShardModelConfig::FromJson(spec.model, path + ".model", {});
  m.layer.num_devices = cores;
  try {
    models::ValidateModelConfig(m);
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    FailAt(path + ".model", e.what());  // the model cannot run on this many cores
  }
  return m;
}

sim::SimOptions Options(const TrainingPointSpec& spec, const nlohmann::json& topology_json,
                        const std::string& path, int64_t cores) {
  return PointSimOptions(spec.sim, topology_json, path, cores);
}

}  // namespace

nlohmann::json PointTopologyJson(const std::string& topology, const nlohmann::json& overrides,
                                 const std::string& path) {
  nlohmann::json t = topo::ExpandTopologyConfig(topology, path + ".topology");
  t.merge_patch(overrides);
  return t;
}

sim::SimOptions PointSimOptions(const nlohmann::json& sim, const nlohmann::json& topology_json,
                                const std::string& path, int64_t cores) {
  sim::SimOptions options = sim::SimOptions::FromJson(sim, path + ".sim");
  if (!sim.contains("device") && topology_json.contains("device")) {
    options.device = sim::DeviceSpecFromConfig(topology_json["device"], path + ".topology.device");
  }
  options.num_partitions = cores;
  options.Validate(path + ".sim");
  return options;
}

nlohmann::json ResolvedTrainingSetup(const nlohmann::json& sim,
                                     const models::OptimizerConfig& optimizer) {
  return {{"sim", sim::SimOptions::FromJson(sim, "sim").ToJson()},
          {"optimizer", optimizer.ToJson()}};
}

void CheckTrainingPoint(const TrainingPointSpec& spec, const std::string& path) {
  const nlohmann::json topology_json = TopologyJson(spec, path);
  const int64_t cores =
      topo::TopologyConfig::FromJson(topology_json, path + ".topology").NumCores();
  Model(spec, path, cores);
  Options(spec, topology_json, path, cores);
}

TrainingPointResult RunTrainingPoint(const TrainingPointSpec& spec, const std::string& path) {
  const nlohmann::json topology_json = TopologyJson(spec, path);
  const std::unique_ptr<topo::Topology> topology =
      topo::LoadTopology(topology_json, path + ".topology");
  TrainingPointResult p;
  p.cores = topology->num_cores();
  p.chips = topology->num_chips();
  p.model = Model(spec, path, p.cores);
  p.options = Options(spec, topology_json, path, p.cores);
  p.run = pipeline::RunTraining(p.model, spec.optimizer, spec.remat, *topology, p.options);
  p.status = PointStatus(p.run.result);
  p.step_s = p.run.result.step_time.micros() * 1e-6;
  p.steps_per_s = 1 / p.step_s;
  p.days = spec.tokens / (static_cast<double>(p.run.batch_tokens) * p.steps_per_s) / 86400;
  p.core_years = static_cast<double>(p.cores) * p.days / 365;
  p.chip_hours = static_cast<double>(p.chips) * p.days * 24;
  p.mfu = p.run.model_flops /
          (static_cast<double>(p.cores) * p.step_s * p.options.device.matrix_bf16.value);
  for (const char* kind : {"weights", "optimizer_state"}) {
    auto it = p.run.memory.at_peak.by_kind.find(kind);
    if (it != p.run.memory.at_peak.by_kind.end()) p.weights_bytes += it->second;
  }
  p.activations_bytes = p.run.memory.peak_bytes - p.weights_bytes;
  return p;
}

}  // namespace podsim::experiments
