// The tools' global operator new and delete: malloc and free, as the library's own, except that a
// failed allocation records its size before it throws std::bad_alloc, so a tool can end with
// "could not allocate N bytes" instead of a bare "std::bad_alloc". Linked into every tool.
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace kbench::tools {
namespace {
std::atomic<std::size_t> last_failed_bytes{0};
}  // namespace

std::size_t failed_allocation_bytes() {
  return last_failed_bytes.load();
}

}  // namespace kbench::tools

namespace {

void* allocate(std::size_t bytes, std::size_t alignment) {
  if (bytes == 0) bytes = 1;
  for (;;) {
    void* memory = nullptr;
    if (alignment <= alignof(std::max_align_t)) {
      memory = std::malloc(bytes);
    } else if (::posix_memalign(&memory, alignment, bytes) != 0) {
      memory = nullptr;
    }
    if (memory) return memory;
    const std::new_handler handler = std::get_new_handler();
    if (!handler) {
      kbench::tools::last_failed_bytes.store(bytes);
      throw std::bad_alloc();
    }
    handler();
  }
}

void* allocate_or_null(std::size_t bytes, std::size_t alignment) noexcept {
  try {
    return allocate(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace

void* operator new(std::size_t bytes) {
  return allocate(bytes, 0);
}
void* operator new[](std::size_t bytes) {
  return allocate(bytes, 0);
}
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  return allocate(bytes, std::size_t(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment) {
  return allocate(bytes, std::size_t(alignment));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, 0);
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, 0);
}
void* operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, std::size_t(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment,
                     const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, std::size_t(alignment));
}

void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete[](void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}
