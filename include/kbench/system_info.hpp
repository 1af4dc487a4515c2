#pragma once
// Facts about the machine and the build, stamped on every result.

#include <cstddef>
#include <string>

namespace kbench {

const char* build_commit();
std::string cpu_name();
// The CUDA device's name, or "" when this build or machine has none.
std::string gpu_name();
bool gpu_available();
// The CUDA device's free and total memory in bytes; both 0 when gpu_available() is false.
struct GpuMemory {
  std::size_t free_bytes = 0, total_bytes = 0;
};
GpuMemory gpu_memory();
// Why gpu_available() is false ("" when it is true).
std::string gpu_unavailable_reason();
int host_threads();
// Host memory that can be had without swapping (Linux MemAvailable), 0 when unknown.
std::size_t available_host_memory();
// Current UTC time as 2026-11-21T21:00:00Z.
std::string utc_timestamp();

}  // namespace kbench
