// podsim ir verify|print|cost|eval|convert|import: the IR tools.

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/config.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "cli/commands.h"
#include "cli/module_io.h"
#include "cli/options.h"
#include "ir/cost.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "report/cost_report.h"

namespace podsim::cli {

namespace {

constexpr const char* kIrUsage =
    "usage: podsim ir <verb> FILE [options]\n\n"
    "verbs:\n"
    "  verify FILE            parse and verify; prints a one-line summary\n"
    "  print FILE             print in canonical IR text\n"
    "  cost FILE              per-instruction cost table and totals\n"
    "  eval FILE              evaluate with the reference interpreter\n"
    "  convert IN OUT         convert between IR text (.hlo) and protobuf (.pb)\n"
    "  import FILE [-o OUT]   read real XLA HLO text (JAX, TensorFlow, PyTorch/XLA) into\n"
    "                         podsim's IR; prints a summary, writes OUT (.hlo or .pb)\n\n"
    "Every verb reads XLA HLO text as well as podsim's own, recognised by its content.\n";

// Parses `args` against `desc` with `positional` names; prints help and returns false on
// --help.
bool ParseArgs(const Args& args, po::options_description& desc,
               const std::vector<std::string>& positional, po::variables_map& vm,
               const std::string& usage) {
  desc.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  for (const std::string& p : positional) pos.add(p.c_str(), 1);
  if (ParseOptions(args, desc, pos, vm)) return true;
  std::cout << usage << "\n" << desc;
  return false;
}

int Verify(const Args& args) {
  po::options_description desc("podsim ir verify options");
  desc.add_options()("file", po::value<std::string>()->required(), "IR text or .pb module");
  po::variables_map vm;
  if (!ParseArgs(args, desc, {"file"}, vm, "usage: podsim ir verify FILE")) return 0;
  auto m = LoadModule(vm["file"].as<std::string>());
  std::cout << "ok: module " << m->name() << ", " << m->computations().size()
            << " computation(s), " << m->InstructionCount() << " instruction(s)\n";
  return 0;
}

int Print(const Args& args) {
  po::options_description desc("podsim ir print options");
  desc.add_options()("file", po::value<std::string>()->required(), "IR text or .pb module");
  po::variables_map vm;
  if (!ParseArgs(args, desc, {"file"}, vm, "usage: podsim ir print FILE")) return 0;
  std::cout << ir::PrintModule(*LoadModule(vm["file"].as<std::string>()));
  return 0;
}

int Cost(const Args& args) {
  po::options_description desc("podsim ir cost options");
  desc.add_options()("file", po::value<std::string>()->required(), "IR text or .pb module")(
      "partitions", po::value<int64_t>()->default_value(1),
      "partition count for collectives over all partitions")("json", "print JSON");
  po::variables_map vm;
  if (!ParseArgs(args, desc, {"file"}, vm, "usage: podsim ir cost FILE [--json]")) return 0;
  auto m = LoadModule(vm["file"].as<std::string>());
  ir::ModuleCost cost = ir::AnalyzeCost(*m, vm["partitions"].as<int64_t>());
  if (vm.count("json")) {
    std::cout << report::ModuleCostJson(*m, cost).dump(2) << "\n";
    return 0;
  }
  std::printf("%-28s %-20s %-8s %10s %10s %10s %10s %10s\n", "instruction", "opcode", "unit",
              "flops", "transc", "read B", "written B", "network B");
  for (const auto& comp : m->computations()) {
    if (comp.get() != m->entry()) std::printf("-- %s (per iteration)\n", comp->name().c_str());
    else std::printf("-- %s\n", comp->name().c_str());
    for (const auto& i : comp->instructions()) {
      const ir::Cost& c = cost.per_instruction.at(i.get());
      std::printf("%-28s %-20s %-8s %10s %10s %10s %10s %10s\n", ("%" + i->name).c_str(),
                  std::string(ir::OpcodeName(i->opcode)).c_str(),
                  std::string(ir::UnitName(c.unit)).c_str(), FormatSi(c.flops).c_str(),
                  FormatSi(c.transcendentals).c_str(), FormatSi(c.bytes_read).c_str(),
                  FormatSi(c.bytes_written).c_str(), FormatSi(c.network_bytes).c_str());
    }
  }
  const ir::Cost& t = cost.total;
  std::printf("%-28s %-20s %-8s %10s %10s %10s %10s %10s\n", "total", "", "",
              FormatSi(t.flops).c_str(), FormatSi(t.transcendentals).c_str(),
              FormatSi(t.bytes_read).c_str(), FormatSi(t.bytes_written).c_str(),
              FormatSi(t.network_bytes).c_str());
  return 0;
}

int Eval(const Args& args) {
  po::options_description desc("podsim ir eval options");
  desc.add_options()("file", po::value<std::string>()->required(), "IR text or .pb module")(
      "inputs", po::value<std::string>(),
      "JSON file: an object keyed by parameter name (or \"0\", \"1\", ...) with nested arrays")(
      "seed", po::value<uint64_t>()->default_value(0),
      "seed for random inputs (used for parameters --inputs does not give)")(
      "partitions", po::value<int64_t>()->default_value(1),
      "run this many partitions in lockstep (SPMD programs with collectives)");
  po::variables_map vm;
  if (!ParseArgs(args, desc, {"file"}, vm,
                 "usage: podsim ir eval FILE [--inputs in.json] [--seed N] [--partitions D]")) {
    return 0;
  }
  auto m = LoadModule(vm["file"].as<std::string>());
  std::vector<ir::Literal> inputs = ir::RandomArguments(*m, vm["seed"].as<uint64_t>());
  std::vector<ir::Instruction*> params = m->entry()->parameters();
  if (vm.count("inputs")) {
    const std::string path = vm["inputs"].as<std::string>();
    const nlohmann::json j = ParseJson(ReadFile(path), path);
    if (!j.is_object()) throw Error(path + ": expected a JSON object keyed by parameter name");
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool found = false;
      for (size_t k = 0; k < params.size(); ++k) {
        if (it.key() == params[k]->name || it.key() == std::to_string(k)) {
          inputs[k] = LiteralFromJson(it.value(), params[k]->shape, path + ": " + it.key());
          found = true;
        }
      }
      if (!found) throw Error(path + ": no parameter named '" + it.key() + "'");
    }
  }
  const int64_t d = vm["partitions"].as<int64_t>();
  if (d < 1) throw Error("--partitions must be >= 1");
  nlohmann::json out;
  if (d == 1) {
    out["result"] = LiteralToJson(ir::Interpret(*m, inputs));
  } else {
    std::vector<std::vector<ir::Literal>> per(d, inputs);
    std::vector<ir::Literal> results = ir::InterpretSpmd(*m, per, d);
    nlohmann::json arr = nlohmann::json::array();
    for (const ir::Literal& r : results) arr.push_back(LiteralToJson(r));
    out["results"] = arr;
  }
  std::cout << out.dump() << "\n";
  return 0;
}

int Convert(const Args& args) {
  po::options_description desc("podsim ir convert options");
  desc.add_options()("in", po::value<std::string>()->required(), "input (.hlo text or .pb)")(
      "out", po::value<std::string>()->required(), "output (.hlo text or .pb)");
  po::variables_map vm;
  if (!ParseArgs(args, desc, {"in", "out"}, vm, "usage: podsim ir convert IN OUT")) return 0;
  auto m = LoadModule(vm["in"].as<std::string>());
  SaveModule(*m, vm["out"].as<std::string>());
  std::cout << "wrote " << vm["out"].as<std::string>() << "\n";
  return 0;
}

int Import(const Args& args) {
  po::options_description desc("podsim ir import options");
  desc.add_options()("file", po::value<std::string>()->required(), "XLA HLO text module")(
      "out,o", po::value<std::string>(), "write the module here (.hlo podsim text, or .pb)");
  AddImportOptions(desc);
  po::variables_map vm;
  if (!ParseArgs(args, desc, {"file"}, vm,
                 "usage: podsim ir import FILE [-o OUT] [--trip-count NAME=N ...] "
                 "[--custom-call-flops TARGET=F ...]")) {
    return 0;
  }
  const std::string path = vm["file"].as<std::string>();
  const ir::HloImportOptions options = ImportOptions(vm);
  ir::HloImport imported = ImportXlaHlo(ReadFile(path), path, options);
  const ir::Module& m = *imported.module;
  std::cout << "ok: module " << m.name() << ", " << m.computations().size()
            << " computation(s), " << m.InstructionCount() << " instruction(s), "
            << (imported.partitioned
                    ? "an SPMD program for " + std::to_string(imported.num_partitions) +
                          " partition(s)"
                    : std::string("a global program"))
            << ", " << imported.warnings.size() << " warning(s)\n";
  if (vm.count("out")) {
    SaveModule(m, vm["out"].as<std::string>());
    std::cout << "wrote " << vm["out"].as<std::string>() << "\n";
  }
  return 0;
}

}  // namespace

int IrCommand(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kIrUsage;
    return args.empty() ? 2 : 0;
  }
  const std::map<std::string, int (*)(const Args&)> verbs = {
      {"verify", Verify}, {"print", Print}, {"cost", Cost}, {"eval", Eval}, {"convert", Convert},
      {"import", Import}};
  auto it = verbs.find(args[0]);
  if (it == verbs.end()) throw Error("unknown verb 'ir " + args[0] + "'\n" + kIrUsage);
  try {
    return it->second(Args(args.begin() + 1, args.end()));
  } catch (const po::error& e) {
    throw Error(std::string(e.what()) + " (see podsim ir " + args[0] + " --help)");
  }
}

}  // namespace podsim::cli
