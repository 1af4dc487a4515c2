#include "kbench/system_info.hpp"

#include <ctime>
#include <fstream>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "native_cuda/devices.hpp"

namespace kbench {

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::string gpu_unavailable_reason() {
#if defined(KBENCH_HAVE_CUDA)
  return cuda::unavailable_reason();
#else
  return "this build has no CUDA support";
#endif
}

bool gpu_available() {
  return gpu_unavailable_reason().empty();
}

std::string gpu_name() {
#if defined(KBENCH_HAVE_CUDA)
  return gpu_available() ? cuda::device_name() : "";
#else
  return "";
#endif
}

GpuMemory gpu_memory() {
  GpuMemory memory;
#if defined(KBENCH_HAVE_CUDA)
  if (gpu_available()) cuda::memory_info(&memory.free_bytes, &memory.total_bytes);
#endif
  return memory;
}

int host_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

std::size_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace kbench
