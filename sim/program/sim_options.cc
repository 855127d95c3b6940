#include "sim/program/sim_options.h"

#include <algorithm>
#include <cmath>

#include "base/config.h"
#include "base/error.h"
#include "base/format.h"

namespace podsim::sim {


namespace {

// The collective kinds' names (sim/collectives/collective.h), in enum order.
std::vector<std::string> KindNames() {
  std::vector<std::string> names;
  for (CollectiveKind k : kCollectiveKinds) names.emplace_back(CollectiveKindName(k));
  return names;
}

TraceOptions TraceFromJson(const nlohmann::json& json, const std::string& path) {
  JsonReader r(json, path);
  TraceOptions t;
  t.enabled = r.Bool("enabled", t.enabled);
  if (r.Has("devices")) t.devices = r.IntArray("devices", Limit::NonNegative());
  t.max_links = r.Int("max_links", t.max_links, Limit::NonNegative());
  t.max_events = r.Int("max_events", t.max_events, Limit::AtLeast(1));
  r.Finish();
  return t;
}

}  // namespace

SimOptions SimOptions::FromJson(const nlohmann::json& json, const std::string& path) {
  JsonReader r(json, path);
  SimOptions o;
  if (r.Has("device")) o.device = DeviceSpecFromConfig(r.Value("device"), r.PathOf("device"));
  if (r.Has("network")) {
    JsonReader n = r.Object("network");
    std::vector<std::string> models = NetworkModelNames();
    o.network = n.Choice("model", models, o.network);
    if (n.Has("options")) {
      try {
        o.network_options = NetworkOptionsFromJson(n.Value("options"), n.PathOf("options"));
      } catch (const Error& e) {
        throw ConfigError(e.what());
      }
    }
    n.Finish();
  }
  if (r.Has("collectives")) {
    JsonReader c = r.Object("collectives");
    for (const std::string& kind : KindNames()) {
      if (!c.Has(kind)) continue;
      JsonReader a = c.Object(kind);
      AlgorithmOptions alg;
      alg.algorithm = a.String("algorithm", alg.algorithm);
      alg.chunks = static_cast<int>(a.Int("chunks", alg.chunks, Limit::Between(1, 1 << 20)));
      a.Finish();
      o.collective_algorithms[kind] = alg;
    }
    c.Finish();
  }
  o.collective_overhead_us =
      r.Double("collective_overhead_us", o.collective_overhead_us, Limit::NonNegative());
  o.exact_collective_max_transfers = r.Int("exact_collective_max_transfers",
                                           o.exact_collective_max_transfers, Limit::NonNegative());
  o.memoize_collectives = r.Bool("memoize_collectives", o.memoize_collectives);
  o.fusion = r.Bool("fusion", o.fusion);
  o.async_collectives = r.Bool("async_collectives", o.async_collectives);
  o.num_partitions = r.Int("num_partitions", o.num_partitions, Limit::NonNegative());
  o.category_depth = static_cast<int>(r.Int("category_depth", o.category_depth, Limit::Between(1, 64)));
  if (r.Has("stragglers")) {
    const nlohmann::json& s = r.Value("stragglers");
    const std::string spath = r.PathOf("stragglers");
    if (!s.is_object()) FailAt(spath, "must be an object {\"device\": factor}, got " + Brief(s));
    for (const auto& [key, value] : s.items()) {
      const std::string where = JoinPath(spath, key);
      if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos || key.size() > 12) {
        FailAt(where, "the key must be a device number");
      }
      o.stragglers[std::stoll(key)] = AsDouble(value, where, Limit::Positive());
    }
  }
  if (r.Has("trace")) o.trace = TraceFromJson(r.Value("trace"), r.PathOf("trace"));
  o.functional = r.Bool("functional", o.functional);
  o.functional_seed = static_cast<uint64_t>(
      r.Int("functional_seed", static_cast<int64_t>(o.functional_seed), Limit::NonNegative()));
  r.Finish();
  return o;
}

nlohmann::json SimOptions::ToJson() const {
  nlohmann::json j;
  j["device"] = device.ToJson();
  j["network"] = {{"model", network}, {"options", NetworkOptionsToJson(network_options)}};
  nlohmann::json c = nlohmann::json::object();
  for (const auto& [kind, alg] : collective_algorithms) {
    c[kind] = {{"algorithm", alg.algorithm}, {"chunks", alg.chunks}};
  }
  j["collectives"] = c;
  j["collective_overhead_us"] = collective_overhead_us;
  j["exact_collective_max_transfers"] = exact_collective_max_transfers;
  j["memoize_collectives"] = memoize_collectives;
  j["fusion"] = fusion;
  j["async_collectives"] = async_collectives;
  j["num_partitions"] = num_partitions;
  j["category_depth"] = category_depth;
  nlohmann::json s = nlohmann::json::object();
  for (const auto& [d, f] : stragglers) s[std::to_string(d)] = f;
  j["stragglers"] = s;
  j["trace"] = {{"enabled", trace.enabled},
                {"devices", trace.devices},
                {"max_links", trace.max_links},
                {"max_events", trace.max_events}};
  j["functional"] = functional;
  j["functional_seed"] = functional_seed;
  return j;
}

void SimOptions::Validate(const std::string& path) const {
  device.Validate(JoinPath(path, "device"));
  const auto models = NetworkModelNames();
  if (std::find(models.begin(), models.end(), network) == models.end()) {
    FailAt(JoinPath(path, "network.model"),
                 "unknown model '" + network + "' (expected analytic, flow or packet)");
  }
  for (const auto& [kind, alg] : collective_algorithms) {
    const std::string where = JoinPath(JoinPath(path, "collectives"), kind);
    const std::vector<std::string> kinds = KindNames();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      FailAt(where, "unknown collective kind");
    }
    if (alg.chunks < 1) FailAt(where + ".chunks", "must be >= 1, got " + std::to_string(alg.chunks));
  }
  if (!(collective_overhead_us >= 0) || !std::isfinite(collective_overhead_us)) {
    FailAt(JoinPath(path, "collective_overhead_us"),
                 "must be >= 0, got " + FormatG(collective_overhead_us));
  }
  if (exact_collective_max_transfers < 0) {
    FailAt(JoinPath(path, "exact_collective_max_transfers"), "must be >= 0");
  }
  if (num_partitions < 0) FailAt(JoinPath(path, "num_partitions"), "must be >= 0");
  if (category_depth < 1) FailAt(JoinPath(path, "category_depth"), "must be >= 1");
  for (const auto& [d, f] : stragglers) {
    const std::string where = JoinPath(JoinPath(path, "stragglers"), std::to_string(d));
    if (d < 0) FailAt(where, "device must be >= 0");
    if (!(f > 0) || !std::isfinite(f)) FailAt(where, "must be > 0, got " + FormatG(f));
  }
  if (trace.max_links < 0) FailAt(JoinPath(path, "trace.max_links"), "must be >= 0");
  if (trace.max_events < 1) FailAt(JoinPath(path, "trace.max_events"), "must be >= 1");
}

}  // namespace podsim::sim
