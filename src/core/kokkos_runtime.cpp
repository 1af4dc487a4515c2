#include "kbench/kokkos_runtime.hpp"

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "kbench/system_info.hpp"

namespace kbench {

KokkosRuntime::KokkosRuntime(const char* program, int& argc, char* argv[]) {
  const auto fail = [program](const std::string& why) {
    std::cerr << program << ": " << why << '\n';
    std::exit(1);
  };
#if defined(KOKKOS_ENABLE_CUDA)
  const std::string no_gpu = gpu_unavailable_reason();
  if (!no_gpu.empty()) {
    fail("this is a CUDA build of kbench, whose Kokkos needs a usable GPU, and there is none (" +
         no_gpu + "); the host build runs here (scripts/dev.sh build host)");
  }
#endif
  try {
    Kokkos::initialize(argc, argv);
  } catch (const std::exception& e) {
    fail(std::string("Kokkos could not start: ") + e.what());
  }
}

KokkosRuntime::~KokkosRuntime() {
  Kokkos::finalize();
}

}  // namespace kbench
