#pragma once
// The one exception type of podsim: a message a user can act on (it names the instruction,
// JSON path, or line:column at fault). The CLI prints it and exits non-zero.

#include <stdexcept>
#include <string>

namespace podsim {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace podsim
