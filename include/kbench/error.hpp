#pragma once
// The one exception type the toolkit throws for bad input and failed resources: its message is
// meant for the user as is.

#include <stdexcept>
#include <string>

namespace kbench {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kbench
