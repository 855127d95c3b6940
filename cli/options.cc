#include "cli/options.h"

namespace podsim::cli {

bool ParseOptions(const Args& args, const po::options_description& options,
                  const po::positional_options_description& positional, po::variables_map& vm) {
  po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
  if (vm.count("help")) return false;
  po::notify(vm);
  return true;
}

}  // namespace podsim::cli
