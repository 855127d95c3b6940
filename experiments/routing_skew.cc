// The "routing_skew" experiment: what a skewed router costs the MoE layer. GShard's top-2
// gating sends each token to two experts and an expert takes at most C tokens of a group
// (C = ceil(capacity_factor x 2S / E)); the rest are dropped (they pass through the residual).
// Here the router's choices follow a configurable distribution over the experts, sampled
// token by token, and each capacity factor gives the fraction of assignments dropped, the
// fraction of tokens dropped by both experts, and the demand on the hottest expert against its
// capacity; the same capacity gives the layer pair's step time (GShard Figure 8's layer pair,
// whose einsums and AllToAlls are sized by C whatever the routing). So the experiment shows the
// price of keeping drops under a target when the routing is skewed.
//
// Config keys:
//   experts, tokens_per_group   E and S (defaults 128 and 2048, the paper's)
//   groups             groups sampled per point (default E: one per expert, as G = E = D)
//   distributions      [{"name": ..., "kind": "uniform" | "zipf" | "hot", "s": Zipf exponent,
//                      "fraction": hot experts' share of the experts, "share": their share of
//                      the routing}, ...]
//   capacity_factors   [0.5, 1, 2, ...]: C = max(1, ceil(factor x 2S / E))
//   second_expert      probability that a token's second expert is dispatched (default 1;
//                      GShard's random routing keeps it with probability min(1, 2 w2))
//   drop_target        the drop rate (of assignments) a capacity must keep under (default 0.01)
//   seed               the router's random stream (default 1)
//   topology, topology_overrides, sim, layer   the layer pair whose step time each capacity
//                      gives (layer: the keys of experiments/gshard_fig8.json's "model")
//
// Sampling: top-1 expert e1 ~ p; top-2 e2 ~ p restricted to the other experts (inverse CDF,
// one 53-bit uniform from mt19937_64 per draw: the same numbers on every platform). In a
// group, top-1 choices take an expert's slots in token order, then top-2 choices (Algorithm 1).

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "models/moe_transformer.h"
#include "pipeline/simulate.h"
#include "report/plot.h"
#include "report/progress.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

struct Distribution {
  std::string name, kind;
  double s = 1, fraction = 0.1, share = 0.5;
};

struct SkewConfig {
  std::string name = "routing_skew";
  int64_t experts = 128, tokens = 2048, groups = 0;
  std::vector<Distribution> distributions;
  std::vector<double> factors;
  double second_expert = 1, drop_target = 0.01;
  uint64_t seed = 1;
  std::string topology = "tpu-v3-128";
  nlohmann::json topology_overrides = nlohmann::json::object();
  nlohmann::json sim = nlohmann::json::object();
  nlohmann::json layer = nlohmann::json::object();

  static SkewConfig FromJson(const nlohmann::json& j) {
    SkewConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    c.experts = r.Int("experts", c.experts, Limit::Between(2, 1 << 20));
    c.tokens = r.Int("tokens_per_group", c.tokens, Limit::Between(1, 1 << 24));
    c.groups = r.Int("groups", c.experts, Limit::Between(1, 1 << 20));
    if (static_cast<double>(c.groups) * static_cast<double>(c.tokens) > 1e9) {
      FailAt(r.PathOf("groups"), "groups x tokens_per_group above 1e9 tokens: too many to sample");
    }
    const nlohmann::json& ds = r.Value("distributions");
    if (!ds.is_array() || ds.empty())
      FailAt(r.PathOf("distributions"), "must be a non-empty array");
    for (size_t k = 0; k < ds.size(); ++k) {
      JsonReader d(ds[k], IndexPath(r.PathOf("distributions"), k));
      Distribution x;
      x.kind = d.Choice("kind", {"uniform", "zipf", "hot"});
      if (x.kind == "zipf") x.s = d.Double("s", Limit::Between(0, 20));
      if (x.kind == "hot") {
        x.fraction = d.Double("fraction", Limit::Between(0, 1));
        x.share = d.Double("share", Limit::Between(0, 1));
        if (!(x.fraction > 0 && x.fraction < 1)) d.Fail("fraction", "must be in (0, 1)");
      }
      x.name = d.String("name", x.kind);
      d.Finish();
      c.distributions.push_back(x);
    }
    const nlohmann::json& fs = r.Value("capacity_factors");
    if (!fs.is_array() || fs.empty())
      FailAt(r.PathOf("capacity_factors"), "must be a non-empty array");
    for (size_t k = 0; k < fs.size(); ++k) {
      if (!fs[k].is_number() || !(fs[k].get<double>() > 0) || fs[k].get<double>() > 1e6) {
        FailAt(IndexPath(r.PathOf("capacity_factors"), k), "must be a number in (0, 1e6]");
      }
      c.factors.push_back(fs[k].get<double>());
    }
    c.second_expert = r.Double("second_expert", c.second_expert, Limit::Between(0, 1));
    c.drop_target = r.Double("drop_target", c.drop_target, Limit::Between(0, 1));
    c.seed = static_cast<uint64_t>(r.Int("seed", 1, Limit::NonNegative()));
    c.topology = r.String("topology", c.topology);
    if (r.Has("topology_overrides")) c.topology_overrides = r.Value("topology_overrides");
    if (r.Has("sim")) c.sim = r.Value("sim");
    if (r.Has("layer")) c.layer = r.Value("layer");
    r.Finish();
    // The layer pair must be buildable on the topology: errors now.
    const nlohmann::json tj = PointTopologyJson(c.topology, c.topology_overrides, "");
    const int64_t cores = topo::TopologyConfig::FromJson(tj, "topology").NumCores();
    PointSimOptions(c.sim, tj, "", cores);
    models::ValidateMoeConfig(c.Layer(cores, 1));
    return c;
  }

  int64_t Capacity(double factor) const {
    const double c =
        std::ceil(factor * 2.0 * static_cast<double>(tokens) / static_cast<double>(experts));
    return std::max<int64_t>(1, static_cast<int64_t>(std::min(c, 1e15)));
  }
  models::MoeLayerConfig Layer(int64_t cores, int64_t capacity) const {
    models::MoeLayerConfig m =
        models::MoeLayerConfig::FromJson(layer, "layer", models::PaperMoeConfig(cores));
    m.num_experts = experts;
    m.tokens_per_group = tokens;
    m.capacity = capacity;
    return m;
  }
};

// The routing probabilities over the experts.
std::vector<double> Probabilities(const Distribution& d, int64_t e) {
  std::vector<double> p(static_cast<size_t>(e), 1.0);
  if (d.kind == "zipf") {
    for (int64_t k = 0; k < e; ++k)
      p[static_cast<size_t>(k)] = std::pow(static_cast<double>(k + 1), -d.s);
  } else if (d.kind == "hot") {
    const int64_t hot = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(d.fraction * static_cast<double>(e))), 1, e - 1);
    for (int64_t k = 0; k < e; ++k) {
      p[static_cast<size_t>(k)] = k < hot ? d.share / static_cast<double>(hot)
                                          : (1 - d.share) / static_cast<double>(e - hot);
    }
  }
  double total = 0;
  for (double x : p) total += x;
  for (double& x : p) x /= total;
  return p;
}

struct Routed {
  double drop_rate = 0;       // dropped assignments / assignments
  double tokens_dropped = 0;  // tokens both of whose experts dropped them / tokens
  double hottest_demand = 0;  // the largest (group, expert) demand / capacity
};

// Samples the router over `groups` groups and applies capacity `cap`.
Routed Route(const SkewConfig& c, const std::vector<double>& p, int64_t cap, uint64_t seed) {
  const size_t e = p.size();
  std::vector<double> cdf(e);
  double acc = 0;
  for (size_t k = 0; k < e; ++k) cdf[k] = acc += p[k];
  cdf.back() = 1.0;
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto pick = [&](double u) {
    return static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
  };
  int64_t assignments = 0, dropped = 0, tokens_dropped = 0;
  double hottest = 0;
  std::vector<int64_t> top1(static_cast<size_t>(c.tokens)), top2(static_cast<size_t>(c.tokens));
  std::vector<int64_t> fill(e), demand(e);
  for (int64_t g = 0; g < c.groups; ++g) {
    std::fill(fill.begin(), fill.end(), 0);
    std::fill(demand.begin(), demand.end(), 0);
    for (int64_t t = 0; t < c.tokens; ++t) {
      const size_t e1 = std::min(pick(uniform()), e - 1);
      // e2 from p without e1: a uniform over the remaining mass, stepped over e1's interval.
      const double below = e1 > 0 ? cdf[e1 - 1] : 0.0;
      double u = uniform() * (1 - p[e1]);
      if (u >= below) u += p[e1];
      size_t e2 = std::min(pick(u), e - 1);
      if (e2 == e1) e2 = e1 + 1 < e ? e1 + 1 : e1 - 1;  // rounding at the interval's edge
      const bool second = uniform() < c.second_expert;
      top1[static_cast<size_t>(t)] = static_cast<int64_t>(e1);
      top2[static_cast<size_t>(t)] = second ? static_cast<int64_t>(e2) : -1;
      ++demand[e1];
      if (second) ++demand[e2];
    }
    std::vector<char> kept1(static_cast<size_t>(c.tokens));
    for (int64_t t = 0; t < c.tokens; ++t) {  // top-1 choices first, in token order
      const size_t x = static_cast<size_t>(top1[static_cast<size_t>(t)]);
      kept1[static_cast<size_t>(t)] = fill[x] < cap;
      fill[x] += kept1[static_cast<size_t>(t)];
      ++assignments;
      dropped += !kept1[static_cast<size_t>(t)];
    }
    for (int64_t t = 0; t < c.tokens; ++t) {
      const int64_t y = top2[static_cast<size_t>(t)];
      bool kept2 = false;
      if (y >= 0) {
        kept2 = fill[static_cast<size_t>(y)] < cap;
        fill[static_cast<size_t>(y)] += kept2;
        ++assignments;
        dropped += !kept2;
      }
      tokens_dropped += !kept1[static_cast<size_t>(t)] && !kept2;
    }
    for (size_t x = 0; x < e; ++x) {
      hottest = std::max(hottest, static_cast<double>(demand[x]) / static_cast<double>(cap));
    }
  }
  Routed r;
  r.drop_rate =
      assignments > 0 ? static_cast<double>(dropped) / static_cast<double>(assignments) : 0;
  r.tokens_dropped = static_cast<double>(tokens_dropped) /
                     (static_cast<double>(c.groups) * static_cast<double>(c.tokens));
  r.hottest_demand = hottest;
  return r;
}

const std::vector<std::string> kSkewColumns = {"distribution", "capacity_factor", "capacity",
                                               "drop_rate",    "tokens_dropped",  "hottest_demand",
                                               "step_ms",      "status"};

}  // namespace

void CheckRoutingSkew(const nlohmann::json& config) { SkewConfig::FromJson(config); }

RunSummary RunRoutingSkew(const ExperimentContext& ctx) {
  const SkewConfig c = SkewConfig::FromJson(ctx.config);
  RunSummary summary;
  summary.name = c.name;
  // The step time of each capacity (the same for every distribution).
  const nlohmann::json tj = PointTopologyJson(c.topology, c.topology_overrides, "");
  const std::unique_ptr<topo::Topology> topology = topo::LoadTopology(tj, "topology");
  const int64_t cores = topology->num_cores();
  const sim::SimOptions options = PointSimOptions(c.sim, tj, "", cores);
  std::map<int64_t, std::pair<std::string, double>> step;  // capacity -> (status, ms)
  std::map<int64_t, std::string> errors;
  std::vector<int64_t> capacities;
  for (double f : c.factors) capacities.push_back(c.Capacity(f));
  std::sort(capacities.begin(), capacities.end());
  capacities.erase(std::unique(capacities.begin(), capacities.end()), capacities.end());
  report::Progress progress(
      c.name, static_cast<int64_t>(capacities.size() + c.factors.size() * c.distributions.size()));
  for (const int64_t cap : capacities) {
    try {
      const sim::RunResult r =
          pipeline::SimulateMoeLayerPair(c.Layer(cores, cap), *topology, options);
      step[cap] = {PointStatus(r), r.step_time.micros() * 1e-3};
    } catch (const Error& e) {
      step[cap] = {kPointFailed, 0};
      errors[cap] = e.what();
      progress.Note(c.name + ": capacity " + std::to_string(cap) + " failed: " + e.what());
    }
    progress.Step("capacity " + std::to_string(cap));
  }
  CsvTable table(kSkewColumns);
  nlohmann::json dists = nlohmann::json::array();
  for (size_t d = 0; d < c.distributions.size(); ++d) {
    const Distribution& dist = c.distributions[d];
    const std::vector<double> p = Probabilities(dist, c.experts);
    nlohmann::json rows = nlohmann::json::array();
    nlohmann::json meets = nullptr;
    for (size_t i = 0; i < c.factors.size(); ++i) {
      const double f = c.factors[i];
      const int64_t cap = c.Capacity(f);
      // One stream per (distribution, factor): a point does not depend on the others.
      const Routed r = Route(c, p, cap, c.seed * 1000003 + d * 1009 + i);
      const auto& [status, ms] = step.at(cap);
      CountPoint(summary, status);
      table.AddRow({dist.name, CsvNumber(f), std::to_string(cap), FormatFixed(r.drop_rate, 5),
                    FormatFixed(r.tokens_dropped, 5), FormatFixed(r.hottest_demand, 3),
                    status == kPointOk ? FormatFixed(ms, 3) : "", status});
      nlohmann::json row = {{"capacity_factor", f},
                            {"capacity", cap},
                            {"drop_rate", r.drop_rate},
                            {"tokens_dropped", r.tokens_dropped},
                            {"hottest_demand", r.hottest_demand},
                            {"status", status}};
      if (status == kPointOk) row["step_ms"] = ms;
      if (errors.count(cap)) row["error"] = errors.at(cap);
      rows.push_back(row);
      if (meets.is_null() && r.drop_rate <= c.drop_target) meets = row;
      progress.Step(dist.name + " x" + CsvNumber(f));
    }
    dists.push_back({{"name", dist.name},
                     {"kind", dist.kind},
                     {"probabilities_top",
                      std::vector<double>(p.begin(), p.begin() + std::min<size_t>(p.size(), 8))},
                     {"points", rows},
                     {"meets_drop_target", meets}});
    if (meets.is_null()) {
      progress.Note(c.name + ": " + dist.name + ": no capacity factor keeps drops under " +
                    CsvNumber(c.drop_target));
    }
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  nlohmann::json all = nlohmann::json::array();
  for (const nlohmann::json& d : dists) {
    for (nlohmann::json row : d["points"]) {
      row["distribution"] = d["name"];
      all.push_back(std::move(row));
    }
  }
  WriteResultsJson(ctx, {{"experiment", "routing_skew"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"points", all},
                         {"distributions", dists}});
  // Two panels: drop rate and step time against the capacity factor.
  std::ostringstream data, gp;
  for (size_t d = 0; d < dists.size(); ++d) {
    if (d > 0) data << "\n\n";
    for (const auto& row : dists[d]["points"]) {
      data << CsvNumber(row["capacity_factor"].get<double>()) << ' '
           << FormatFixed(row["drop_rate"].get<double>(), 5) << ' '
           << (row.contains("step_ms") ? FormatFixed(row["step_ms"].get<double>(), 3) : "?")
           << '\n';
    }
  }
  gp << report::PaletteLinetypes() << "set multiplot layout 1,2 title '" << c.name << ": "
     << c.experts << " experts, " << c.tokens << " tokens per group, top-2 routing' noenhanced\n"
     << "set xlabel 'capacity factor (C = factor x 2S/E)'\nset grid\nset key top right noenhanced\n"
     << "set ylabel 'assignments dropped'\nset yrange [0:*]\nplot ";
  for (size_t d = 0; d < dists.size(); ++d) {
    gp << (d ? ", " : "") << "'plot.csv' index " << d << " using 1:2 with linespoints pt 7 title '"
       << dists[d]["name"].get<std::string>() << "'";
  }
  gp << ", " << c.drop_target << " with lines dt 2 lc rgb '#444444' title 'drop target'\n"
     << "set ylabel 'layer pair step (ms)'\nset yrange [0:*]\n"
     << "plot 'plot.csv' index 0 using 1:3 with linespoints pt 7 lc rgb '#000000' title "
        "'step time (any routing: sized by C)'\nunset multiplot\n";
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1300, 550);
  return summary;
}

}  // namespace podsim::experiments
