#pragma once
// The call trace: one JSON line per call, appended to a file by a thread of its own so that
// writing never blocks the call path. Lines are copied into one buffer that the writer swaps
// for an empty one (no allocation per line, nothing freed across threads); at `buffer` lines
// waiting, a line is dropped and counted, never waited for. The file is rotated by size: FILE -> FILE.1 -> FILE.2
// ..., keeping `files` rotated files.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "config/config.h"

namespace toolbridge::telemetry {

class CallTrace {
 public:
  // Opens (appends to) the file; a file that cannot be opened is reported by error() and every
  // line is dropped. `start_writer` false leaves the writer stopped (tests fill the buffer).
  explicit CallTrace(config::Trace options, bool start_writer = true);
  ~CallTrace();  // writes what is buffered, then stops
  CallTrace(const CallTrace&) = delete;
  CallTrace& operator=(const CallTrace&) = delete;

  // Queues one line (without its newline). False if the buffer was full: the line is dropped.
  bool write(std::string_view line) {
    return write_with([line](std::string& out) { out.append(line); });
  }
  // The same, the line appended by `fill(std::string& out)` straight into the buffer (no
  // string of its own per line).
  template <class Fill>
  bool write_with(Fill&& fill) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      if (pending_lines_ >= options_.buffer || !open_) {
        ++dropped_;
        return false;
      }
      fill(pending_);
      pending_ += '\n';
      wake = ++pending_lines_ == wake_at();
    }
    if (wake) wake_.notify_one();
    return true;
  }
  void start_writer();
  // Blocks until every queued line is in the file (tests, shutdown).
  void flush();

  std::uint64_t written() const;
  std::uint64_t dropped() const;
  std::uint64_t rotations() const;
  std::string error() const;  // the last failure to open or write the file, empty if none

 private:
  std::size_t wake_at() const;
  void run();
  void append(const std::string& batch);  // writer thread only
  void write_all(std::string_view bytes);  // writer thread only
  void rotate();                          // writer thread only
  bool reopen();                          // writer thread only

  const config::Trace options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::string pending_;         // lines waiting, each ending in '\n'
  std::size_t pending_lines_ = 0;
  bool stopping_ = false;
  bool busy_ = false;  // the writer holds a batch taken from the queue
  int flushing_ = 0;   // callers waiting in flush(): the writer does not wait for a full batch
  std::uint64_t written_ = 0, dropped_ = 0, rotations_ = 0;
  std::string error_;
  bool open_ = false;  // the file is open (guarded; fd_ itself is the writer's)
  int fd_ = -1;
  std::size_t size_ = 0;  // bytes in the current file
  std::thread writer_;
};

}  // namespace toolbridge::telemetry
