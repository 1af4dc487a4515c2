#include "kbench/kokkos_runtime.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "kbench/error.hpp"
#include "kbench/system_info.hpp"

namespace kbench {

KokkosRuntime::KokkosRuntime(int& argc, char* argv[]) {
  const auto fail = [](const std::string& why) { throw Error(why); };
#if defined(KOKKOS_ENABLE_CUDA)
  const std::string no_gpu = gpu_unavailable_reason();
  if (!no_gpu.empty()) {
    fail("this is a CUDA build of kbench, whose Kokkos needs a usable GPU, and there is none (" +
         no_gpu + "); the host build runs here (scripts/dev.sh build host)");
  }
#endif
  // Kokkos' start-up advice (OMP_PROC_BIND) is for developers, not for the tools' users: it is
  // turned off, and the caller's arguments are given back without the ones Kokkos took.
  std::vector<char*> arguments(argv, argv + argc);
  static char disable_warnings[] = "--kokkos-disable-warnings";
  arguments.insert(arguments.begin() + (argc > 0 ? 1 : 0), disable_warnings);
  int count = int(arguments.size());
  arguments.push_back(nullptr);
  try {
    Kokkos::initialize(count, arguments.data());
    std::copy(arguments.begin(), arguments.begin() + count, argv);
    argc = count;
    argv[argc] = nullptr;
  } catch (const std::exception& e) {
    fail(std::string("Kokkos could not start: ") + e.what());
  }
}

KokkosRuntime::~KokkosRuntime() {
  Kokkos::finalize();
}

}  // namespace kbench
