#pragma once
// The files a tool writes, and the checks on its paths before any work.
//
// - An output that is a regular file (new, or existing: a symbolic link is followed to its
//   target) is written to a temporary in the target's folder and renamed over the target only on
//   commit, keeping an existing file's permission bits; until then an older file of that name is
//   intact. A temporary is removed when its OutputFile is destroyed uncommitted, and on SIGINT,
//   SIGTERM, SIGHUP and SIGPIPE (the signal then ends the process as it would have).
// - "-" (standard output), character devices (/dev/null) and FIFOs are written in place: they
//   cannot be taken back, so a tool writes them after its files.
// - Several outputs are committed together: every one is complete before any is renamed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kbench {

// The lower-case extension of a path's file name, without the dot; "" when it has none.
std::string lower_extension(const std::string& path);

// A size for messages: "N bytes", with its MiB or GiB beside it from 1 MiB on; "more than 2^64
// bytes" for the largest value (what saturated arithmetic on a header's claims gives).
std::string byte_count(std::uint64_t bytes);

// "standard output" for "-", else the path in quotes: how messages name an output.
std::string output_name(const std::string& path);

// A path a tool was given, with what it is for ("the input image", "--hist").
struct NamedPath {
  std::string path;
  std::string role;
};

// Refuses (UsageError, before any work) an output that is a folder, equal to an input, or equal
// to another output. Two paths are equal when they name the same file (device and inode, so hard
// and symbolic links count) or, where one does not exist yet, the same absolute path; "-" is
// standard output among the outputs and standard input among the inputs. An input that is a
// stream (a terminal, a FIFO, a device) is not clobbered by writing it, and /dev/null may take
// any number of outputs. Empty paths are skipped.
void check_distinct_paths(const std::vector<NamedPath>& inputs,
                          const std::vector<NamedPath>& outputs);

// Bytes free for an unprivileged writer on the file system that `path` (a file to write) goes
// to; the largest value when unknown (a stream, a device).
std::uint64_t free_bytes_for(const std::string& path);

// True when `path` is written in place: "-", a character device or a FIFO.
bool writes_in_place(const std::string& path);

class OutputFile {
 public:
  // Opens the output now, so a missing folder or a read-only target fails before any work: the
  // temporary for a regular file, the stream or device itself otherwise.
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Checks that `path` can be written (its folder exists and takes a new file) without keeping
  // anything there: for a run that opens its outputs only when their contents are ready (an MPI
  // job, whose ranks can be killed by another rank's failure). Streams and devices are not opened.
  static void check_writable(const std::string& path);

  const std::string& path() const { return path_; }
  bool in_place() const { return in_place_; }

  void write(const void* data, std::size_t bytes);
  void write(const std::string& text) { write(text.data(), text.size()); }

  // Flushes and closes the file: every write error surfaces here at the latest.
  void finish();
  // finish(), then renames the temporary over the target (nothing more in place).
  void commit();

 private:
  [[noreturn]] void fail(const std::string& doing) const;

  std::string path_;       // as given
  std::string target_;     // the file renamed over: path_ with symbolic links followed
  std::string temporary_;  // empty in place
  void* file_ = nullptr;   // std::FILE*
  int slot_ = -1;          // the temporary's place in the signal handler's list
  bool in_place_ = false;
  bool committed_ = false;
};

// Writes `text` to `path` through an OutputFile, committed when complete.
void write_file(const std::string& path, const std::string& text);

// An output and what writes it.
struct PendingOutput {
  OutputFile* file;
  std::function<void(OutputFile&)> write;
};

// Writes and commits `outputs` as one: the files are written and finished first, then the
// streams and devices (which cannot be taken back), then every file is renamed over its target.
// A failure before the renames leaves every target as it was; destroying the OutputFiles then
// removes their temporaries.
void write_and_commit(const std::vector<PendingOutput>& outputs);

}  // namespace kbench
