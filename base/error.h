#pragma once
// The one exception hierarchy of podsim: a message a user can act on (it names the instruction,
// JSON path, file, or line:column at fault). The CLI prints it and exits non-zero.

#include <stdexcept>
#include <string>

namespace podsim {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A config value that is missing, of the wrong type, or out of range. The message starts with
// the JSON path (`topology.dims[1]: must be >= 1, got 0`), or with the file that holds it.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message) {}

  // The same error, its message prefixed with the file that holds the bad value; a message that
  // already starts with "<file>:" is kept as it is.
  ConfigError InFile(const std::string& file) const {
    const std::string what = this->what();
    if (what.rfind(file + ":", 0) == 0) return *this;
    return ConfigError(file + ": " + what);
  }
};

}  // namespace podsim
