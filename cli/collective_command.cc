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
      "ring | ring-bidir | torus | direct | dim-staged | default")(
      "network", po::value<std::string>()->default_value("flow"), "flow | packet | analytic")(
      "chunks", po::value<int64_t>()->default_value(1), "pipelining depth of ring/torus pieces")(
      "partitions", po::value<int64_t>()->default_value(0),
      "one group of cores 0..N-1 (default: every core)")(
      "groups", po::value<std::string>(), "replica groups as JSON: [[0,1],[2,3]]")(
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

  if (vm.count("json")) {
    std::cout << experiments::CollectiveRunJson(run, r).dump(2) << "\n";
  } else {
    std::printf("%s of %lld B per partition over %lld partitions of %s\n",
                sim::CollectiveKindName(run.kind), static_cast<long long>(run.bytes),
                static_cast<long long>(r.partitions), r.topology_name.c_str());
    std::printf("  algorithm            %s (%d steps, %lld network transfers)\n",
                r.algorithm.c_str(), r.schedule.num_steps,
                static_cast<long long>(r.timing.network_transfers));
    std::printf("  network model        %s\n", run.network.c_str());
    std::printf("  time                 %.3f us\n", r.time_us);
    std::printf("  algorithm bandwidth  %.3f GB/s\n", r.algorithm_bandwidth / 1e9);
    std::printf("  bus bandwidth        %.3f GB/s\n", r.bus_bandwidth / 1e9);
    if (r.timing.busiest_link >= 0) {
      std::printf("  busiest link         %s: %.3f MB, %.1f%% utilised\n",
                  sim::DescribeLink(*topology, r.timing.busiest_link).c_str(),
                  r.timing.busiest_link_bytes / 1e6, 100 * r.timing.busiest_link_utilization);
    }
    if (r.analytic_us > 0) std::printf("  scaling-book formula %.3f us\n", r.analytic_us);
  }
  if (vm.count("explain")) {
    if (topology->num_cores() > 64) {
      std::cerr << "note: --explain is meant for small pods; showing a summary per step\n";
    }
    std::cout << "\n" << sim::ExplainSchedule(r.schedule, *topology, &r.timing);
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
