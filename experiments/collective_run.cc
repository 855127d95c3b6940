#include "experiments/collective_run.h"

#include <cctype>
#include <cmath>

#include "base/config.h"
#include "base/error.h"
#include "base/version.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/symmetric_timing.h"
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
  nlohmann::json j = {{"time_us", time_us},
                      {"algorithm", algorithm},
                      {"partitions", partitions},
                      {"topology", topology_name},
                      {"algorithm_bandwidth_Bps", algorithm_bandwidth},
                      {"bus_bandwidth_Bps", bus_bandwidth},
                      {"max_link_utilization", timing.max_link_utilization},
                      {"network_transfers", timing.network_transfers},
                      {"bounds", bounds.ToJson()}};
  if (!candidates.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const AlgorithmCandidate& c : candidates) {
      list.push_back(c.error.empty() ? nlohmann::json{{"algorithm", c.algorithm}, {"time_us", c.time_us}}
                                     : nlohmann::json{{"algorithm", c.algorithm}, {"error", c.error}});
    }
    j["candidates"] = std::move(list);
  }
  return j;
}

namespace {

// The collective of `config` on `topology`, checked as XLA checks it.
sim::CollectiveSpec SpecOf(const CollectiveRunConfig& config, const topo::Topology& topology) {
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
  // As XLA requires of a collective's replica groups (and the IR verifier of podsim's): one
  // size, so that "over N partitions" and the bus bandwidth mean one thing. The schedule
  // builders take any sizes (their tests use uneven ones).
  for (size_t g = 1; g < spec.replica_groups.size(); ++g) {
    if (spec.replica_groups[g].size() != spec.replica_groups[0].size()) {
      throw ConfigError("replica_groups[" + std::to_string(g) + "]: " +
                        std::to_string(spec.replica_groups[g].size()) +
                        " partitions, but replica_groups[0] has " +
                        std::to_string(spec.replica_groups[0].size()) +
                        ": the replica groups must all have the same size");
    }
  }
  if (config.kind == sim::CollectiveKind::kCollectivePermute && spec.source_target_pairs.empty()) {
    throw ConfigError("source_target_pairs: a collective-permute needs at least one (source, "
                      "target) pair, e.g. [[0,1],[1,0]] (--pairs); with none it moves nothing");
  }
  return spec;
}

}  // namespace

CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  std::unique_ptr<topo::Topology>* topology_out) {
  std::unique_ptr<topo::Topology> topology = topo::LoadTopology(config.topology, "topology");
  CollectiveRunResult out = RunCollective(config, *topology);
  if (topology_out) *topology_out = std::move(topology);
  return out;
}

CollectiveRunResult RunCollective(const CollectiveRunConfig& config,
                                  const topo::Topology& topology) {
  const sim::CollectiveSpec spec = SpecOf(config, topology);
  sim::TimingOptions timing;
  timing.fixed_overhead = Time::FromMicros(config.overhead_us);
  // Builds algorithm `requested` ("": the default) and times it alone on an idle network.
  auto build_and_time = [&](const std::string& requested, CollectiveRunResult& into) {
    // Resolved once: on small groups the default times its candidates.
    const std::string name = requested.empty() || requested == "default"
                                 ? sim::DefaultAlgorithm(spec, topology)
                                 : requested;
    // A direct all-to-all or the torus algorithm over a whole symmetric pod: timed from chip
    // 0's transfers, the schedule built only if asked for (EnsureSchedule).
    std::optional<sim::SymmetricTiming> fast =
        sim::TimeSymmetricAllToAll(spec, topology, name, config.network, timing);
    if (!fast) {
      fast = sim::TimeSymmetricTorus(spec, topology, name, static_cast<int>(config.chunks),
                                     config.network, timing);
    }
    if (fast) {
      into.timing = std::move(fast->timing);
      into.algorithm = name;
      into.schedule = sim::Schedule();
      into.schedule.kind = spec.kind;
      into.schedule.algorithm = into.algorithm;
      into.schedule.num_partitions = topology.num_cores();
      into.schedule.num_steps = static_cast<int>(into.timing.steps.size());
      into.schedule_built = false;
      return;
    }
    sim::AlgorithmOptions algo;
    algo.algorithm = name;
    algo.chunks = static_cast<int>(config.chunks);
    into.schedule = sim::BuildSchedule(spec, topology, algo);
    into.algorithm = into.schedule.algorithm;
    std::unique_ptr<sim::NetworkModel> network =
        sim::MakeNetworkModel(config.network, topology, config.network_options);
    into.timing = sim::RunTiming(into.schedule, topology, *network, timing);
  };

  CollectiveRunResult out;
  out.topology_name = topology.name();
  if (config.algorithm == "best") {
    std::string reasons;
    for (const std::string& name : sim::AlgorithmNames(config.kind)) {
      CollectiveRunResult trial;
      try {
        build_and_time(name, trial);
      } catch (const Error& e) {  // it does not apply to these groups on this topology
        out.candidates.push_back({name, 0, e.what()});
        reasons += (reasons.empty() ? "" : "; ") + name + ": " + e.what();
        continue;
      }
      out.candidates.push_back({name, trial.timing.total.micros(), ""});
      if (out.algorithm.empty() || trial.timing.total < out.timing.total) {
        out.algorithm = trial.algorithm;
        out.schedule = std::move(trial.schedule);
        out.schedule_built = trial.schedule_built;
        out.timing = std::move(trial.timing);
      }
    }
    if (out.algorithm.empty()) throw Error("algorithm: best: no algorithm applies (" + reasons + ")");
  } else {
    build_and_time(config.algorithm == "default" ? "" : config.algorithm, out);
  }
  auto groups = sim::ResolveReplicaGroups(spec, topology.num_cores());
  out.partitions = groups.empty() ? static_cast<int64_t>(spec.source_target_pairs.size())
                                  : static_cast<int64_t>(groups[0].size());
  out.time_us = out.timing.total.micros();
  const double seconds = out.timing.total.seconds();
  out.algorithm_bandwidth = seconds > 0 ? static_cast<double>(config.bytes) / seconds : 0;
  out.bus_bandwidth = out.algorithm_bandwidth * sim::BusBandwidthFactor(config.kind, out.partitions);
  out.bounds = sim::ComputeBounds(spec, topology, out.timing.link_bytes);
  return out;
}

nlohmann::json CollectiveRunJson(const CollectiveRunConfig& config,
                                 const CollectiveRunResult& result) {
  nlohmann::json out = result.ToJson();
  StampVersion(out);
  out["network"] = config.network;
  out["op"] = sim::CollectiveKindName(config.kind);
  out["bytes"] = config.bytes;
  out["busiest_link"] = result.timing.busiest_link;
  out["busiest_link_bytes"] = result.timing.busiest_link_bytes;
  out["steps"] = result.schedule.num_steps;
  out["config"] = config.ToJson();
  return out;
}

void EnsureSchedule(const CollectiveRunConfig& config, const topo::Topology& topology,
                    CollectiveRunResult& result) {
  if (result.schedule_built) return;
  sim::CollectiveSpec spec = SpecOf(config, topology);
  sim::AlgorithmOptions algo;
  algo.algorithm = result.algorithm;
  algo.chunks = static_cast<int>(config.chunks);
  result.schedule = sim::BuildSchedule(spec, topology, algo);
  result.schedule_built = true;
}

void RecordTransferTimes(const CollectiveRunConfig& config, const topo::Topology& topology,
                         CollectiveRunResult& result) {
  EnsureSchedule(config, topology, result);
  std::unique_ptr<sim::NetworkModel> network =
      sim::MakeNetworkModel(config.network, topology, config.network_options);
  sim::TimingOptions t;
  t.fixed_overhead = Time::FromMicros(config.overhead_us);
  t.record_transfers = true;
  result.timing = sim::RunTiming(result.schedule, topology, *network, t);
}

}  // namespace podsim::experiments
