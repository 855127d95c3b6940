// The podsim binary: dispatches to sub-commands.

#include <algorithm>
#include <exception>
#include <functional>
#include <new>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options/errors.hpp>

#include "base/error.h"
#include "base/version.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "experiments/distributed.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  std::function<int(const podsim::cli::Args&)> run;
};

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"ir", "verify, print, cost, evaluate and convert IR modules", podsim::cli::IrCommand},
      {"topology", "describe a pod topology (preset or JSON file)", podsim::cli::TopologyCommand},
      {"collective", "time one collective on a pod", podsim::cli::CollectiveCommand},
      {"run", "run an experiment config and write results", podsim::cli::RunCommand},
      {"partition", "propagate shardings and lower a module to SPMD",
       podsim::cli::PartitionCommand},
      {"check", "compare a module's SPMD form with it numerically", podsim::cli::CheckCommand},
      {"train-step", "emit the training-step module of the MoE layer pair",
       podsim::cli::TrainStepCommand},
      {"simulate", "run an SPMD module on a pod: step time, memory, trace",
       podsim::cli::SimulateCommand},
      {"plan", "search the best way to shard the MoE model on a pod", podsim::cli::PlanCommand},
  };
  return commands;
}

void PrintUsage(std::ostream& os) {
  os << "usage: podsim <command> [options]   (podsim <command> --help for its options)\n\n"
        "commands:\n";
  for (const Command& c : Commands()) {
    os << "  " << c.name << std::string(12 - std::string(c.name).size(), ' ') << c.summary << "\n";
  }
  os << "\n" << podsim::cli::CommonOptions() << "  --version             print podsim's version\n";
}

// Runs one command; an error becomes a message on stderr and a non-zero exit code.
int RunCommand(const Command& c, const podsim::cli::Args& args) {
  const std::string name = c.name;
  try {
    return c.run(args);
  } catch (const std::bad_alloc&) {
    // The estimates before large allocations (base/memory.h) should catch this first; an
    // allocation they do not cover still ends in a sentence, not in "std::bad_alloc".
    std::cerr << "podsim " << name << ": error: out of memory: the input asks for more memory "
                 "than this machine has (a smaller pod, fewer partitions or a smaller "
                 "module may fit)\n";
    return 1;
  } catch (const boost::program_options::error& e) {
    std::cerr << "podsim " << name << ": error: " << e.what() << " (see podsim " << name
              << " --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "podsim " << name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << "podsim " << podsim::Version() << "\n";
    return 0;
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    PrintUsage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  namespace dist = podsim::experiments::dist;
  try {
    dist::InitIfLaunched(&argc, &argv);
  } catch (const std::exception& e) {
    std::cerr << "podsim: error: " << e.what() << "\n";
    return 1;
  }
  const std::string name = argv[1];
  podsim::cli::Args args(argv + 2, argv + argc);
  int code = 2;
  const auto command = std::find_if(Commands().begin(), Commands().end(),
                                    [&](const Command& c) { return name == c.name; });
  if (command != Commands().end()) {
    code = RunCommand(*command, args);
  } else {
    std::cerr << "podsim: unknown command '" << name << "'\n";
    PrintUsage(std::cerr);
  }
  // Under mpirun a rank that fails takes the others down rather than leave them waiting.
  if (code != 0 && dist::Size() > 1) dist::Abort(code);
  dist::Finalize();
  return code;
}
