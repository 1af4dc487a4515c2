// Masks: the built-in ones and mask files. Free of Kokkos, so the fuzz build compiles it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"

namespace kbench {

std::vector<std::string> builtin_mask_names() {
  return {"identity", "box", "gaussian", "sharpen", "edge", "emboss"};
}

Mask builtin_mask(const std::string& name) {
  const auto mask3 = [](std::vector<float> w) { return Mask{3, std::move(w)}; };
  if (name == "identity") return mask3({0, 0, 0, 0, 1, 0, 0, 0, 0});
  if (name == "box") return mask3(std::vector<float>(9, 1.f / 9.f));
  if (name == "gaussian") {
    return mask3(
        {1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 4 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 1 / 16.f});
  }
  if (name == "sharpen") return mask3({0, -1, 0, -1, 5, -1, 0, -1, 0});
  if (name == "edge") return mask3({-1, -1, -1, -1, 8, -1, -1, -1, -1});
  if (name == "emboss") return mask3({-2, -1, 0, -1, 1, 1, 0, 1, 2});
  std::string known;
  for (const auto& n : builtin_mask_names()) known += " " + n;
  throw Error("unknown mask '" + name + "' (built-in masks:" + known + ", or a mask file)");
}

namespace {

// A field as a message shows it: bytes other than printable ASCII as \xHH, and long fields cut.
std::string printable(const std::string& field) {
  constexpr std::size_t shown = 40;
  std::string out;
  for (std::size_t i = 0; i < field.size() && i < shown; ++i) {
    const unsigned char c = static_cast<unsigned char>(field[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(c));
      out += hex;
    }
  }
  if (field.size() > shown) out += "...";
  return out;
}

}  // namespace

Mask parse_mask(const std::string& text, const std::string& source) {
  constexpr std::size_t max_count = std::size_t(kMaxMaskSize) * kMaxMaskSize;
  std::vector<float> weights;
  // A UTF-8 byte order mark, which some editors write, is no number; CRs of CRLF line ends are
  // white space to the field reader.
  const bool bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0;
  std::istringstream lines(bom ? text.substr(3) : text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    for (char& ch : line) {
      if (ch == ',' || ch == ';') ch = ' ';
    }
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      // strtod, then float: a value beyond float's range becomes infinite and is refused; one
      // too small for it becomes 0 or subnormal, as a float weight would.
      char* end = nullptr;
      const double value = std::strtod(field.c_str(), &end);
      const float weight = float(value);
      if (end != field.c_str() + field.size() || !std::isfinite(weight)) {
        throw Error(source + ":" + std::to_string(line_number) + ": '" + printable(field) +
                    "' is not a finite number");
      }
      if (weights.size() == max_count) {
        throw Error(source + ": more than " + std::to_string(max_count) +
                    " numbers, which exceeds the largest supported mask, " +
                    std::to_string(kMaxMaskSize) + "x" + std::to_string(kMaxMaskSize));
      }
      weights.push_back(weight);
    }
  }
  const int count = int(weights.size());
  const int n = int(std::lround(std::sqrt(double(count))));
  if (count == 0 || n * n != count) {
    throw Error(source + ": a mask has N×N weights for an odd N; found " + std::to_string(count) +
                " numbers, which is not a square");
  }
  if (n % 2 == 0) {
    throw Error(source + ": mask size " + std::to_string(n) + "x" + std::to_string(n) +
                " is even; masks have an odd size so they have a centre");
  }
  return Mask{n, std::move(weights)};
}

bool is_builtin_mask(const std::string& name) {
  const std::vector<std::string> names = builtin_mask_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

Mask load_mask(const std::string& name_or_path) {
  if (is_builtin_mask(name_or_path)) return builtin_mask(name_or_path);
  const std::string label = "'" + name_or_path + "'";
  const int fd = ::open(name_or_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) builtin_mask(name_or_path);  // throws, naming the built-in masks
    throw Error("cannot open mask file " + label + ": " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::string limit = "the mask reader's limit of " + std::to_string(max_mask_file_bytes) +
                            " bytes (" + std::to_string(max_mask_file_bytes >> 20) + " MiB)";
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    throw Error("cannot read mask file " + label + ": " + std::strerror(errno));
  }
  if (S_ISDIR(status.st_mode)) throw Error(label + " is a folder, not a mask file");
  if (S_ISREG(status.st_mode) && std::uint64_t(status.st_size) > max_mask_file_bytes) {
    throw Error("mask file " + label + " is larger than " + limit + ": it has " +
                std::to_string(status.st_size) + " bytes");
  }
  // One byte past the limit tells a stream (a FIFO, a device) that goes on past it.
  std::string text(max_mask_file_bytes + 1, '\0');
  std::size_t size = 0;
  while (size < text.size()) {
    const ssize_t got = ::read(fd, &text[size], text.size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read mask file " + label + ": " + std::strerror(errno));
    if (got == 0) break;
    size += std::size_t(got);
  }
  if (size > max_mask_file_bytes) {
    throw Error("mask file " + label + " is larger than " + limit);
  }
  text.resize(size);
  return parse_mask(text, name_or_path);
}

}  // namespace kbench
