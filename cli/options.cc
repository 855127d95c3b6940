#include "cli/options.h"

#include "base/error.h"
#include "base/io.h"
#include "base/units.h"

namespace podsim::cli {

const po::options_description& CommonOptions() {
  static const po::options_description common = [] {
    po::options_description d("options of every command");
    d.add_options()("max-file-size", po::value<std::string>(),
                    "largest input file (module, arguments) to read: 4GiB, ... (default 1GiB)");
    return d;
  }();
  return common;
}

bool ParseOptions(const Args& args, const po::options_description& options,
                  const po::positional_options_description& positional, po::variables_map& vm) {
  po::options_description all;
  all.add(options).add(CommonOptions());
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) return false;
  po::notify(vm);
  if (vm.count("max-file-size")) {
    const int64_t bytes = ParseBytes(vm["max-file-size"].as<std::string>(), "--max-file-size");
    if (bytes < 1) throw Error("--max-file-size: must be at least 1 byte");
    SetMaxInputFileBytes(static_cast<size_t>(bytes));
  }
  return true;
}

}  // namespace podsim::cli
