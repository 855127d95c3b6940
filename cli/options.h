#pragma once
// Command-line parsing shared by the sub-commands (Boost.Program_options).

#include <boost/program_options.hpp>

#include "cli/commands.h"
#include "ir/hlo_import.h"

namespace podsim::cli {

namespace po = boost::program_options;

// Options every command takes (listed in `podsim --help`): --max-file-size.
const po::options_description& CommonOptions();

// Parses `args` (the command's options and CommonOptions(), applied here) into `vm`. Returns
// false when --help was given, before required options are
// checked, so the caller prints its usage. Option errors propagate as po::error; main names the
// command and points at its --help.
bool ParseOptions(const Args& args, const po::options_description& options,
                  const po::positional_options_description& positional, po::variables_map& vm);

// --trip-count NAME=N and --custom-call-flops TARGET=F (repeatable): how commands reading XLA
// HLO text import it; ImportOptions reads them back.
void AddImportOptions(po::options_description& options);
ir::HloImportOptions ImportOptions(const po::variables_map& vm);

}  // namespace podsim::cli
