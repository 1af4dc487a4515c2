#pragma once
// Host memory on Linux's transparent huge pages where the machine gives them on request (its THP
// mode `madvise`): a fresh buffer faulted in (zeroed by the kernel) 2 MiB at a time instead of
// 4 KiB at a time, far fewer faults for the reading buffers the matching waits on.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kbench {

// Resizes `values` to `bytes` (zero-filled), its new storage's whole 2 MiB pages advised to be
// huge ones (advice only; a machine without them ignores it) before the fill first touches them.
void resize_on_huge_pages(std::vector<std::uint8_t>& values, std::size_t bytes);

}  // namespace kbench
