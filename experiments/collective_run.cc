#include "experiments/collective_run.h"

#include <cctype>
#include <cmath>

#include "base/config.h"
#include "base/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/closed_form.h"
#include "topologies/load.h"

namespace podsim::experiments {


CollectiveRunConfig CollectiveRunConfig::FromJson(const nlohmann::json& json,
                                                  const std::string& path) {
  JsonReader r(json, path);
  CollectiveRunConfig c;
  c.topology = topo::ExpandTopologyConfig(r.Value("topology"), r.PathOf("topology"));
  c.kind = sim::ParseCollectiveKind(r.String("op"), r.PathOf("op"));
  if (r.Has("bytes")) {
    const nlohmann::json& b = r.Value("bytes");
    c.bytes = b.is_string() ? ParseBytes(b.get<std::string>(), r.PathOf("bytes"))
                            : AsInt(b, r.PathOf("bytes"), Limit::Positive());
  }
  c.dtype_bytes = r.Int("dtype_bytes", c.dtype_bytes, Limit::Between(1, 8));
  c.algorithm = r.String("algorithm", c.algorithm);
  c.chunks = r.Int("chunks", c.chunks, Limit::Between(1, 1 << 20));
  c.network = r.Choice("network", sim::NetworkModelNames(), c.network);
  if (r.Has("network_options")) {
    c.network_options =
        sim::NetworkOptionsFromJson(r.Value("network_options"), r.PathOf("network_options"));
  }
  c.overhead_us = r.Double("overhead_us", c.overhead_us, Limit::NonNegative());
  c.partitions = r.Int("partitions", c.partitions, Limit::NonNegative());
  if (r.Has("replica_groups")) {
    const std::string p = r.PathOf("replica_groups");
    const nlohmann::json& groups = AsArray(r.Value("replica_groups"), p);
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string gp = IndexPath(p, g);
      std::vector<int64_t> group;
      for (size_t k = 0; k < AsArray(groups[g], gp).size(); ++k) {
        group.push_back(AsInt(groups[g][k], IndexPath(gp, k), Limit::NonNegative()));
      }
      c.replica_groups.push_back(group);
    }
  }
  if (r.Has("source_target_pairs")) {
    const std::string p = r.PathOf("source_target_pairs");
    const nlohmann::json& pairs = AsArray(r.Value("source_target_pairs"), p);
    for (size_t k = 0; k < pairs.size(); ++k) {
      const std::string pp = IndexPath(p, k);
      if (AsArray(pairs[k], pp).size() != 2) FailAt(pp, "must be [source, target]");
      c.source_target_pairs.emplace_back(
          AsInt(pairs[k][0], IndexPath(pp, 0), Limit::NonNegative()),
          AsInt(pairs[k][1], IndexPath(pp, 1), Limit::NonNegative()));
    }
  }
  if (c.bytes % c.dtype_bytes != 0) {
    r.Fail("bytes", "must be a multiple of dtype_bytes (" + std::to_string(c.dtype_bytes) + ")");
  }
  r.Finish();
  return c;
}

nlohmann::json CollectiveRunConfig::ToJson() const {
  nlohmann::json j;
  j["topology"] = topology;
  j["op"] = sim::CollectiveKindName(kind);
  j["bytes"] = bytes;
  j["dtype_bytes"] = dtype_bytes;
  j["algorithm"] = algorithm;
  j["chunks"] = chunks;
  j["network"] = network;
  j["network_options"] = sim::NetworkOptionsToJson(network_options);
  j["overhead_us"] = overhead_us;
  j["partitions"] = partitions;
  if (!replica_groups.empty()) j["replica_groups"] = replica_groups;
  if (!source_target_pairs.empty()) j["source_target_pairs"] = source_target_pairs;
  return j;
}

nlohmann::json CollectiveRunResult::ToJson() const {
  return {{"time_us", time_us},
          {"algorithm", algorithm},
          {"partitions", partitions},
          {"topology", topology_name},
          {"algorithm_bandwidth_Bps", algorithm_bandwidth},
          {"bus_bandwidth_Bps", bus_bandwidth},
          {"max_link_utilization", timing.max_link_utilization},
          {"network_transfers", timing.network_transfers},
          {"scaling_book_us", analytic_us}};
}

CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  std::unique_ptr<topo::Topology>* topology_out) {
  std::unique_ptr<topo::Topology> topology = topo::LoadTopology(config.topology, "topology");
  CollectiveRunResult out = RunCollective(config, *topology);
  if (topology_out) *topology_out = std::move(topology);
  return out;
}

CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  const topo::Topology& topology) {
  sim::CollectiveSpec spec;
  spec.kind = config.kind;
  spec.element_bytes = config.dtype_bytes;
  spec.elements = config.bytes / config.dtype_bytes;
  spec.replica_groups = config.replica_groups;
  spec.source_target_pairs = config.source_target_pairs;
  if (config.partitions > 0) {
    if (!spec.replica_groups.empty()) {
      throw Error("partitions and replica_groups cannot both be given");
    }
    if (config.partitions > topology.num_cores()) {
      throw Error("partitions: " + std::to_string(config.partitions) + " exceeds the " +
                  std::to_string(topology.num_cores()) + " cores of " + topology.name());
    }
    std::vector<int64_t> group(config.partitions);
    for (int64_t p = 0; p < config.partitions; ++p) group[p] = p;
    spec.replica_groups = {group};
  }
  sim::AlgorithmOptions algo;
  algo.algorithm = config.algorithm == "default" ? "" : config.algorithm;
  algo.chunks = static_cast<int>(config.chunks);

  CollectiveRunResult out;
  out.topology_name = topology.name();
  out.algorithm = algo.algorithm.empty() ? sim::DefaultAlgorithm(spec, topology) : algo.algorithm;
  out.schedule = sim::BuildSchedule(spec, topology, algo);
  auto groups = sim::ResolveReplicaGroups(spec, topology.num_cores());
  out.partitions = groups.empty() ? static_cast<int64_t>(spec.source_target_pairs.size())
                                  : static_cast<int64_t>(groups[0].size());
  std::unique_ptr<sim::NetworkModel> network =
      sim::MakeNetworkModel(config.network, topology, config.network_options);
  sim::TimingOptions timing;
  timing.fixed_overhead = Time::FromMicros(config.overhead_us);
  out.timing = sim::RunTiming(out.schedule, topology, *network, timing);
  out.time_us = out.timing.total.micros();
  const double seconds = out.timing.total.seconds();
  out.algorithm_bandwidth = seconds > 0 ? static_cast<double>(config.bytes) / seconds : 0;
  out.bus_bandwidth = out.algorithm_bandwidth * sim::BusBandwidthFactor(config.kind, out.partitions);
  if (config.kind != sim::CollectiveKind::kCollectivePermute) {
    sim::AnalyticInput in = sim::AnalyticInputFor(spec, topology, out.algorithm);
    in.fixed_overhead_s = config.overhead_us * 1e-6;
    out.analytic_us = sim::EstimateScalingBook(in).seconds * 1e6;
  }
  return out;
}

nlohmann::json CollectiveRunJson(const CollectiveRunConfig& config,
                                 const CollectiveRunResult& result) {
  nlohmann::json out = result.ToJson();
  out["network"] = config.network;
  out["op"] = sim::CollectiveKindName(config.kind);
  out["bytes"] = config.bytes;
  out["busiest_link"] = result.timing.busiest_link;
  out["busiest_link_bytes"] = result.timing.busiest_link_bytes;
  out["steps"] = result.schedule.num_steps;
  out["config"] = config.ToJson();
  return out;
}

void RecordTransferTimes(const CollectiveRunConfig& config, const topo::Topology& topology,
                         CollectiveRunResult& result) {
  std::unique_ptr<sim::NetworkModel> network =
      sim::MakeNetworkModel(config.network, topology, config.network_options);
  sim::TimingOptions t;
  t.fixed_overhead = Time::FromMicros(config.overhead_us);
  t.record_transfers = true;
  result.timing = sim::RunTiming(result.schedule, topology, *network, t);
}

}  // namespace podsim::experiments
