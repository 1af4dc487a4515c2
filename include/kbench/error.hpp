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

// A buffer (host or device memory) that could not be allocated: the input may be fine but too
// large for this machine, which compare reports as a skipped variant rather than a wrong one.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// A request that is wrong in itself, whatever the data (an output equal to an input, options that
// exclude each other): the tools end with their usage status for it.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace kbench
