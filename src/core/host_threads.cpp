#include "core/host_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <exception>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "kbench/error.hpp"

namespace kbench {

void run_on_threads(int n, const std::function<void(int)>& work) {
  if (n == 1) return work(0);
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  try {
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        try {
          work(i);
        } catch (...) {
          failures[i] = std::current_exception();
        }
      });
    }
  } catch (const std::system_error& e) {
    for (auto& t : threads) t.join();
    throw Error(std::string("cannot start a thread: ") + e.what());
  }
  for (auto& t : threads) t.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

void run_on_slices(
    std::int64_t total, int threads,
    const std::function<void(int slice, std::int64_t first, std::int64_t count)>& work) {
  const int slices = int(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(total, 1)));
  const std::int64_t base = total / slices, extra = total % slices;
  run_on_threads(slices, [&](int s) {
    work(s, s * base + std::min<std::int64_t>(s, extra), base + (s < extra ? 1 : 0));
  });
}

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, int(std::thread::hardware_concurrency()));
}

}  // namespace kbench
