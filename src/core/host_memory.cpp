#include "core/host_memory.hpp"

#include <sys/mman.h>

namespace kbench {

namespace {

constexpr std::size_t kHugePageBytes = std::size_t(1) << 21;

// Asks for huge pages on the whole 2 MiB pages within [data, data + bytes).
void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(MADV_HUGEPAGE)
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const std::uintptr_t last = (begin + bytes) / kHugePageBytes * kHugePageBytes;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace

void resize_on_huge_pages(std::vector<std::uint8_t>& values, std::size_t bytes) {
  if (bytes > values.capacity()) {
    values.reserve(bytes);
    advise_huge_pages(values.data() + values.size(), values.capacity() - values.size());
  }
  values.resize(bytes);
}

}  // namespace kbench
