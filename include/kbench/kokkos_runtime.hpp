#pragma once
// Kokkos for a tool's lifetime, started so that a CUDA build on a machine without a usable GPU
// ends with one clear message instead of a core dump: Kokkos 3.4 starts every backend it was
// built with, and its CUDA backend throws out of Kokkos::initialize (uncaught: SIGABRT) when
// there is no driver or device.

namespace kbench {

class KokkosRuntime {
 public:
  // Starts Kokkos with the program's arguments (--kokkos-* options, which it removes from them),
  // its start-up warnings off; throws Error saying why when it cannot start.
  KokkosRuntime(int& argc, char* argv[]);
  ~KokkosRuntime();
  KokkosRuntime(const KokkosRuntime&) = delete;
  KokkosRuntime& operator=(const KokkosRuntime&) = delete;
};

}  // namespace kbench
