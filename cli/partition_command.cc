// podsim partition FILE --mesh 4x2 [--print] [--explain] [--out OUT.hlo]: sharding propagation
// and SPMD lowering of an annotated module.

#include <iostream>
#include <map>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/module_io.h"
#include "cli/options.h"
#include "ir/text.h"
#include "partitioner/sharding_util.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::cli {

namespace {

constexpr const char* kPartitionUsage =
    "usage: podsim partition FILE --mesh 4x2 [--print] [--explain] [--out OUT.hlo]\n\n"
    "Propagates FILE's sharding annotations to every instruction and lowers it to one SPMD\n"
    "program for the mesh's devices. Bad shardings (a dim split into more parts than devices,\n"
    "unknown or repeated devices, contradictory annotations, manual regions whose shapes do not\n"
    "match) are errors naming the instruction. Writes the SPMD module to stdout (--print, the\n"
    "default without --out or --explain) or to OUT (.hlo text or .pb); --explain lists where\n"
    "each collective came from. A one-line summary goes to stderr.\n";

// "2 all-to-all, 1 all-reduce" or "no collectives".
std::string CollectiveSummary(const ir::Module& m) {
  std::map<std::string, int64_t> counts;
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (ir::IsCollective(i->opcode)) ++counts[std::string(ir::OpcodeName(i->opcode))];
    }
  }
  if (counts.empty()) return "no collectives";
  std::string out;
  for (const auto& [name, n] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  return out;
}

}  // namespace

int PartitionCommand(const Args& args) {
  po::options_description desc("podsim partition options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>()->required(),
                                                 "annotated module (IR text or .pb)")(
      "mesh", po::value<std::string>()->required(), "device mesh: 4x2 or x=4,y=2")(
      "print", "print the SPMD module to stdout")("explain",
                                                  "print where each collective came from")(
      "out", po::value<std::string>(), "write the SPMD module here (.hlo text or .pb)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!ParseOptions(args, desc, pos, vm)) {
    std::cout << kPartitionUsage << "\n" << desc;
    return 0;
  }
  const partitioner::DeviceMesh mesh = partitioner::DeviceMesh::Parse(vm["mesh"].as<std::string>());
  std::unique_ptr<ir::Module> module = LoadModule(vm["file"].as<std::string>());
  const int64_t input_instructions = module->InstructionCount();
  const partitioner::PartitionResult result =
      partitioner::PropagateAndPartition(*module, mesh.num_devices());
  std::cerr << "partitioned " << module->name() << " for mesh " << mesh.ToString() << " ("
            << mesh.num_devices() << " partitions): " << input_instructions << " -> "
            << result.module->InstructionCount() << " instructions, "
            << CollectiveSummary(*result.module) << "\n";
  const bool explain = vm.count("explain") > 0;
  if (vm.count("out")) SaveModule(*result.module, vm["out"].as<std::string>());
  if (vm.count("print") || (!vm.count("out") && !explain)) {
    std::cout << ir::PrintModule(*result.module);
  }
  if (explain) std::cout << partitioner::ExplainProvenance(result);
  return 0;
}

}  // namespace podsim::cli
