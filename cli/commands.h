#pragma once
// Sub-commands of the podsim binary. Each takes the arguments after its name and returns the
// process exit code; errors are thrown as podsim::Error and printed by main.

#include <string>
#include <vector>

namespace podsim::cli {

using Args = std::vector<std::string>;

int IrCommand(const Args& args);          // podsim ir verify|print|cost|eval|convert
int TopologyCommand(const Args& args);    // podsim topology ...

}  // namespace podsim::cli
