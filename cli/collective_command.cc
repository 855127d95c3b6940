// podsim collective: time one collective on a pod; --explain walks through its steps.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/config.h"
#include "base/error.h"
#include "base/io.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "experiments/collective_run.h"
#include "report/chrome_trace.h"
#include "sim/collectives/explain.h"
#include "topologies/load.h"

namespace podsim::cli {


int CollectiveCommand(const Args& args) {
  po::options_description desc("podsim collective options");
  desc.add_options()("help,h", "show this help")(
      "op", po::value<std::string>()->required(),
      "all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute")(
      "bytes", po::value<std::string>()->default_value("8MiB"),
      "per-partition payload: 8MiB, 32MB, 4096 ...")(
      "topology", po::value<std::string>()->required(), "preset name or JSON file")(
      "algorithm", po::value<std::string>()->default_value("default"),
      "ring | ring-bidir | torus | direct | dim-staged | halving-doubling | tree (all-reduce) | "
      "default (all-to-all and permute: direct; else the fastest of torus, ring-bidir, ring, "
      "halving-doubling and direct on the flow model, or by the alpha-beta closed form beyond "
      "256 members) | best (time every one that applies, report all, keep the fastest)")(
      "network", po::value<std::string>()->default_value("flow"),
      "flow: links shared max-min fairly by the transfers in flight (contention, no packets); "
      "packet: packets queued link by link (most detailed, slowest); analytic: transfers that "
      "start together take turns on the links they share, each ending when its busiest link "
      "has sent its bytes, plus its latency (contention-aware, fastest)")(
      "chunks", po::value<int64_t>()->default_value(1),
      "pipelining depth of ring/torus pieces: steps overlap under the analytic and packet "
      "models; the flow model shares a step's sub-chunks, so they do not")(
      "partitions", po::value<int64_t>()->default_value(0),
      "one group of cores 0..N-1 (default: every core)")("groups", po::value<std::string>(),
                                                         "replica groups as JSON: [[0,1],[2,3]]")(
      "pairs", po::value<std::string>(), "collective-permute pairs as JSON: [[0,1],[1,0]]")(
      "overhead-us", po::value<double>()->default_value(0), "fixed cost per collective")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a value: --set topology.link_bandwidth=2e11 (repeatable)")(
      "trace", po::value<std::string>(), "write a Chrome trace, one track per link")(
      "json", "print one JSON object")("explain", "print each step (small pods)");
  po::variables_map vm;
  if (!ParseOptions(args, desc, {}, vm)) {
    std::cout << "usage: podsim collective --op OP --topology NAME [--bytes 8MiB] ...\n\n" << desc;
    return 0;
  }

  nlohmann::json config = {{"topology", vm["topology"].as<std::string>()},
                           {"op", vm["op"].as<std::string>()},
                           {"bytes", vm["bytes"].as<std::string>()},
                           {"algorithm", vm["algorithm"].as<std::string>()},
                           {"network", vm["network"].as<std::string>()},
                           {"chunks", vm["chunks"].as<int64_t>()},
                           {"partitions", vm["partitions"].as<int64_t>()},
                           {"overhead_us", vm["overhead-us"].as<double>()}};
  auto parse_json_flag = [&](const char* flag, const char* key) {
    if (!vm.count(flag)) return;
    config[key] = ParseJson(vm[flag].as<std::string>(), std::string("--") + flag);
  };
  parse_json_flag("groups", "replica_groups");
  parse_json_flag("pairs", "source_target_pairs");
  // Overrides address the resolved topology object, so expand the preset first.
  config["topology"] = topo::ExpandTopologyConfig(config["topology"], "topology");
  if (vm.count("set")) {
    for (const std::string& o : vm["set"].as<std::vector<std::string>>()) {
      ApplyOverride(config, o);
    }
  }
  experiments::CollectiveRunConfig run = experiments::CollectiveRunConfig::FromJson(config, "");
  std::unique_ptr<topo::Topology> topology;
  const bool want_trace = vm.count("trace") > 0;
  experiments::CollectiveRunResult r = experiments::RunCollective(run, &topology);

  std::string explanation;
  if (vm.count("explain")) {
    if (topology->num_cores() > 64) {
      std::cerr << "note: --explain is meant for small pods; showing a summary per step\n";
    }
    experiments::EnsureSchedule(run, *topology, r);
    explanation = sim::ExplainSchedule(r.schedule, *topology, &r.timing);
  }
  if (vm.count("json")) {
    // Standard output stays one JSON object: the explanation is one of its strings.
    nlohmann::json out = experiments::CollectiveRunJson(run, r);
    if (vm.count("explain")) out["explain"] = explanation;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("%s of %lld B per partition over %lld partitions of %s\n",
                sim::CollectiveKindName(run.kind), static_cast<long long>(run.bytes),
                static_cast<long long>(r.partitions), r.topology_name.c_str());
    std::printf("  algorithm            %s (%d steps, %lld network transfers)\n",
                r.algorithm.c_str(), r.schedule.num_steps,
                static_cast<long long>(r.timing.network_transfers));
    for (const experiments::AlgorithmCandidate& c : r.candidates) {
      if (c.error.empty()) {
        std::printf("  tried %-14s %.3f us%s\n", c.algorithm.c_str(), c.time_us,
                    c.algorithm == r.algorithm ? "  (fastest)" : "");
      } else {
        std::printf("  tried %-14s does not apply: %s\n", c.algorithm.c_str(), c.error.c_str());
      }
    }
    std::printf("  network model        %s\n", run.network.c_str());
    std::printf("  time                 %.3f us\n", r.time_us);
    std::printf("  algorithm bandwidth  %.3f GB/s\n", r.algorithm_bandwidth / 1e9);
    std::printf("  bus bandwidth        %.3f GB/s\n", r.bus_bandwidth / 1e9);
    if (r.timing.busiest_link >= 0) {
      std::printf("  busiest link         %s: %.3f MB, %.1f%% utilised\n",
                  sim::DescribeLink(*topology, r.timing.busiest_link).c_str(),
                  r.timing.busiest_link_bytes / 1e6, 100 * r.timing.busiest_link_utilization);
    }
    // Each bound the collective cannot beat, and how far the simulated time is above the
    // largest (sim/collectives/bounds.h).
    std::string bounds;
    for (const auto& [name, value] : {std::pair{"injection", r.bounds.injection_us},
                                      std::pair{"bisection", r.bounds.bisection_us},
                                      std::pair{"busiest link (this schedule)", r.bounds.busiest_link_us},
                                      std::pair{"latency", r.bounds.latency_us}}) {
      if (!value) continue;
      char part[96];
      std::snprintf(part, sizeof(part), "%s%s %.3f us", bounds.empty() ? "" : ", ", name, *value);
      bounds += part;
    }
    if (!bounds.empty()) {
      std::printf("  lower bounds         %s\n", bounds.c_str());
      const double largest = r.bounds.max_us();
      if (largest > 0) {
        // The bounds leave out the fixed overhead; so does the time compared with them.
        std::printf("  time / largest bound %.2fx%s\n", (r.time_us - run.overhead_us) / largest,
                    run.overhead_us > 0 ? " (time less the overhead)" : "");
      }
    }
    if (!explanation.empty()) std::cout << "\n" << explanation;
  }
  if (want_trace) {
    experiments::RecordTransferTimes(run, *topology, r);
    const std::string path = vm["trace"].as<std::string>();
    WriteFileAtomic(path,
                    report::CollectiveLinkTrace(r.schedule, r.timing, *topology, r.topology_name,
                                                500000).dump() + "\n");
    std::cerr << "wrote " << path << "\n";
  }
  return 0;
}

}  // namespace podsim::cli
