#include "experiments/collective_run.h"

#include <cctype>
#include <cmath>

#include "ir/error.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/analytic.h"
#include "topologies/json_reader.h"
#include "topologies/load.h"

namespace podsim::experiments {

using topo::Limit;

CollectiveRunConfig CollectiveRunConfig::FromJson(const nlohmann::json& json,
                                                  const std::string& path) {
  topo::JsonReader r(json, path);
  CollectiveRunConfig c;
  c.topology = topo::ExpandTopologyConfig(r.Value("topology"), r.PathOf("topology"));
  c.kind = sim::ParseCollectiveKind(r.String("op"), r.PathOf("op"));
  if (r.Has("bytes")) {
    const nlohmann::json& b = r.Value("bytes");
    c.bytes = b.is_string() ? ParseBytes(b.get<std::string>(), r.PathOf("bytes"))
                            : topo::AsInt(b, r.PathOf("bytes"), Limit::Positive());
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
    const nlohmann::json& groups = topo::AsArray(r.Value("replica_groups"), p);
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string gp = topo::IndexPath(p, g);
      std::vector<int64_t> group;
      for (size_t k = 0; k < topo::AsArray(groups[g], gp).size(); ++k) {
        group.push_back(topo::AsInt(groups[g][k], topo::IndexPath(gp, k), Limit::NonNegative()));
      }
      c.replica_groups.push_back(group);
    }
  }
  if (r.Has("source_target_pairs")) {
    const std::string p = r.PathOf("source_target_pairs");
    const nlohmann::json& pairs = topo::AsArray(r.Value("source_target_pairs"), p);
    for (size_t k = 0; k < pairs.size(); ++k) {
      const std::string pp = topo::IndexPath(p, k);
      if (topo::AsArray(pairs[k], pp).size() != 2) topo::FailAt(pp, "must be [source, target]");
      c.source_target_pairs.emplace_back(
          topo::AsInt(pairs[k][0], topo::IndexPath(pp, 0), Limit::NonNegative()),
          topo::AsInt(pairs[k][1], topo::IndexPath(pp, 1), Limit::NonNegative()));
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

int64_t ParseBytes(const std::string& text, const std::string& what) {
  size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) ||
                               text[pos] == '.' || text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
  }
  std::string number = text.substr(0, pos), unit = text.substr(pos);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "KB" || unit == "kB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(number, &used);
    if (used != number.size()) scale = 0;
  } catch (const std::exception&) {
    scale = 0;
  }
  double bytes = v * scale;
  if (scale == 0 || !(bytes >= 1) || bytes > 1e15 || bytes != std::floor(bytes)) {
    throw Error(what + ": '" + text +
                "' is not a whole positive byte count (e.g. 8MiB, 32MB, 4096)");
  }
  return static_cast<int64_t>(bytes);
}

double BusFactor(sim::CollectiveKind kind, int64_t n) {
  if (n <= 1) return 0;
  const double f = static_cast<double>(n - 1) / static_cast<double>(n);
  switch (kind) {
    case sim::CollectiveKind::kAllReduce: return 2 * f;
    case sim::CollectiveKind::kCollectivePermute: return 1;
    default: return f;
  }
}

CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  std::unique_ptr<topo::Topology>* topology_out) {
  std::unique_ptr<topo::Topology> topology = topo::LoadTopology(config.topology, "topology");
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
    if (config.partitions > topology->num_cores()) {
      throw Error("partitions: " + std::to_string(config.partitions) + " exceeds the " +
                  std::to_string(topology->num_cores()) + " cores of " + topology->name());
    }
    std::vector<int64_t> group(config.partitions);
    for (int64_t p = 0; p < config.partitions; ++p) group[p] = p;
    spec.replica_groups = {group};
  }
  sim::AlgorithmOptions algo;
  algo.algorithm = config.algorithm == "default" ? "" : config.algorithm;
  algo.chunks = static_cast<int>(config.chunks);

  CollectiveRunResult out;
  out.topology_name = topology->name();
  out.algorithm = algo.algorithm.empty() ? sim::DefaultAlgorithm(spec, *topology) : algo.algorithm;
  out.schedule = sim::BuildSchedule(spec, *topology, algo);
  auto groups = sim::ResolveReplicaGroups(spec, topology->num_cores());
  out.partitions = groups.empty() ? static_cast<int64_t>(spec.source_target_pairs.size())
                                  : static_cast<int64_t>(groups[0].size());
  std::unique_ptr<sim::NetworkModel> network =
      sim::MakeNetworkModel(config.network, *topology, config.network_options);
  sim::TimingOptions timing;
  timing.fixed_overhead = sim::Time::FromMicros(config.overhead_us);
  out.timing = sim::RunTiming(out.schedule, *topology, *network, timing);
  out.time_us = out.timing.total.micros();
  const double seconds = out.timing.total.seconds();
  out.algorithm_bandwidth = seconds > 0 ? static_cast<double>(config.bytes) / seconds : 0;
  out.bus_bandwidth = out.algorithm_bandwidth * BusFactor(config.kind, out.partitions);
  if (config.kind != sim::CollectiveKind::kCollectivePermute) {
    sim::AnalyticInput in = sim::AnalyticInputFor(spec, *topology, out.algorithm);
    in.fixed_overhead_s = config.overhead_us * 1e-6;
    out.analytic_us = sim::EstimateScalingBook(in).seconds * 1e6;
  }
  if (topology_out) *topology_out = std::move(topology);
  return out;
}

}  // namespace podsim::experiments
