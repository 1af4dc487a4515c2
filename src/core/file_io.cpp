#include "kbench/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include "kbench/error.hpp"

namespace kbench {
namespace {

namespace fs = std::filesystem;

// --- Temporaries removed on a signal --------------------------------------------------------

// Fixed slots that a signal handler may read: a path is copied in before its slot is marked used,
// and the slot is marked free before it is reused, so the handler sees whole paths only.
constexpr int kTemporarySlots = 32;
constexpr std::size_t kTemporaryPathBytes = 4096;
char temporary_paths[kTemporarySlots][kTemporaryPathBytes];
std::atomic<bool> temporary_used[kTemporarySlots];
std::mutex slot_mutex;

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

extern "C" void remove_temporaries_and_reraise(int signal_number) {
  for (int s = 0; s < kTemporarySlots; ++s) {
    if (temporary_used[s].load()) ::unlink(temporary_paths[s]);
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

// Installs the handler for the signals whose disposition is the default (one the caller set to
// ignore, as nohup does for SIGHUP, stays ignored).
void install_cleanup_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int signal_number : kCleanupSignals) {
      struct sigaction current {};
      if (::sigaction(signal_number, nullptr, &current) != 0) continue;
      if (current.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = remove_temporaries_and_reraise;
      sigemptyset(&action.sa_mask);
      ::sigaction(signal_number, &action, nullptr);
    }
  });
}

// The slot holding `path`, or -1 when every slot is taken or the path is too long (the temporary
// is then still removed on errors, only not on signals).
int register_temporary(const std::string& path) {
  install_cleanup_handler();
  if (path.size() >= kTemporaryPathBytes) return -1;
  const std::lock_guard<std::mutex> lock(slot_mutex);
  for (int s = 0; s < kTemporarySlots; ++s) {
    if (temporary_used[s].load()) continue;
    std::memcpy(temporary_paths[s], path.c_str(), path.size() + 1);
    temporary_used[s].store(true);
    return s;
  }
  return -1;
}

void release_temporary(int slot) {
  if (slot >= 0) temporary_used[slot].store(false);
}

// --- Paths ----------------------------------------------------------------------------------

std::string in_quotes(const std::string& path) {
  return "'" + path + "'";
}

// What a path names: a file's device and inode where it exists, else its absolute path.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string absolute;
  bool folder = false;
  bool stream = false;       // a character device, FIFO or socket: nothing there to clobber
  bool null_device = false;  // /dev/null, which any number of outputs may share

  bool operator==(const Identity& other) const {
    if (exists && other.exists) return device == other.device && inode == other.inode;
    return !exists && !other.exists && absolute == other.absolute;
  }
};

Identity identity_of(const std::string& path, bool input) {
  Identity id;
  struct stat info {};
  const bool standard = path == "-";
  const int found =
      standard ? ::fstat(input ? STDIN_FILENO : STDOUT_FILENO, &info) : ::stat(path.c_str(), &info);
  if (found == 0) {
    id.exists = true;
    id.device = info.st_dev;
    id.inode = info.st_ino;
    id.folder = S_ISDIR(info.st_mode);
    id.stream = S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode);
    struct stat null_info {};
    id.null_device = S_ISCHR(info.st_mode) && ::stat("/dev/null", &null_info) == 0 &&
                     info.st_rdev == null_info.st_rdev;
    return id;
  }
  std::error_code error;
  const fs::path absolute = fs::weakly_canonical(fs::absolute(path, error), error);
  id.absolute = (error ? fs::absolute(path) : absolute).lexically_normal().string();
  return id;
}

std::string describe(const NamedPath& named) {
  return named.role + " " + output_name(named.path);
}

}  // namespace

std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

std::string byte_count(std::uint64_t bytes) {
  if (bytes == UINT64_MAX) return "more than 2^64 bytes";
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes >= (1u << 20)) {
    char scaled[32];
    std::snprintf(scaled, sizeof scaled, " (%.1f %s)",
                  bytes >= (1u << 30) ? double(bytes) / (1u << 30) : double(bytes) / (1u << 20),
                  bytes >= (1u << 30) ? "GiB" : "MiB");
    text += scaled;
  }
  return text;
}

std::string output_name(const std::string& path) {
  return path == "-" ? "standard output" : in_quotes(path);
}

void check_distinct_paths(const std::vector<NamedPath>& inputs,
                          const std::vector<NamedPath>& outputs) {
  std::vector<std::pair<const NamedPath*, Identity>> seen;
  for (const NamedPath& input : inputs) {
    if (!input.path.empty()) seen.emplace_back(&input, identity_of(input.path, true));
  }
  const std::size_t input_count = seen.size();
  for (const NamedPath& output : outputs) {
    if (output.path.empty()) continue;
    const Identity id = identity_of(output.path, false);
    if (id.folder) throw UsageError(describe(output) + " is a folder, not a file to write");
    for (std::size_t k = 0; k < seen.size(); ++k) {
      // Reading a stream does not clobber it (standard input and output may be one terminal);
      // two outputs into one stream would mix, unless it discards them.
      const bool input = k < input_count;
      if (!(seen[k].second == id) || (input && id.stream) || id.null_device) continue;
      throw UsageError(describe(output) + (input ? " is " : " is also ") +
                       describe(*seen[k].first) + "; write it to another file");
    }
    seen.emplace_back(&output, id);
  }
}

std::uint64_t free_bytes_for(const std::string& path) {
  if (writes_in_place(path)) return UINT64_MAX;
  std::error_code error;
  fs::path folder = fs::absolute(path, error).parent_path();
  const fs::space_info space = fs::space(folder, error);
  return error ? UINT64_MAX : std::uint64_t(space.available);
}

bool writes_in_place(const std::string& path) {
  if (path == "-") return true;
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode));
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw UsageError("an output path is empty");
  in_place_ = writes_in_place(path_);
  if (in_place_) {
    if (path_ == "-") {
      file_ = stdout;
    } else {
      file_ = std::fopen(path_.c_str(), "wb");
      if (!file_) fail("open");
    }
    return;
  }
  // A symbolic link is kept and its target replaced, as an editor saving through it would.
  target_ = path_;
  std::error_code error;
  if (fs::is_symlink(path_, error)) {
    const fs::path resolved = fs::weakly_canonical(path_, error);
    if (!error) target_ = resolved.string();
  }
  struct stat existing {};
  const bool replaces = ::stat(target_.c_str(), &existing) == 0;
  if (replaces && S_ISDIR(existing.st_mode)) {
    throw UsageError(output_name(path_) + " is a folder, not a file to write");
  }
  // The process id keeps concurrent writers apart; O_EXCL never reuses a file.
  constexpr int kAttempts = 100;
  int fd = -1;
  for (int attempt = 0; attempt < kAttempts && fd < 0; ++attempt) {
    temporary_ = target_ + ".partial-" + std::to_string(::getpid()) +
                 (attempt ? "-" + std::to_string(attempt) : "");
    fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) {
      throw Error("cannot write " + in_quotes(path_) + ": " + std::strerror(errno));
    }
  }
  if (fd < 0) throw Error("cannot find a free temporary name next to " + in_quotes(path_));
  slot_ = register_temporary(temporary_);
  if (replaces) ::fchmod(fd, existing.st_mode & 07777);
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temporary_.c_str());
    release_temporary(slot_);
    errno = saved;
    fail("write");
  }
}

void OutputFile::check_writable(const std::string& path) {
  if (!writes_in_place(path)) OutputFile probe(path);
}

OutputFile::~OutputFile() {
  auto* file = static_cast<std::FILE*>(file_);
  if (file && file != stdout) std::fclose(file);
  if (!in_place_ && !committed_) ::unlink(temporary_.c_str());
  release_temporary(slot_);
}

void OutputFile::fail(const std::string& doing) const {
  const std::string reason = std::strerror(errno);
  throw Error("cannot " + doing + " " + output_name(path_) + ": " + reason);
}

void OutputFile::write(const void* data, std::size_t bytes) {
  auto* file = static_cast<std::FILE*>(file_);
  if (!file) throw Error("internal error: writing " + output_name(path_) + " after it was closed");
  if (bytes > 0 && std::fwrite(data, 1, bytes, file) != bytes) fail("write");
}

void OutputFile::finish() {
  auto* file = static_cast<std::FILE*>(file_);
  if (!file) return;
  file_ = nullptr;
  if (std::fflush(file) != 0 || std::ferror(file)) {
    const int saved = errno;
    if (file != stdout) std::fclose(file);
    errno = saved;
    fail("write");
  }
  if (file != stdout && std::fclose(file) != 0) fail("write");
}

void OutputFile::commit() {
  finish();
  if (in_place_ || committed_) return;
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0) {
    throw Error("cannot rename " + in_quotes(temporary_) + " to " + in_quotes(target_) + ": " +
                std::strerror(errno));
  }
  committed_ = true;
  release_temporary(slot_);
  slot_ = -1;
}

void write_file(const std::string& path, const std::string& text) {
  OutputFile out(path);
  out.write(text);
  out.commit();
}

void write_and_commit(const std::vector<PendingOutput>& outputs) {
  for (const bool streams : {false, true}) {
    for (const PendingOutput& output : outputs) {
      if (output.file->in_place() != streams) continue;
      output.write(*output.file);
      output.file->finish();
    }
  }
  for (const PendingOutput& output : outputs) output.file->commit();
}

}  // namespace kbench
