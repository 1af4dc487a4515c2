// Catch2 runner with Kokkos initialised once for the whole process.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "kbench/error.hpp"
#include "kbench/kokkos_runtime.hpp"

int main(int argc, char** argv) {
  try {
    const kbench::KokkosRuntime kokkos(argc, argv);
    return Catch::Session().run(argc, argv);
  } catch (const kbench::Error& e) {
    std::fprintf(stderr, "kbench_tests: %s\n", e.what());
    return 1;
  }
}
