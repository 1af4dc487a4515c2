// Native CPU sad: the report's OpenMP map (collapse(2), static schedule) and a cache-blocked map
// that keeps a tile's target rows and the current query row in L1 while they are reused.
#include "sequential/sad_host.hpp"

namespace kbench {
namespace {

using namespace host_sad;

void omp_map(const SadInput& input, const SadShape& s, std::int32_t* map) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int i = 0; i < s.map_height; ++i) {
    for (int j = 0; j < s.map_width; ++j)
      map[std::size_t(i) * s.map_width + j] = sad_at(input, s, i, j);
  }
}

}  // namespace

void register_sad_native_cpu(VariantList<Sad>& list) {
  // The blocked map is the fastest CPU path; compare also uses it for the checking reference
  // where the sequential one is too slow.
  const auto add = [&](const char* name, Variant<Sad>::Make make, int preference) {
    list.push_back(
        {name, Layer::native_cpu, Backend::openmp, false, std::move(make), {}, preference});
  };
  add("omp", make_runner<MapRunner<omp_map, omp_argmin>>, 10);
  add("omp-blocked", make_runner<MapRunner<blocked_map, omp_argmin>>, 11);
}

}  // namespace kbench
