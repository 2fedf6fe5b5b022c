#pragma once
// The call trace: one JSON line per call, appended to a file by a thread of its own so that
// writing never blocks the call path. Lines wait in a bounded buffer; when it is full a line is
// dropped and counted, never waited for. The file is rotated by size: FILE -> FILE.1 -> FILE.2
// ..., keeping `files` rotated files.
#include <condition_variable>
#include <cstdint>
#include <deque>
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
  bool write(std::string line);
  void start_writer();
  // Blocks until every queued line is in the file (tests, shutdown).
  void flush();

  std::uint64_t written() const;
  std::uint64_t dropped() const;
  std::uint64_t rotations() const;
  std::string error() const;  // the last failure to open or write the file, empty if none

 private:
  void run();
  void append(const std::string& batch);  // writer thread only
  void write_all(std::string_view bytes);  // writer thread only
  void rotate();                          // writer thread only
  bool reopen();                          // writer thread only

  const config::Trace options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<std::string> queue_;
  bool stopping_ = false;
  bool busy_ = false;  // the writer holds a batch taken from the queue
  std::uint64_t written_ = 0, dropped_ = 0, rotations_ = 0;
  std::string error_;
  bool open_ = false;  // the file is open (guarded; fd_ itself is the writer's)
  int fd_ = -1;
  std::size_t size_ = 0;  // bytes in the current file
  std::thread writer_;
};

}  // namespace toolbridge::telemetry
