#pragma once
// Sub-commands of the podsim binary. Each takes the arguments after its name and returns the
// process exit code; errors are thrown as podsim::Error and printed by main.

#include <string>
#include <vector>

namespace podsim::cli {

using Args = std::vector<std::string>;

int IrCommand(const Args& args);          // podsim ir verify|print|cost|eval|convert
int CollectiveCommand(const Args& args);  // podsim collective ...
int TopologyCommand(const Args& args);    // podsim topology ...
int RunCommand(const Args& args);         // podsim run EXPERIMENT.json --out DIR
int PartitionCommand(const Args& args);   // podsim partition FILE --mesh 4x2 [--explain]
int CheckCommand(const Args& args);       // podsim check FILE --mesh 2x4 [--seed N]
int SimulateCommand(const Args& args);    // podsim simulate FILE.hlo --topology ...
int PlanCommand(const Args& args);        // podsim plan MODEL --topology POD
int TrainStepCommand(const Args& args);   // podsim train-step [--config F] [--devices D]

}  // namespace podsim::cli
