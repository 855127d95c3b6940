#include "cli/options.h"

#include <cmath>
#include <exception>
#include <map>
#include <string>
#include <vector>

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

namespace {

// NAME=VALUE pairs of `option` (--trip-count, --custom-call-flops), VALUE a finite number >= 0.
std::map<std::string, double> NamedValues(const std::vector<std::string>& specs,
                                          const std::string& option) {
  std::map<std::string, double> out;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    double v = -1;
    if (eq != std::string::npos && eq > 0) {
      try {
        size_t used = 0;
        v = std::stod(spec.substr(eq + 1), &used);
        if (used != spec.size() - eq - 1 || !std::isfinite(v)) v = -1;
      } catch (const std::exception&) {
        v = -1;
      }
    }
    if (!(v >= 0)) throw Error(option + " " + spec + ": expected NAME=VALUE with VALUE >= 0");
    std::string name = spec.substr(0, eq);
    if (name[0] == '%') name.erase(0, 1);
    out[name] = v;
  }
  return out;
}

}  // namespace

void AddImportOptions(po::options_description& options) {
  options.add_options()(
      "trip-count", po::value<std::vector<std::string>>()->composing(),
      "NAME=N: trip count of XLA while NAME, for loops whose count the module does not give "
      "(repeatable)")(
      "custom-call-flops", po::value<std::vector<std::string>>()->composing(),
      "TARGET=F: floating-point operations per call of XLA custom-call TARGET, which podsim "
      "keeps as an opaque kernel (repeatable; default 0, with a warning)");
}

ir::HloImportOptions ImportOptions(const po::variables_map& vm) {
  ir::HloImportOptions options;
  if (vm.count("trip-count")) {
    for (const auto& [name, n] :
         NamedValues(vm["trip-count"].as<std::vector<std::string>>(), "--trip-count")) {
      if (n != std::floor(n) || n > 9e15) {
        throw Error("--trip-count " + name + ": expected a whole number of iterations");
      }
      options.trip_counts[name] = static_cast<int64_t>(n);
    }
  }
  if (vm.count("custom-call-flops")) {
    options.custom_call_flops =
        NamedValues(vm["custom-call-flops"].as<std::vector<std::string>>(), "--custom-call-flops");
  }
  return options;
}

}  // namespace podsim::cli
