#pragma once
// Host threads for the library's own parallel steps (reading, page-locking, formatting).

#include <functional>

namespace kbench {

// Runs work(0) .. work(n − 1) on n threads of their own and waits for all of them; then throws
// the failure of the lowest-numbered one that failed, if any. One is run on the calling thread.
void run_on_threads(int n, const std::function<void(int)>& work);

// The cores this process may run on (its affinity mask; at least 1).
int usable_cores();

}  // namespace kbench
