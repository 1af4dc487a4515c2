#pragma once
// Kokkos for a tool's lifetime, started so that a CUDA build on a machine without a usable GPU
// ends with one clear line instead of a core dump: Kokkos 3.4 starts every backend it was built
// with, and its CUDA backend throws out of Kokkos::initialize (uncaught: SIGABRT) when there is
// no driver or device.

namespace kbench {

class KokkosRuntime {
 public:
  // Starts Kokkos with the tool's arguments (--kokkos-* options), or prints
  // "<program>: <why>" on stderr and exits with status 1 when it cannot start.
  KokkosRuntime(const char* program, int& argc, char* argv[]);
  ~KokkosRuntime();
  KokkosRuntime(const KokkosRuntime&) = delete;
  KokkosRuntime& operator=(const KokkosRuntime&) = delete;
};

}  // namespace kbench
