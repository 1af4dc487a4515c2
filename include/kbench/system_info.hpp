#pragma once
// Facts about the machine and the build, stamped on every result.

#include <string>

namespace kbench {

const char* build_commit();
std::string cpu_name();
// The CUDA device's name, or "" when this build or machine has none.
std::string gpu_name();
bool gpu_available();
// Why gpu_available() is false ("" when it is true).
std::string gpu_unavailable_reason();
int host_threads();
// Current UTC time as 2026-11-21T21:00:00Z.
std::string utc_timestamp();

}  // namespace kbench
