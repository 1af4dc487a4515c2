// Catch2 runner with Kokkos initialised once for the whole process.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "kbench/kokkos_runtime.hpp"

int main(int argc, char** argv) {
  const kbench::KokkosRuntime kokkos("kbench_tests", argc, argv);
  return Catch::Session().run(argc, argv);
}
