// kbench._kbench: the kbench library calls for Python. The public functions and their docstrings
// are in kbench/__init__.py, which checks the option arguments (names, counts, the variant choice)
// and hands the arrays here as the caller gave them. This layer reads each array once (NumPy and
// anything with DLPack; PyTorch tensors through its C exporter, which skips `__dlpack__`'s Python
// checks), checks its dtype and shape with errors that name the argument, maps its form onto the
// library's views, makes each result where the input lives (NumPy, or the same CUDA library on
// the same device), queues device calls on that library's current stream, releases the GIL for
// the call and turns kbench::Error into kbench.Error.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <kbench/device_memory.hpp>
#include <kbench/kbench.hpp>
#include <kbench/registry.hpp>
#include <kbench/system_info.hpp>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
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

std::string message(const char* name, const std::string& text) {
  return std::string(name) + ": " + text;
}
[[noreturn]] void type_error(const char* name, const std::string& text) {
  throw nb::type_error(message(name, text).c_str());
}
[[noreturn]] void value_error(const char* name, const std::string& text) {
  throw nb::value_error(message(name, text).c_str());
}

// --- Array libraries ----------------------------------------------------------------------------

// Which library an array argument belongs to: it decides how a result is made like it and which
// stream a call on it is queued on.
enum class Library { numpy, torch, cupy, other };

// Python objects looked up once. A library's are looked up when it is first seen imported, so
// kbench never imports PyTorch or CuPy itself. Only touched with the GIL held.
struct Python {
  nb::object numpy_ndarray, numpy_empty, numpy_asarray;
  nb::object numpy_dtype[4];  // by Element
  nb::object torch_tensor, torch_to_capsule, torch_stream, torch_dtype[4], torch_device_stream;
  nb::object cupy_ndarray, cupy_stream, cupy_empty;
};
Python& python() {
  static Python* objects = new Python();  // never destroyed: outlives the interpreter's teardown
  return *objects;
}

nb::handle imported_module(const char* name) {
  return PyDict_GetItemString(PyImport_GetModuleDict(), name);  // borrowed; null when absent
}

enum class Element { u8, i32, u32, f32 };
constexpr const char* element_names[] = {"uint8", "int32", "uint32", "float32"};

Library library_of(nb::handle value) {
  Python& py = python();
  if (Py_TYPE(value.ptr()) == reinterpret_cast<PyTypeObject*>(py.numpy_ndarray.ptr())) {
    return Library::numpy;
  }
  if (!py.torch_tensor.is_valid()) {
    if (nb::handle torch = imported_module("torch"); torch.is_valid()) {
      py.torch_tensor = torch.attr("Tensor");
      // The C exporter behind torch.utils.dlpack.to_dlpack; `__dlpack__` would add Python checks
      // and a stream handshake per call. Without it, tensors go through `__dlpack__`.
      nb::object to_capsule = nb::getattr(torch.attr("_C"), "_to_dlpack", nb::none());
      py.torch_to_capsule = to_capsule.is_none() ? nb::object() : to_capsule;
      nb::object raw_stream =
          nb::getattr(torch.attr("_C"), "_cuda_getCurrentRawStream", nb::none());
      py.torch_stream = raw_stream.is_none() ? nb::object() : raw_stream;
      py.torch_device_stream = torch.attr("cuda").attr("current_stream");
      // By Element; no call asks PyTorch for uint32 (lbp's counts are int32 there), whose
      // uint32 has few operations.
      const char* names[] = {"uint8", "int32", "int32", "float32"};
      for (int e = 0; e < 4; ++e) py.torch_dtype[e] = torch.attr(names[e]);
    }
  }
  if (py.torch_tensor.is_valid() && PyObject_IsInstance(value.ptr(), py.torch_tensor.ptr()) == 1) {
    return Library::torch;
  }
  if (!py.cupy_ndarray.is_valid()) {
    if (nb::handle cupy = imported_module("cupy"); cupy.is_valid()) {
      py.cupy_ndarray = cupy.attr("ndarray");
      py.cupy_stream = cupy.attr("cuda").attr("get_current_stream");
      py.cupy_empty = nb::module_::import_("kbench").attr("_empty_cupy");
    }
  }
  if (py.cupy_ndarray.is_valid() && PyObject_IsInstance(value.ptr(), py.cupy_ndarray.ptr()) == 1) {
    return Library::cupy;
  }
  return Library::other;
}

std::string class_name(nb::handle value) {
  return nb::type_name(value.type()).c_str();
}

// The NumPy name of a DLPack dtype (uint8, float64, bool, ...).
std::string dtype_name(nb::dlpack::dtype dtype) {
  using Code = nb::dlpack::dtype_code;
  const std::string bits = std::to_string(dtype.bits);
  switch (Code(dtype.code)) {
    case Code::Int:
      return "int" + bits;
    case Code::UInt:
      return "uint" + bits;
    case Code::Float:
      return "float" + bits;
    case Code::Bfloat:
      return "bfloat" + bits;
    case Code::Complex:
      return "complex" + bits;
    case Code::Bool:
      return "bool";
    default:
      return "of DLPack type code " + std::to_string(dtype.code);
  }
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// An array argument, read once: its memory as nanobind sees it and where it came from.
template <class Array>
struct Argument {
  Array array;
  nb::object source;  // the caller's object, or the copy made of it
  Library library = Library::other;
  const char* name = "";
  // The stream the data is ready on, where `__cuda_array_interface__` names one (a cudaStream_t).
  std::uintptr_t interface_stream = 0;

  std::int64_t dim(std::size_t axis) const { return std::int64_t(array.shape(axis)); }
  std::vector<std::int64_t> shape() const {
    std::vector<std::int64_t> s(array.ndim());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = dim(i);
    return s;
  }
  bool on_device() const { return array.device_type() == nb::device::cuda::value; }

  kbench::MemoryPlace place() const {
    if (array.device_type() == nb::device::cpu::value) return kbench::MemoryPlace::host();
    if (on_device()) return kbench::MemoryPlace::cuda(array.device_id());
    type_error(name, "an array in memory kbench cannot reach (neither host nor CUDA)");
  }

  bool is(nb::dlpack::dtype dtype) const { return array.dtype() == dtype; }
  void require_dtype(std::initializer_list<Element> allowed, const char* advice = "") const {
    std::string wanted;
    for (Element e : allowed) {
      if (is(dtype_of(e))) return;
      wanted += (wanted.empty() ? "" : " or ") + std::string(element_names[int(e)]);
    }
    type_error(name, "dtype " + dtype_name(array.dtype()) + "; expected " + wanted + advice);
  }
  void require_nonempty() const {
    if (array.size() == 0) value_error(name, "an empty array (shape " + shape_text(shape()) + ")");
  }

  static nb::dlpack::dtype dtype_of(Element e) {
    switch (e) {
      case Element::u8:
        return nb::dtype<std::uint8_t>();
      case Element::i32:
        return nb::dtype<std::int32_t>();
      case Element::u32:
        return nb::dtype<std::uint32_t>();
      default:
        return nb::dtype<float>();
    }
  }
};

// An array on a CUDA device that offers `__cuda_array_interface__` and not DLPack (Numba's, for
// one), read from the interface's dictionary (version 2 or later).
template <class Array>
void read_cuda_interface(nb::handle value, Argument<Array>& argument) {
  const char* name = argument.name;
  const nb::dict interface = nb::cast<nb::dict>(value.attr("__cuda_array_interface__"));
  const auto [address, read_only] = nb::cast<std::pair<std::uintptr_t, bool>>(interface["data"]);
  if (std::is_same_v<Array, OutArray> && read_only) value_error(name, "the array is read-only");
  const std::string type = nb::cast<std::string>(interface["typestr"]);
  const std::map<char, nb::dlpack::dtype_code> codes{{'u', nb::dlpack::dtype_code::UInt},
                                                     {'i', nb::dlpack::dtype_code::Int},
                                                     {'f', nb::dlpack::dtype_code::Float},
                                                     {'b', nb::dlpack::dtype_code::Bool}};
  const auto code = type.size() >= 3 ? codes.find(type[1]) : codes.end();
  if (code == codes.end() || type[0] == '>') {
    type_error(name, "__cuda_array_interface__ type '" + type + "' is not one kbench reads");
  }
  const int bytes = std::stoi(type.substr(2));
  const nb::dlpack::dtype dtype{std::uint8_t(code->second), std::uint8_t(8 * bytes), 1};
  const auto shape = nb::cast<std::vector<std::size_t>>(interface["shape"]);
  std::vector<std::int64_t> strides;
  if (interface.contains("strides") && !interface["strides"].is_none()) {
    for (const std::int64_t stride : nb::cast<std::vector<std::int64_t>>(interface["strides"])) {
      if (stride % bytes != 0) value_error(name, "strides that are not whole elements");
      strides.push_back(stride / bytes);
    }
  }
  if (interface.contains("stream") && !interface["stream"].is_none()) {
    argument.interface_stream = nb::cast<std::uintptr_t>(interface["stream"]);
  }
  std::size_t elements = 1;
  for (const std::size_t n : shape) elements *= n;
  const int device = elements ? kbench::device_of(reinterpret_cast<void*>(address)) : 0;
  if (device < 0) {
    type_error(name,
               "__cuda_array_interface__ points at memory on no CUDA device kbench can "
               "reach" +
                   std::string(kbench::built_with_cuda() ? "" : " (a build without CUDA)"));
  }
  argument.array =
      Array(reinterpret_cast<void*>(address), shape.size(), shape.data(), value,
            strides.empty() ? nullptr : strides.data(), dtype, nb::device::cuda::value, device);
}

// `value` read as an array without a copy. PyTorch tensors go through their C exporter, arrays
// with neither DLPack nor the buffer protocol through `__cuda_array_interface__`, and lists and
// other objects NumPy can read through numpy.asarray.
template <class Array>
Argument<Array> read_array(nb::handle value, const char* name) {
  Argument<Array> argument;
  argument.name = name;
  argument.source = nb::borrow(value);
  argument.library = library_of(value);
  Python& py = python();
  if (argument.library == Library::torch && py.torch_to_capsule.is_valid()) {
    try {
      if (nb::try_cast(py.torch_to_capsule(value), argument.array)) return argument;
    } catch (const nb::python_error&) {  // e.g. a dtype DLPack lacks: `__dlpack__` says why
    }
  }
  if (nb::try_cast(value, argument.array)) return argument;
  if (argument.library == Library::numpy) {
    // NumPy exports neither object arrays nor, to a writable view, read-only ones.
    if (std::is_same_v<Array, OutArray> && !nb::cast<bool>(value.attr("flags").attr("writeable"))) {
      value_error(name, "the array is read-only");
    }
    type_error(
        name, "dtype " +
                  std::string(nb::steal<nb::str>(PyObject_Str(value.attr("dtype").ptr())).c_str()) +
                  " cannot be read through DLPack");
  }
  if (argument.library != Library::other) {
    type_error(name, "this " + class_name(value) + " cannot be read through DLPack");
  }
  if (nb::hasattr(value, "__cuda_array_interface__")) {
    read_cuda_interface(value, argument);
    return argument;
  }
  nb::object converted;
  try {
    converted = py.numpy_asarray(value);
  } catch (const nb::python_error& e) {
    type_error(name, "cannot be read as a NumPy array (" + std::string(e.what()) + ")");
  }
  return read_array<Array>(converted, name);
}

// A new array of `shape` and `element` where `like` lives: NumPy, or the same CUDA library on the
// same device.
template <class Like>
Argument<OutArray> new_array_like(const Argument<Like>& like, const char* name,
                                  const std::vector<std::int64_t>& shape, Element element) {
  Python& py = python();
  nb::tuple dims = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(shape.size())));
  for (std::size_t i = 0; i < shape.size(); ++i) {
    PyTuple_SET_ITEM(dims.ptr(), Py_ssize_t(i), PyLong_FromLongLong(shape[i]));
  }
  nb::object made;
  switch (like.library) {
    case Library::torch:
      made = like.source.attr("new_empty")(dims, nb::arg("dtype") = py.torch_dtype[int(element)]);
      break;
    case Library::cupy:
      made = py.cupy_empty(like.array.device_id(), dims, element_names[int(element)]);
      break;
    default:
      if (like.on_device()) {
        type_error(like.name, "a CUDA array kbench cannot make results like (" +
                                  class_name(like.source) +
                                  "); pass out=, or use PyTorch or CuPy arrays");
      }
      made = py.numpy_empty(dims, py.numpy_dtype[int(element)]);
  }
  return read_array<OutArray>(made, name);
}

const char* library_text(Library library, bool on_device) {
  switch (library) {
    case Library::numpy:
      return "a NumPy array";
    case Library::torch:
      return on_device ? "a torch CUDA array" : "a torch array";
    case Library::cupy:
      return "a cupy CUDA array";
    default:
      return on_device ? "a CUDA array" : "an array";
  }
}

// The caller's output array, checked against the result it is to hold, or a new one.
template <class Like>
Argument<OutArray> output_like(nb::handle out, const char* name, const Argument<Like>& like,
                               const std::vector<std::int64_t>& shape, Element element) {
  if (out.is_none()) return new_array_like(like, name, shape, element);
  const Library library = library_of(out);
  // An array of no library kbench knows may hold results only where the input is CUDA memory.
  if (library != like.library || (library == Library::other && !like.on_device())) {
    type_error(name, std::string(library_text(like.library, like.on_device())) +
                         " like the input, not " + class_name(out));
  }
  Argument<OutArray> result = read_array<OutArray>(out, name);
  if (result.on_device() != like.on_device()) {
    type_error(name,
               "an array in the input's memory (host or CUDA device), not " + class_name(out));
  }
  result.require_dtype({element});
  if (result.shape() != shape) {
    value_error(name,
                "shape " + shape_text(result.shape()) + "; this call writes " + shape_text(shape));
  }
  return result;
}

// The stream a call on `argument` is queued on: its library's current stream on its device.
template <class Array>
kbench::Stream stream_of(const Argument<Array>& argument) {
  if (!argument.on_device()) return {};
  Python& py = python();
  nb::object handle;
  const int device = argument.array.device_id();
  if (argument.library == Library::torch) {
    handle = py.torch_stream.is_valid() ? py.torch_stream(device)
                                        : py.torch_device_stream(device).attr("cuda_stream");
  } else if (argument.library == Library::cupy) {
    handle = py.cupy_stream().attr("ptr");
  } else {
    return {reinterpret_cast<void*>(argument.interface_stream), false};
  }
  return {reinterpret_cast<void*>(nb::cast<std::uintptr_t>(handle)), false};
}

// --- Images -------------------------------------------------------------------------------------

// How an image argument's axes map onto frames: H×W, H×W×C, N×H×W (gray frames) or N×H×W×C.
enum class Form { hw, hwc, nhw, nhwc };

// A uint8 image argument and its form, checked: dtype, not empty, 2 to 4 axes, 1 to 4 channels.
// A 3-axis array is N gray frames where `gray_batches` allows it and its last axis is over 4.
template <class Array>
Form image_form(const Argument<Array>& image, bool gray_batches) {
  image.require_dtype({Element::u8}, " (convert with np.clip(x, 0, 255).astype(np.uint8))");
  image.require_nonempty();
  Form form;
  switch (image.array.ndim()) {
    case 2:
      return Form::hw;
    case 3:
      form = gray_batches && image.dim(2) > 4 ? Form::nhw : Form::hwc;
      break;
    case 4:
      form = Form::nhwc;
      break;
    default:
      value_error(image.name, std::to_string(image.array.ndim()) + " axes (shape " +
                                  shape_text(image.shape()) + "); expected H×W, H×W×C or N×H×W×C");
  }
  const std::int64_t channels = image.dim(image.array.ndim() - 1);
  if (form != Form::nhw && channels > 4) {
    value_error(image.name, std::to_string(channels) + " channels; images have 1 to 4");
  }
  return form;
}

// The frames of an image argument in the library's N×H×W×C order, strides in bytes (the
// strides of axes of length 1 do not matter: NumPy and DLPack may give any value there).
struct Frames {
  std::int64_t n = 1, h = 1, w = 1, c = 1;
  std::int64_t sn = 0, sh = 0, sw = 0, sc = 0;
};

template <class Array>
Frames frames_of(const Argument<Array>& image, Form form) {
  const Array& a = image.array;
  Frames f;
  const int frame_axis = form == Form::nhw || form == Form::nhwc ? 0 : -1;
  const int first = frame_axis + 1;
  const bool has_channels = form == Form::hwc || form == Form::nhwc;
  if (frame_axis == 0) f.n = std::int64_t(a.shape(0));
  f.h = std::int64_t(a.shape(first));
  f.w = std::int64_t(a.shape(first + 1));
  if (has_channels) f.c = std::int64_t(a.shape(first + 2));
  f.sc = f.c > 1 ? a.stride(first + 2) : 1;
  f.sw = f.w > 1 ? a.stride(first + 1) : f.c;
  f.sh = f.h > 1 ? a.stride(first) : f.w * f.c;
  f.sn = f.n > 1 ? a.stride(0) : f.h * f.sh;
  return f;
}

// The shape an output of `frames` takes in a given form.
std::vector<std::int64_t> shape_in_form(Form form, const Frames& f) {
  switch (form) {
    case Form::hw:
      return {f.h, f.w};
    case Form::hwc:
      return {f.h, f.w, f.c};
    case Form::nhw:
      return {f.n, f.h, f.w};
    default:
      return {f.n, f.h, f.w, f.c};
  }
}

// An image argument as a view: in place where each pixel's channels are adjacent and pixels are
// packed along a row (any row and frame stride that keeps rows and frames apart). Otherwise, on
// the host, of a packed copy that `copy` holds; on a device, of a packed copy its own library
// makes (inputs only: an output must be writable in place).
template <class View, class Array>
View image_view(Argument<Array>& image, Form form, std::vector<std::uint8_t>* copy) {
  Frames f = frames_of(image, form);
  const bool in_place = f.sc == 1 && f.sw == f.c && f.sh >= f.w * f.c && f.sn >= f.h * f.sh;
  if (!in_place && image.on_device() && copy) {
    image.source = image.library == Library::torch ? image.source.attr("contiguous")()
                   : image.library == Library::cupy
                       ? nb::module_::import_("cupy").attr("ascontiguousarray")(image.source)
                       : nb::object();
    if (!image.source.is_valid()) {
      value_error(image.name, "each row's pixels must be adjacent in device memory");
    }
    const char* name = image.name;
    image = read_array<Array>(image.source, name);
    return image_view<View>(image, form, copy);
  }
  auto* data = static_cast<std::uint8_t*>(const_cast<void*>(image.array.data()));
  View view{data,     int(f.w),          int(f.h),     int(f.c), std::size_t(f.sh),
            int(f.n), std::size_t(f.sn), image.place()};
  if (in_place) return handed(image.name, view);
  if (!copy) {
    value_error(image.name,
                "the array's layout cannot be written in place (each row's pixels and channels "
                "must be adjacent in memory); pass a C-contiguous array");
  }
  copy->resize(std::size_t(f.n * f.h * f.w * f.c));
  std::uint8_t* to = copy->data();
  for (std::int64_t frame = 0; frame < f.n; ++frame) {
    for (std::int64_t y = 0; y < f.h; ++y) {
      const std::uint8_t* row = data + frame * f.sn + y * f.sh;
      for (std::int64_t x = 0; x < f.w; ++x) {
        for (std::int64_t k = 0; k < f.c; ++k) *to++ = row[x * f.sw + k * f.sc];
      }
    }
  }
  return handed(image.name,
                View{copy->data(), int(f.w), int(f.h), int(f.c), 0, int(f.n), 0, image.place()});
}

// --- Descriptors --------------------------------------------------------------------------------

// A descriptor set argument (rows × 128, uint8 or float32), checked, as a view: in place where
// each row's values are adjacent, otherwise (host memory only) of a packed copy `copy` holds.
kbench::DescriptorView descriptor_view(const Argument<InArray>& set,
                                       std::vector<unsigned char>& copy) {
  set.require_dtype({Element::u8, Element::f32});
  if (set.array.ndim() != 2 || set.dim(1) != kbench::kDescriptorBytes) {
    value_error(set.name, "shape " + shape_text(set.shape()) + "; descriptor sets are N×128");
  }
  set.require_nonempty();
  const bool is_u8 = set.is(nb::dtype<std::uint8_t>());
  const kbench::MemoryPlace place = set.place();
  const std::int64_t rows = set.dim(0), cols = set.dim(1), element = is_u8 ? 1 : 4;
  const std::int64_t row_stride = rows > 1 ? set.array.stride(0) : cols;
  const auto type = is_u8 ? kbench::DescriptorType::u8 : kbench::DescriptorType::f32;
  const auto* data = static_cast<const unsigned char*>(set.array.data());
  if (set.array.stride(1) == 1 && row_stride >= cols) {
    return handed(set.name, kbench::DescriptorView{data, int(rows), type,
                                                   std::size_t(row_stride * element), place});
  }
  if (!place.on_host()) {
    value_error(set.name, "each descriptor's values must be adjacent in device memory");
  }
  copy.resize(std::size_t(rows * cols * element));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < cols; ++k) {
      std::memcpy(copy.data() + (r * cols + k) * element,
                  data + (r * set.array.stride(0) + k * set.array.stride(1)) * element,
                  std::size_t(element));
    }
  }
  return handed(set.name, kbench::DescriptorView{copy.data(), int(rows), type, 0, place});
}

// A 2-D output of 4-byte values whose rows' values are adjacent: its pointer and row pitch.
template <class T>
std::pair<T*, std::size_t> rows_of(const Argument<OutArray>& out) {
  const std::int64_t h = out.dim(0), w = out.dim(1);
  if ((w > 1 && out.array.stride(1) != 1) || (h > 1 && out.array.stride(0) < w)) {
    value_error(out.name, "each row's values must be adjacent in memory");
  }
  return {static_cast<T*>(out.array.data()),
          h > 1 ? std::size_t(out.array.stride(0)) * sizeof(T) : 0};
}

// A NumPy array that owns `values`, in `shape`.
template <class T>
nb::object numpy_of(std::vector<T> values, std::initializer_list<std::size_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(owned->data(), shape, owner));
}

// --- Calls --------------------------------------------------------------------------------------

// The wall time of this thread's last library call, the C++ call alone: the rest of a Python
// call's time is the binding's (perf/python_overhead.py).
thread_local double library_call_us = 0;

// Runs `call` (one kbench:: call) with the GIL released, timing it.
template <class Call>
void without_gil(const Call& call) {
  nb::gil_scoped_release release;
  const auto start = std::chrono::steady_clock::now();
  call();
  library_call_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
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
    value_error(name, e.what());
  }
}

// Built-in masks by name, made once.
const kbench::Mask& builtin_mask_named(const std::string& name) {
  static std::vector<std::pair<std::string, kbench::Mask>> masks;
  for (const auto& [known, mask] : masks) {
    if (known == name) return mask;
  }
  std::string names;
  for (const std::string& known : kbench::builtin_mask_names()) {
    names += (names.empty() ? "" : ", ") + known;
  }
  kbench::Mask mask;
  try {
    mask = kbench::builtin_mask(name);
  } catch (const kbench::Error&) {
    value_error("mask", "'" + name + "' is not a built-in mask (" + names + ")");
  }
  masks.emplace_back(name, std::move(mask));
  return masks.back().second;
}

// `mask`: a built-in mask's name, or the float32 weights kbench/__init__.py checked, which
// `custom` then holds.
const kbench::Mask& mask_of(nb::handle mask, kbench::Mask& custom) {
  if (nb::isinstance<nb::str>(mask)) return builtin_mask_named(nb::cast<std::string>(mask));
  const auto weights = nb::cast<nb::ndarray<const float, nb::ndim<2>, nb::c_contig>>(mask);
  custom.size = int(weights.shape(0));
  custom.weights.assign(weights.data(), weights.data() + weights.size());
  return custom;
}

nb::object conv(nb::handle image, nb::handle mask, const std::string& border, nb::handle out,
                const std::string& variant, const std::string& backend, const std::string& layer) {
  handed_views.clear();
  auto in = read_array<InArray>(image, "image");
  const Form form = image_form(in, false);
  kbench::Mask custom;
  const kbench::Mask& weights = mask_of(mask, custom);
  Frames f = frames_of(in, form);
  if (weights.size > f.h || weights.size > f.w) {
    value_error("mask", std::to_string(weights.size) + "×" + std::to_string(weights.size) +
                            " is larger than the " + std::to_string(f.w) + "×" +
                            std::to_string(f.h) + " image");
  }
  const kbench::ConvOptions options{parsed("border", border, kbench::parse_border), stream_of(in)};
  if (options.border == kbench::Border::crop) {
    f.h -= weights.size - 1;
    f.w -= weights.size - 1;
  }
  auto result = output_like(out, "out", in, shape_in_form(form, f), Element::u8);
  std::vector<std::uint8_t> copy;
  const auto from = image_view<kbench::ConstImageView>(in, form, &copy);
  const auto to = image_view<kbench::ImageView>(result, form, nullptr);
  const kbench::Choice choice = choice_of(variant, backend, layer);
  without_gil([&] { kbench::conv(context(), from, to, weights, options, choice); });
  return result.source;
}

nb::tuple lbp(nb::handle image, const std::string& mapping, const std::string& border,
              nb::handle out, const std::string& variant, const std::string& backend,
              const std::string& layer) {
  handed_views.clear();
  auto in = read_array<InArray>(image, "image");
  const Form form = image_form(in, true);
  kbench::LbpOptions options;
  options.mapping = parsed("mapping", mapping, kbench::parse_lbp_mapping);
  options.border = parsed("border", border, kbench::parse_border);
  options.stream = stream_of(in);
  Frames f = frames_of(in, form);
  if (options.border == kbench::Border::crop) {
    if (f.h < 3 || f.w < 3) {
      value_error("image", std::to_string(f.w) + "×" + std::to_string(f.h) +
                               "; border 'crop' needs at least 3×3");
    }
    f.h -= 2;
    f.w -= 2;
  }
  nb::object codes_out = nb::none(), histogram_out = nb::none();
  if (!out.is_none()) {
    if (!nb::isinstance<nb::tuple>(out) || nb::len(out) != 2) {
      type_error("out", "a (codes, histogram) tuple, not " + class_name(out));
    }
    codes_out = out[0];
    histogram_out = out[1];
  }
  const bool batch = form == Form::nhw || form == Form::nhwc;
  const Form codes_form = batch ? Form::nhw : Form::hw;
  const std::int64_t bins = kbench::lbp_bin_count(options.mapping);
  auto codes = output_like(codes_out, "out[0]", in, shape_in_form(codes_form, f), Element::u8);
  // PyTorch's counts are int32: the same bits while counts stay below 2^31.
  const Element count = in.library == Library::torch ? Element::i32 : Element::u32;
  auto histogram = output_like(
      histogram_out, "out[1]", in,
      batch ? std::vector<std::int64_t>{f.n, bins} : std::vector<std::int64_t>{bins}, count);
  if (count == Element::i32 && f.w * f.h > std::int64_t(INT32_MAX)) {
    value_error("image", "int32 counts cannot hold a frame of 2^31 pixels or more");
  }
  const std::size_t last = histogram.array.ndim() - 1;
  if ((bins > 1 && histogram.array.stride(last) != 1) ||
      (batch && f.n > 1 && histogram.array.stride(0) != bins)) {
    value_error(histogram.name, "a C-contiguous array (frames × bins)");
  }
  std::vector<std::uint8_t> copy;
  const auto from = image_view<kbench::ConstImageView>(in, form, &copy);
  const auto to = image_view<kbench::ImageView>(codes, codes_form, nullptr);
  auto* counts = static_cast<std::uint32_t*>(histogram.array.data());
  const kbench::Choice choice = choice_of(variant, backend, layer);
  without_gil([&] { kbench::lbp(context(), from, to, counts, options, choice); });
  return nb::make_tuple(codes.source, histogram.source);
}

// Target and query of a template search: one image each (H×W or H×W×C), the query no larger.
struct Pair {
  Argument<InArray> target, query;
  Form target_form, query_form;
};

Pair image_pair(nb::handle target, nb::handle query) {
  Pair pair{read_array<InArray>(target, "target"), read_array<InArray>(query, "query"), Form::hw,
            Form::hw};
  for (auto [image, form] :
       {std::pair{&pair.target, &pair.target_form}, std::pair{&pair.query, &pair.query_form}}) {
    *form = image_form(*image, false);
    if (*form == Form::nhwc) {
      value_error(image->name, "4 axes; expected one image, H×W or H×W×C");
    }
  }
  const Frames t = frames_of(pair.target, pair.target_form);
  const Frames q = frames_of(pair.query, pair.query_form);
  if (q.h > t.h || q.w > t.w) {
    value_error("query", std::to_string(q.w) + "×" + std::to_string(q.h) +
                             " is larger than the target " + std::to_string(t.w) + "×" +
                             std::to_string(t.h));
  }
  return pair;
}

nb::object sad_map(nb::handle target, nb::handle query, const std::string& variant,
                   const std::string& backend, const std::string& layer) {
  handed_views.clear();
  Pair pair = image_pair(target, query);
  std::vector<std::uint8_t> target_copy, query_copy;
  const auto t = image_view<kbench::ConstImageView>(pair.target, pair.target_form, &target_copy);
  const auto q = image_view<kbench::ConstImageView>(pair.query, pair.query_form, &query_copy);
  auto map = new_array_like(pair.target, "map", {t.height - q.height + 1, t.width - q.width + 1},
                            Element::i32);
  const auto [data, pitch] = rows_of<std::int32_t>(map);
  const kbench::SadMapView view{data, int(map.dim(1)), int(map.dim(0)), pitch, map.place()};
  const kbench::SadMapOptions options{stream_of(pair.target)};
  const kbench::Choice choice = choice_of(variant, backend, layer);
  without_gil([&] { kbench::sad_map(context(), t, q, handed("map", view), options, choice); });
  return map.source;
}

// The best positions as an int32 NumPy array of rows (row, col, score), best first.
nb::object match(nb::handle target, nb::handle query, int top, int separation,
                 const std::string& method, const std::string& variant, const std::string& backend,
                 const std::string& layer) {
  handed_views.clear();
  Pair pair = image_pair(target, query);
  std::vector<std::uint8_t> target_copy, query_copy;
  const auto t = image_view<kbench::ConstImageView>(pair.target, pair.target_form, &target_copy);
  const auto q = image_view<kbench::ConstImageView>(pair.query, pair.query_form, &query_copy);
  kbench::MatchOptions options;
  options.top = top;
  options.separation = separation;
  options.stream = stream_of(pair.target);
  if (method == "auto") {
    options.method = kbench::MatchMethod::automatic;
  } else if (method == "full") {
    options.method = kbench::MatchMethod::full;
  } else if (method == "pruned") {
    options.method = kbench::MatchMethod::pruned;
  } else {
    value_error("method", "'" + method + "' is not auto, full or pruned");
  }
  const kbench::Choice choice = choice_of(variant, backend, layer);
  std::vector<kbench::SadMatch> found;
  without_gil([&] { found = kbench::match(context(), t, q, options, choice); });
  std::vector<std::int32_t> rows;
  for (const kbench::SadMatch& m : found) rows.insert(rows.end(), {m.row, m.col, m.score});
  return numpy_of(std::move(rows), {found.size(), 3});
}

struct DescriptorPair {
  Argument<InArray> queries, database;
  std::vector<unsigned char> query_copy, database_copy;
  kbench::DescriptorView q, d;
};

void read_descriptors(DescriptorPair& pair, nb::handle queries, nb::handle database) {
  pair.queries = read_array<InArray>(queries, "queries");
  pair.database = read_array<InArray>(database, "database");
  pair.q = descriptor_view(pair.queries, pair.query_copy);
  pair.d = descriptor_view(pair.database, pair.database_copy);
}

// A cemd call's options: its distance and ratio, queued on the stream of the queries' library.
kbench::CemdMatchOptions cemd_options(const std::string& distance, float ratio,
                                      const Argument<InArray>& queries) {
  kbench::CemdMatchOptions options;
  options.distance = parsed("distance", distance, kbench::parse_descriptor_distance);
  options.ratio = ratio;
  options.stream = stream_of(queries);
  return options;
}

// The matches as cemd_match returns them: five NumPy arrays.
nb::tuple match_arrays(const std::vector<kbench::CemdMatch>& found) {
  std::vector<std::int32_t> index, second_index;
  std::vector<float> best, second;
  std::vector<std::uint8_t> accepted;
  for (const kbench::CemdMatch& m : found) {
    index.push_back(m.index);
    best.push_back(m.distance);
    second_index.push_back(m.second_index);
    second.push_back(m.second_distance);
    accepted.push_back(m.accepted ? 1 : 0);
  }
  const std::size_t n = found.size();
  return nb::make_tuple(numpy_of(std::move(index), {n}), numpy_of(std::move(best), {n}),
                        numpy_of(std::move(second_index), {n}), numpy_of(std::move(second), {n}),
                        numpy_of(std::move(accepted), {n}));
}

// Per query: index, distance, second index, second distance, accepted, as five NumPy arrays.
nb::tuple cemd_match(nb::handle queries, nb::handle database, const std::string& distance,
                     float ratio, const std::string& variant, const std::string& backend,
                     const std::string& layer) {
  handed_views.clear();
  DescriptorPair pair;
  read_descriptors(pair, queries, database);
  const kbench::CemdMatchOptions options = cemd_options(distance, ratio, pair.queries);
  const kbench::Choice choice = choice_of(variant, backend, layer);
  std::vector<kbench::CemdMatch> found;
  without_gil([&] { found = kbench::cemd_match(context(), pair.q, pair.d, options, choice); });
  return match_arrays(found);
}

// kbench::CemdPieceMatcher on this thread's context, queued on the queries' library's current
// stream when they are on a device. It holds the queries, and every device piece until
// matches() has waited for the stream (the library reads them after add() returns).
class PieceMatcher {
 public:
  PieceMatcher(nb::handle queries, const std::string& distance, float ratio,
               const std::string& variant, const std::string& backend, const std::string& layer)
      : thread_(std::this_thread::get_id()), queries_(read_array<InArray>(queries, "queries")) {
    handed_views.clear();
    const kbench::DescriptorView view = descriptor_view(queries_, query_copy_);
    matcher_ = std::make_unique<kbench::CemdPieceMatcher>(context(), view,
                                                          cemd_options(distance, ratio, queries_),
                                                          choice_of(variant, backend, layer));
  }

  void add(nb::handle piece, std::int64_t first_row) {
    same_thread();
    handed_views.clear();
    Argument<InArray> rows = read_array<InArray>(piece, "piece");
    std::vector<unsigned char> copy;
    const kbench::DescriptorView view = descriptor_view(rows, copy);
    without_gil([&] { matcher_->add(view, first_row); });
    if (rows.on_device()) held_.push_back(rows.source);
  }

  nb::tuple matches() {
    same_thread();
    std::vector<kbench::CemdMatch> found;
    without_gil([&] { found = matcher_->matches(); });
    held_.clear();
    return match_arrays(found);
  }

 private:
  // The matcher uses the context of the thread that made it.
  void same_thread() const {
    if (std::this_thread::get_id() != thread_) {
      throw kbench::Error("a CemdPieceMatcher is used on the thread that made it");
    }
  }

  std::thread::id thread_;
  Argument<InArray> queries_;
  std::vector<unsigned char> query_copy_;
  std::unique_ptr<kbench::CemdPieceMatcher> matcher_;
  std::vector<nb::object> held_;
};

nb::object cemd_all_pairs(nb::handle queries, nb::handle database, const std::string& distance,
                          const std::string& variant, const std::string& backend,
                          const std::string& layer) {
  handed_views.clear();
  DescriptorPair pair;
  read_descriptors(pair, queries, database);
  const kbench::CemdMatchOptions options =
      cemd_options(distance, kbench::CemdMatchOptions{}.ratio, pair.queries);
  auto matrix = new_array_like(pair.queries, "matrix", {pair.q.rows, pair.d.rows}, Element::f32);
  const auto [data, pitch] = rows_of<float>(matrix);
  const kbench::DistanceMatrixView view{data, pair.q.rows, pair.d.rows, pitch, matrix.place()};
  const kbench::Choice choice = choice_of(variant, backend, layer);
  without_gil([&] {
    kbench::cemd_all_pairs(context(), pair.q, pair.d, handed("matrix", view), options, choice);
  });
  return matrix.source;
}

// --- Information --------------------------------------------------------------------------------

nb::ndarray<nb::numpy, float> builtin_mask(const std::string& name) {
  const kbench::Mask& mask = builtin_mask_named(name);
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

  nb::module_ numpy = nb::module_::import_("numpy");
  Python& py = python();
  py.numpy_ndarray = numpy.attr("ndarray");
  py.numpy_empty = numpy.attr("empty");
  py.numpy_asarray = numpy.attr("asarray");
  for (int e = 0; e < 4; ++e) py.numpy_dtype[e] = numpy.attr("dtype")(element_names[e]);

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
  m.def("conv", &conv, "image"_a, "mask"_a, "border"_a, "out"_a.none(), "variant"_a, "backend"_a,
        "layer"_a);
  m.def("lbp", &lbp, "image"_a, "mapping"_a, "border"_a, "out"_a.none(), "variant"_a, "backend"_a,
        "layer"_a);
  m.def("sad_map", &sad_map, "target"_a, "query"_a, "variant"_a, "backend"_a, "layer"_a);
  m.def("match", &match, "target"_a, "query"_a, "top"_a, "separation"_a, "method"_a, "variant"_a,
        "backend"_a, "layer"_a);
  m.def("cemd_match", &cemd_match, "queries"_a, "database"_a, "distance"_a, "ratio"_a, "variant"_a,
        "backend"_a, "layer"_a);
  m.def("cemd_all_pairs", &cemd_all_pairs, "queries"_a, "database"_a, "distance"_a, "variant"_a,
        "backend"_a, "layer"_a);
  nb::class_<PieceMatcher>(m, "CemdPieceMatcher")
      .def(nb::init<nb::handle, const std::string&, float, const std::string&, const std::string&,
                    const std::string&>(),
           "queries"_a, "distance"_a, "ratio"_a, "variant"_a, "backend"_a, "layer"_a)
      .def("add", &PieceMatcher::add, "piece"_a, "first_row"_a)
      .def("matches", &PieceMatcher::matches);
  m.def("handed_views", [] {
    nb::dict views;
    for (const auto& [name, address] : handed_views) views[name.c_str()] = address;
    return views;
  });
  m.def("library_call_us", [] { return library_call_us; });
  m.def("builtin_mask", &builtin_mask, "name"_a);
  m.def("builtin_mask_names", &kbench::builtin_mask_names);
  m.def("algorithm_names", &kbench::algorithm_names);
  m.def("variants", &variants);
  m.def("devices", &devices);
  m.def("last_run", &last_run);
}
