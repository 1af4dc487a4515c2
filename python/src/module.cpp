// kbench._kbench: the kbench library calls for Python, on arrays (NumPy, or anything nanobind
// takes as an ndarray). The public functions, their argument checks and docstrings are in
// kbench/__init__.py; this layer turns arrays into the library's views, releases the GIL for the
// call and turns kbench::Error into kbench.Error.
//
// Arrays reach these functions already in the library's axis order: images N×H×W×C (uint8),
// descriptor sets N×128 (uint8 or float32). Where an array's memory is and how its strides map
// onto a view is decided in place_of() and image_view() / descriptor_view() alone.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <kbench/device_memory.hpp>
#include <kbench/kbench.hpp>
#include <kbench/registry.hpp>
#include <kbench/system_info.hpp>

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

using InArray = nb::ndarray<nb::ro>;
using OutArray = nb::ndarray<>;

// One context per Python thread: a context is used by one thread at a time, and contexts on
// different threads may call at once (context.hpp).
kbench::Context& context() {
  thread_local kbench::Context context;
  return context;
}

// The views each call of this thread last handed the library, by argument name: the addresses
// the tests compare with the arrays' own, which shows that device arrays are used in place.
thread_local std::vector<std::pair<std::string, std::uintptr_t>> handed_views;

template <class View>
View handed(const char* name, const View& view) {
  handed_views.emplace_back(name, reinterpret_cast<std::uintptr_t>(view.data));
  return view;
}

// Where an array's memory is: the host, or a CUDA device (DLPack's CUDA device type).
template <class Array>
kbench::MemoryPlace place_of(const Array& array, const char* name) {
  if (array.device_type() == nb::device::cpu::value) return kbench::MemoryPlace::host();
  if (array.device_type() == nb::device::cuda::value) {
    return kbench::MemoryPlace::cuda(array.device_id());
  }
  throw nb::type_error(
      (std::string(name) + ": an array in memory kbench cannot reach (neither host nor CUDA)")
          .c_str());
}

// The caller's stream (a cudaStream_t as an integer; 0: CUDA's legacy default stream).
kbench::Stream stream_of(std::uintptr_t handle) {
  return {reinterpret_cast<void*>(handle), false};
}

template <class Array>
void require(const Array& array, const char* name, nb::dlpack::dtype dtype, std::size_t ndim,
             const char* what) {
  if (array.dtype() != dtype) {
    throw nb::type_error((std::string(name) + ": the array's values must be " + what).c_str());
  }
  if (array.ndim() != ndim) {
    throw nb::value_error(
        (std::string(name) + ": expected " + std::to_string(ndim) + " axes").c_str());
  }
}

// Frames of an N×H×W×C uint8 array as a view: in place where each pixel's channels are adjacent
// and pixels are packed along a row (any positive row and frame stride that keeps rows and frames
// apart), otherwise of a packed copy that `copy` holds.
template <class Array, class View>
View image_view(const Array& array, const char* name, std::vector<std::uint8_t>* copy) {
  require(array, name, nb::dtype<std::uint8_t>(), 4, "uint8");
  const kbench::MemoryPlace place = place_of(array, name);
  const auto n = std::int64_t(array.shape(0)), h = std::int64_t(array.shape(1));
  const auto w = std::int64_t(array.shape(2)), c = std::int64_t(array.shape(3));
  // Strides of axes of length 1 do not matter (NumPy and DLPack may give any value there).
  const std::int64_t sc = c > 1 ? array.stride(3) : 1;
  const std::int64_t sw = w > 1 ? array.stride(2) : c;
  const std::int64_t sh = h > 1 ? array.stride(1) : w * c;
  const std::int64_t sn = n > 1 ? array.stride(0) : h * sh;
  const bool in_place = sc == 1 && sw == c && sh >= w * c && sn >= h * sh;
  auto* data =
      static_cast<std::uint8_t*>(const_cast<void*>(static_cast<const void*>(array.data())));
  View view{data, int(w), int(h), int(c), std::size_t(sh), int(n), std::size_t(sn), place};
  if (in_place) return view;
  if (!copy || !place.on_host()) {
    throw nb::value_error((std::string(name) +
                           ": the array's layout cannot be written in place (each row's pixels "
                           "and channels must be adjacent in memory); pass a C-contiguous array")
                              .c_str());
  }
  copy->resize(std::size_t(n * h * w * c));
  std::uint8_t* to = copy->data();
  for (std::int64_t f = 0; f < n; ++f) {
    for (std::int64_t y = 0; y < h; ++y) {
      const std::uint8_t* row = data + f * array.stride(0) + y * array.stride(1);
      for (std::int64_t x = 0; x < w; ++x) {
        for (std::int64_t k = 0; k < c; ++k) *to++ = row[x * array.stride(2) + k * array.stride(3)];
      }
    }
  }
  return View{copy->data(), int(w), int(h), int(c), 0, int(n), 0, place};
}

kbench::ConstImageView input_image(const InArray& array, const char* name,
                                   std::vector<std::uint8_t>& copy) {
  return handed(name, image_view<InArray, kbench::ConstImageView>(array, name, &copy));
}
kbench::ImageView output_image(const OutArray& array, const char* name) {
  return handed(name, image_view<OutArray, kbench::ImageView>(array, name, nullptr));
}

// A descriptor set (rows × 128, uint8 or float32) as a view: in place where each row's values
// are adjacent, otherwise (host memory only) of a packed copy that `copy` holds.
kbench::DescriptorView packed_descriptors(const InArray& array, const char* name,
                                          std::vector<unsigned char>& copy) {
  const bool is_u8 = array.dtype() == nb::dtype<std::uint8_t>();
  require(array, name, is_u8 ? nb::dtype<std::uint8_t>() : nb::dtype<float>(), 2,
          "uint8 or float32");
  const kbench::MemoryPlace place = place_of(array, name);
  const auto rows = std::int64_t(array.shape(0)), cols = std::int64_t(array.shape(1));
  if (cols != kbench::kDescriptorBytes) {
    throw nb::value_error(
        (std::string(name) + ": descriptors have 128 values, not " + std::to_string(cols)).c_str());
  }
  const std::int64_t element = is_u8 ? 1 : 4;
  const std::int64_t row_stride = rows > 1 ? array.stride(0) : cols;
  const auto type = is_u8 ? kbench::DescriptorType::u8 : kbench::DescriptorType::f32;
  const auto* data = static_cast<const unsigned char*>(static_cast<const void*>(array.data()));
  if (array.stride(1) == 1 && row_stride >= cols) {
    return {data, int(rows), type, std::size_t(row_stride * element), place};
  }
  if (!place.on_host()) {
    throw nb::value_error(
        (std::string(name) + ": each descriptor's values must be adjacent in device memory")
            .c_str());
  }
  copy.resize(std::size_t(rows * cols * element));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < cols; ++k) {
      std::memcpy(copy.data() + (r * cols + k) * element,
                  data + (r * array.stride(0) + k * array.stride(1)) * element, element);
    }
  }
  return {copy.data(), int(rows), type, 0, place};
}

kbench::DescriptorView descriptor_view(const InArray& array, const char* name,
                                       std::vector<unsigned char>& copy) {
  return handed(name, packed_descriptors(array, name, copy));
}

kbench::Choice choice_of(const std::string& variant, const std::string& backend,
                         const std::string& layer) {
  return {variant, backend, layer};
}

// The library's parsers throw kbench::Error; here the message names the argument.
template <class Parse>
auto parsed(const char* name, const std::string& text, Parse parse) {
  try {
    return parse(text);
  } catch (const kbench::Error& e) {
    throw nb::value_error((std::string(name) + ": " + e.what()).c_str());
  }
}

void conv(const InArray& image, const OutArray& out,
          const nb::ndarray<const float, nb::ndim<2>, nb::c_contig>& weights,
          const std::string& border, const std::string& variant, const std::string& backend,
          const std::string& layer, std::uintptr_t stream) {
  handed_views.clear();
  std::vector<std::uint8_t> copy;
  const kbench::ConstImageView in = input_image(image, "image", copy);
  const kbench::ImageView to = output_image(out, "out");
  kbench::Mask mask;
  mask.size = int(weights.shape(0));
  mask.weights.assign(weights.data(), weights.data() + weights.size());
  const kbench::ConvOptions options{parsed("border", border, kbench::parse_border),
                                    stream_of(stream)};
  const kbench::Choice choice = choice_of(variant, backend, layer);
  nb::gil_scoped_release release;
  kbench::conv(context(), in, to, mask, options, choice);
}

void lbp(const InArray& image, const OutArray& codes, const OutArray& histogram,
         const std::string& mapping, const std::string& border, const std::string& variant,
         const std::string& backend, const std::string& layer, std::uintptr_t stream) {
  handed_views.clear();
  std::vector<std::uint8_t> copy;
  const kbench::ConstImageView in = input_image(image, "image", copy);
  const kbench::ImageView to = output_image(codes, "codes");
  // int32 for libraries without uint32 (PyTorch before 2.3): the same bits while counts stay
  // below 2^31, which a frame of fewer pixels guarantees.
  const bool int32_counts = histogram.dtype() == nb::dtype<std::int32_t>();
  require(histogram, "histogram",
          int32_counts ? nb::dtype<std::int32_t>() : nb::dtype<std::uint32_t>(), 2,
          "uint32 (or int32)");
  if (int32_counts && std::int64_t(in.width) * in.height > std::int64_t(INT32_MAX)) {
    throw nb::value_error("histogram: int32 counts cannot hold a frame of 2^31 pixels or more");
  }
  place_of(histogram, "histogram");
  if (histogram.shape(0) != std::size_t(in.frames) || histogram.stride(1) != 1 ||
      (histogram.shape(0) > 1 && histogram.stride(0) != std::int64_t(histogram.shape(1)))) {
    throw nb::value_error("histogram: a C-contiguous frames × bins array");
  }
  kbench::LbpOptions options;
  options.mapping = parsed("mapping", mapping, kbench::parse_lbp_mapping);
  options.border = parsed("border", border, kbench::parse_border);
  options.stream = stream_of(stream);
  if (histogram.shape(1) != std::size_t(kbench::lbp_bin_count(options.mapping))) {
    throw nb::value_error("histogram: wrong number of bins for the mapping");
  }
  auto* bins = static_cast<std::uint32_t*>(histogram.data());
  const kbench::Choice choice = choice_of(variant, backend, layer);
  nb::gil_scoped_release release;
  kbench::lbp(context(), in, to, bins, options, choice);
}

void sad_map(const InArray& target, const InArray& query, const OutArray& map,
             const std::string& variant, const std::string& backend, const std::string& layer,
             std::uintptr_t stream) {
  handed_views.clear();
  std::vector<std::uint8_t> target_copy, query_copy;
  const kbench::ConstImageView t = input_image(target, "target", target_copy);
  const kbench::ConstImageView q = input_image(query, "query", query_copy);
  require(map, "map", nb::dtype<std::int32_t>(), 2, "int32");
  const kbench::MemoryPlace place = place_of(map, "map");
  const std::int64_t h = std::int64_t(map.shape(0)), w = std::int64_t(map.shape(1));
  if ((w > 1 && map.stride(1) != 1) || (h > 1 && map.stride(0) < w)) {
    throw nb::value_error("map: each row's values must be adjacent in memory");
  }
  const kbench::SadMapView view{static_cast<std::int32_t*>(map.data()), int(w), int(h),
                                std::size_t(h > 1 ? map.stride(0) * 4 : 0), place};
  const kbench::Choice choice = choice_of(variant, backend, layer);
  nb::gil_scoped_release release;
  kbench::sad_map(context(), t, q, handed("map", view), {stream_of(stream)}, choice);
}

// Rows of (row, col, score), best first.
std::vector<std::int32_t> match(const InArray& target, const InArray& query, int top,
                                int separation, const std::string& method,
                                const std::string& variant, const std::string& backend,
                                const std::string& layer, std::uintptr_t stream) {
  handed_views.clear();
  std::vector<std::uint8_t> target_copy, query_copy;
  const kbench::ConstImageView t = input_image(target, "target", target_copy);
  const kbench::ConstImageView q = input_image(query, "query", query_copy);
  kbench::MatchOptions options;
  options.top = top;
  options.separation = separation;
  options.stream = stream_of(stream);
  if (method == "auto") {
    options.method = kbench::MatchMethod::automatic;
  } else if (method == "full") {
    options.method = kbench::MatchMethod::full;
  } else if (method == "pruned") {
    options.method = kbench::MatchMethod::pruned;
  } else {
    throw nb::value_error(("method: '" + method + "' is not auto, full or pruned").c_str());
  }
  const kbench::Choice choice = choice_of(variant, backend, layer);
  std::vector<kbench::SadMatch> found;
  {
    nb::gil_scoped_release release;
    found = kbench::match(context(), t, q, options, choice);
  }
  std::vector<std::int32_t> rows;
  for (const kbench::SadMatch& m : found) rows.insert(rows.end(), {m.row, m.col, m.score});
  return rows;
}

kbench::CemdMatchOptions cemd_options(const std::string& distance, float ratio) {
  kbench::CemdMatchOptions options;
  options.distance = parsed("distance", distance, kbench::parse_descriptor_distance);
  options.ratio = ratio;
  return options;
}

// Per query: index, distance, second index, second distance, accepted, as five lists.
nb::tuple cemd_match(const InArray& queries, const InArray& database, const std::string& distance,
                     float ratio, const std::string& variant, const std::string& backend,
                     const std::string& layer, std::uintptr_t stream) {
  handed_views.clear();
  std::vector<unsigned char> query_copy, database_copy;
  const kbench::DescriptorView q = descriptor_view(queries, "queries", query_copy);
  const kbench::DescriptorView d = descriptor_view(database, "database", database_copy);
  kbench::CemdMatchOptions options = cemd_options(distance, ratio);
  options.stream = stream_of(stream);
  const kbench::Choice choice = choice_of(variant, backend, layer);
  std::vector<kbench::CemdMatch> found;
  {
    nb::gil_scoped_release release;
    found = kbench::cemd_match(context(), q, d, options, choice);
  }
  std::vector<std::int32_t> index, second_index;
  std::vector<float> best, second;
  std::vector<bool> accepted;
  for (const kbench::CemdMatch& m : found) {
    index.push_back(m.index);
    best.push_back(m.distance);
    second_index.push_back(m.second_index);
    second.push_back(m.second_distance);
    accepted.push_back(m.accepted);
  }
  return nb::make_tuple(index, best, second_index, second, accepted);
}

void cemd_all_pairs(const InArray& queries, const InArray& database, const OutArray& matrix,
                    const std::string& distance, const std::string& variant,
                    const std::string& backend, const std::string& layer, std::uintptr_t stream) {
  handed_views.clear();
  std::vector<unsigned char> query_copy, database_copy;
  const kbench::DescriptorView q = descriptor_view(queries, "queries", query_copy);
  const kbench::DescriptorView d = descriptor_view(database, "database", database_copy);
  require(matrix, "matrix", nb::dtype<float>(), 2, "float32");
  const kbench::MemoryPlace place = place_of(matrix, "matrix");
  if (matrix.shape(0) != std::size_t(q.rows) || matrix.shape(1) != std::size_t(d.rows) ||
      (matrix.shape(1) > 1 && matrix.stride(1) != 1) ||
      (matrix.shape(0) > 1 && matrix.stride(0) < std::int64_t(matrix.shape(1)))) {
    throw nb::value_error("matrix: a queries × database float32 array with adjacent rows values");
  }
  const std::size_t stride = matrix.shape(0) > 1 ? std::size_t(matrix.stride(0)) * 4 : 0;
  kbench::CemdMatchOptions options = cemd_options(distance, 0.8f);
  options.stream = stream_of(stream);
  const kbench::Choice choice = choice_of(variant, backend, layer);
  nb::gil_scoped_release release;
  const kbench::DistanceMatrixView view{static_cast<float*>(matrix.data()), q.rows, d.rows, stride,
                                        place};
  kbench::cemd_all_pairs(context(), q, d, handed("matrix", view), options, choice);
}

nb::ndarray<nb::numpy, float> builtin_mask(const std::string& name) {
  const kbench::Mask mask = parsed("mask", name, kbench::builtin_mask);
  auto* weights = new std::vector<float>(mask.weights);
  nb::capsule owner(weights, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  return nb::ndarray<nb::numpy, float>(weights->data(),
                                       {std::size_t(mask.size), std::size_t(mask.size)}, owner);
}

nb::list variants() {
  nb::list list;
  for (const kbench::VariantInfo& v : kbench::all_variants()) {
    nb::dict info;
    info["name"] = v.name;
    info["algorithm"] = v.algorithm;
    info["layer"] = kbench::to_string(v.layer);
    info["backend"] = kbench::to_string(v.backend);
    list.append(info);
  }
  return list;
}

nb::dict devices() {
  nb::dict info;
  info["cpu"] = kbench::cpu_name();
  info["threads"] = kbench::host_threads();
  info["built_with_cuda"] = kbench::built_with_cuda();
  const bool gpu = kbench::gpu_available();
  info["gpu"] = gpu ? nb::object(nb::str(kbench::gpu_name().c_str())) : nb::none();
  info["gpu_unavailable_reason"] = gpu ? std::string() : kbench::gpu_unavailable_reason();
  info["commit"] = std::string(kbench::build_commit());
  return info;
}

nb::object last_run() {
  const kbench::CallInfo& call = context().last_call();
  if (call.algorithm.empty()) return nb::none();
  nb::dict info;
  info["algorithm"] = call.algorithm;
  info["variant"] = call.variant;
  info["layer"] = call.layer;
  info["backend"] = call.backend;
  info["compute_ms"] = call.compute_ms;
  info["total_ms"] = call.total_ms;
  info["detail"] = call.detail;
  return info;
}

}  // namespace

NB_MODULE(_kbench, m) {
  m.doc() = "kbench's library calls on arrays (the public API is the kbench package)";

  // kbench::Error covers both bad input and what this machine or build cannot run, so its Python
  // form is both a ValueError and a RuntimeError; kbench::OutOfMemory becomes MemoryError.
  PyObject* bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_RuntimeError);
  PyObject* error = PyErr_NewExceptionWithDoc(
      "kbench.Error", "An input or request the kbench library refused, with its message.", bases,
      nullptr);
  Py_DECREF(bases);
  if (!error) throw nb::python_error();
  m.attr("Error") = nb::steal(error);
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        try {
          std::rethrow_exception(p);
        } catch (const kbench::OutOfMemory& e) {
          PyErr_SetString(PyExc_MemoryError, e.what());
        } catch (const kbench::Error& e) {
          PyErr_SetString(static_cast<PyObject*>(payload), e.what());
        }
      },
      error);

  using namespace nb::literals;
  m.def("conv", &conv, "image"_a, "out"_a, "weights"_a, "border"_a, "variant"_a, "backend"_a,
        "layer"_a, "stream"_a = 0);
  m.def("lbp", &lbp, "image"_a, "codes"_a, "histogram"_a, "mapping"_a, "border"_a, "variant"_a,
        "backend"_a, "layer"_a, "stream"_a = 0);
  m.def("sad_map", &sad_map, "target"_a, "query"_a, "map"_a, "variant"_a, "backend"_a, "layer"_a,
        "stream"_a = 0);
  m.def("match", &match, "target"_a, "query"_a, "top"_a, "separation"_a, "method"_a, "variant"_a,
        "backend"_a, "layer"_a, "stream"_a = 0);
  m.def("cemd_match", &cemd_match, "queries"_a, "database"_a, "distance"_a, "ratio"_a, "variant"_a,
        "backend"_a, "layer"_a, "stream"_a = 0);
  m.def("cemd_all_pairs", &cemd_all_pairs, "queries"_a, "database"_a, "matrix"_a, "distance"_a,
        "variant"_a, "backend"_a, "layer"_a, "stream"_a = 0);
  m.def("handed_views", [] {
    nb::dict views;
    for (const auto& [name, address] : handed_views) views[name.c_str()] = address;
    return views;
  });
  m.def("builtin_mask", &builtin_mask, "name"_a);
  m.def("builtin_mask_names", &kbench::builtin_mask_names);
  m.def("lbp_bin_count", [](const std::string& mapping) {
    return kbench::lbp_bin_count(parsed("mapping", mapping, kbench::parse_lbp_mapping));
  });
  m.def("algorithm_names", &kbench::algorithm_names);
  m.def("variants", &variants);
  m.def("devices", &devices);
  m.def("last_run", &last_run);
}
