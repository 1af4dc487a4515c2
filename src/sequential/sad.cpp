// Sequential sad: the plain reference (the report's Algorithms 1-2).
#include "host_kernels/sad.hpp"

namespace kbench {

void register_sad_sequential(VariantList<Sad>& list) {
  using namespace host_sad;
  list.push_back({"seq",
                  Layer::sequential,
                  Backend::serial,
                  false,
                  make_runner<MapRunner<plain_map, scan_argmin>>,
                  {}});
}

}  // namespace kbench
