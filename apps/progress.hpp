#pragma once
// A progress line on stderr for work that takes more than a moment: what is being done, the count
// done of the total, the rate and the time left; or, for one long step with no count, how long it
// has run. It is drawn by a thread of its own (so a step that blocks the caller still shows), from
// one second after the start, redrawn a few times a second, and erased when the work ends. Shown
// only when enabled: the tools enable it when stderr is a terminal and --quiet was not given.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace kbench::tools {

class Progress {
 public:
  // The tool-wide switch.
  static bool& enabled() {
    static bool on = false;
    return on;
  }
  static bool terminal() { return ::isatty(STDERR_FILENO) == 1; }

  // `total` units of work (0: one step without a count), counted in `unit` ("queries").
  Progress(std::string program, std::string what, std::int64_t total = 0, std::string unit = "")
      : program_(std::move(program)),
        what_(std::move(what)),
        unit_(std::move(unit)),
        total_(total),
        start_(Clock::now()) {
    if (enabled()) drawer_ = std::thread([this] { draw_loop(); });
  }
  ~Progress() { stop(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Adds `count` units done; any thread may call it.
  void advance(std::int64_t count) { done_ += count; }
  void set_done(std::int64_t count) { done_ = count; }

  // Stops drawing and erases the line.
  void stop() {
    if (!drawer_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    drawer_.join();
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirstDraw{1000};
  static constexpr std::chrono::milliseconds kRedraw{250};

  static std::string duration_text(double seconds) {
    char text[32];
    const long s = long(seconds + 0.5);
    if (s < 60) {
      std::snprintf(text, sizeof text, "%ld s", s);
    } else if (s < 3600) {
      std::snprintf(text, sizeof text, "%ld min %02ld s", s / 60, s % 60);
    } else {
      std::snprintf(text, sizeof text, "%ld h %02ld min", s / 3600, s / 60 % 60);
    }
    return text;
  }

  // A count with an SI prefix: 12.3 k, 4.56 M.
  static std::string count_text(double value) {
    const char* prefixes[] = {"", " k", " M", " G", " T"};
    int p = 0;
    while (value >= 1000 && p < 4) value /= 1000, ++p;
    char text[32];
    std::snprintf(text, sizeof text, p == 0 ? "%.0f%s" : "%.3g%s", value, prefixes[p]);
    return text;
  }

  void draw() {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    std::string line = program_ + ": " + what_;
    if (total_ > 0) {
      const std::int64_t done = std::min<std::int64_t>(done_.load(), total_);
      const double rate = seconds > 0 ? double(done) / seconds : 0;
      char percent[16];
      std::snprintf(percent, sizeof percent, " (%.0f%%)", 100.0 * double(done) / double(total_));
      line += " " + count_text(double(done)) + "/" + count_text(double(total_)) + " " + unit_ +
              percent + ", " + count_text(rate) + " " + unit_ + "/s";
      if (done > 0 && done < total_) {
        line += ", " + duration_text(double(total_ - done) / rate) + " left";
      }
    } else {
      line += "... " + duration_text(seconds);
    }
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  void draw_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, kFirstDraw, [this] { return stopping_; })) return;
    do {
      draw();
    } while (!wake_.wait_for(lock, kRedraw, [this] { return stopping_; }));
  }

  std::string program_, what_, unit_;
  std::int64_t total_;
  Clock::time_point start_;
  std::atomic<std::int64_t> done_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool drawn_ = false;
  std::thread drawer_;
};

}  // namespace kbench::tools
