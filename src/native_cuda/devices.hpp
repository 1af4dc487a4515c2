#pragma once
// The native CUDA layer's device queries and device choice that the rest of kbench calls (system
// information, cemd shards), in plain C++ so that sources compiled without CUDA can include it.
// Defined only where kbench is built with CUDA (KBENCH_HAVE_CUDA).

#include <cstddef>
#include <string>

namespace kbench::cuda {

// The number of visible CUDA devices; 0 without a driver or device. Never throws.
int device_count();
// Makes `device` the calling thread's current device; throws Error when it does not exist.
void set_device(int device);
// The calling thread's current device.
int current_device();

// Why no CUDA device can be used ("" when one can: a driver and at least one visible device);
// never throws.
std::string unavailable_reason();
// The current device's name.
std::string device_name();
// The current device's free and total memory in bytes.
void memory_info(std::size_t* free_bytes, std::size_t* total_bytes);

}  // namespace kbench::cuda
