#pragma once
// Host threads for the library's own parallel steps (reading, page-locking, formatting).

#include <cstdint>
#include <functional>

namespace kbench {

// Runs work(0) .. work(n − 1) on n threads of their own and waits for all of them; then throws
// the failure of the lowest-numbered one that failed, if any. One is run on the calling thread.
void run_on_threads(int n, const std::function<void(int)>& work);

// Cuts [0, total) into contiguous slices, one per thread on up to `threads` threads (no empty
// one unless total is 0; sizes differ by one at most, the larger first) and runs work(slice,
// first, count) for each, slices numbered in order from 0, as run_on_threads does.
void run_on_slices(
    std::int64_t total, int threads,
    const std::function<void(int slice, std::int64_t first, std::int64_t count)>& work);

// The cores this process may run on (its affinity mask; at least 1).
int usable_cores();

}  // namespace kbench
