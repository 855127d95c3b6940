// podsim check FILE --mesh 2x4 [--seed N]: partitions an annotated module and compares the SPMD
// program on the mesh's partitions with the unpartitioned module, on random arguments.

#include <iostream>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/module_io.h"
#include "cli/options.h"
#include "partitioner/equivalence.h"
#include "partitioner/propagation.h"
#include "partitioner/sharding_util.h"

namespace podsim::cli {

namespace {

constexpr const char* kCheckUsage =
    "usage: podsim check FILE --mesh 2x4 [--seed N] [--tolerance-factor F] [--no-poison]\n\n"
    "Propagates FILE's shardings, lowers it to SPMD for the mesh, runs both the unpartitioned\n"
    "module and the SPMD program (every partition in lockstep) on random arguments from the\n"
    "seed, and prints, per output, the largest absolute error and the tolerance it is held to\n"
    "(docs/partitioner.md: 0 for integers, a bound from the split reductions for floats).\n"
    "Exits 1 when an output is outside its tolerance.\n";

}  // namespace

int CheckCommand(const Args& args) {
  po::options_description desc("podsim check options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>()->required(),
                                                 "annotated module (IR text or .pb)")(
      "mesh", po::value<std::string>()->required(), "device mesh: 2x4 or x=2,y=4")(
      "seed", po::value<uint64_t>()->default_value(0), "seed of the random arguments")(
      "tolerance-factor", po::value<double>(), "multiplier of the float tolerance (default 8)")(
      "no-poison", "fill shard padding with zeros instead of NaN / sentinels");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!ParseOptions(args, desc, pos, vm)) {
    std::cout << kCheckUsage << "\n" << desc;
    return 0;
  }
  const partitioner::DeviceMesh mesh = partitioner::DeviceMesh::Parse(vm["mesh"].as<std::string>());
  std::unique_ptr<ir::Module> module = LoadModule(vm["file"].as<std::string>());
  partitioner::PropagateShardings(*module, mesh.num_devices());  // validates the annotations
  partitioner::PartitionOptions options;
  options.num_partitions = mesh.num_devices();
  partitioner::EquivalenceOptions eq;
  if (vm.count("tolerance-factor")) eq.tolerance_factor = vm["tolerance-factor"].as<double>();
  eq.poison_padding = vm.count("no-poison") == 0;
  const uint64_t seed = vm["seed"].as<uint64_t>();
  const partitioner::EquivalenceReport report =
      partitioner::CheckEquivalence(*module, options, seed, eq);
  std::cout << "check " << module->name() << " on mesh " << mesh.ToString() << " ("
            << mesh.num_devices() << " partitions), seed " << seed << ":\n"
            << report.ToString();
  int64_t bad = 0;
  for (const auto& o : report.outputs) bad += o.ok() ? 0 : 1;
  if (bad == 0) {
    std::cout << "ok: " << report.outputs.size() << " output(s) within tolerance\n";
    return 0;
  }
  std::cout << "MISMATCH: " << bad << " of " << report.outputs.size()
            << " output(s) outside tolerance\n";
  return 1;
}

}  // namespace podsim::cli
