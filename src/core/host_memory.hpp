#pragma once
// Host memory on Linux's transparent huge pages where the machine gives them on request (its THP
// mode `madvise`): a fresh buffer faulted in (zeroed by the kernel) 2 MiB at a time instead of
// 4 KiB at a time, far fewer faults for the reading buffers the matching waits on.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kbench {

constexpr std::size_t kHugePageBytes = std::size_t(1) << 21;

// Asks for huge pages on the whole 2 MiB pages within [data, data + bytes): advice only, given
// before their first touch; a machine without them ignores it.
void advise_huge_pages(void* data, std::size_t bytes);

// Resizes `values` to `bytes` (zero-filled), its storage advised as above before the fill first
// touches it.
void resize_on_huge_pages(std::vector<std::uint8_t>& values, std::size_t bytes);

}  // namespace kbench
