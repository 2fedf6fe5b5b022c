#include "telemetry/call_trace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace toolbridge::telemetry {

namespace {
// The writer wakes this often, or at once when this many lines wait: waking a thread per line
// would cost the call path a futex call and a context switch each time. 512 lines (~150 KB)
// keep the two buffers the call path and the writer swap small enough to stay in cache.
constexpr std::chrono::milliseconds kWriteInterval{50};
constexpr std::size_t kWakeAt = 512;
}  // namespace

CallTrace::CallTrace(config::Trace options, bool start) : options_(std::move(options)) {
  reopen();
  if (start) start_writer();
}

CallTrace::~CallTrace() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
  if (fd_ >= 0) ::close(fd_);
}

void CallTrace::start_writer() {
  if (!writer_.joinable()) writer_ = std::thread([this] { run(); });
}

std::size_t CallTrace::wake_at() const { return std::min(kWakeAt, options_.buffer); }

void CallTrace::flush() {
  std::unique_lock lock(mutex_);
  if (!writer_.joinable()) return;
  ++flushing_;
  wake_.notify_one();
  drained_.wait(lock, [this] { return (pending_lines_ == 0 && !busy_) || !open_; });
  --flushing_;
}

std::uint64_t CallTrace::written() const {
  std::lock_guard lock(mutex_);
  return written_;
}
std::uint64_t CallTrace::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}
std::uint64_t CallTrace::rotations() const {
  std::lock_guard lock(mutex_);
  return rotations_;
}
std::string CallTrace::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void CallTrace::run() {
  std::string batch;
  for (;;) {
    std::size_t lines = 0;
    {
      std::unique_lock lock(mutex_);
      busy_ = false;
      drained_.notify_all();
      // A flush with nothing left to write must not wake it: it would spin on the lock the
      // flush needs to see that it is done.
      wake_.wait_for(lock, kWriteInterval, [this] {
        return stopping_ || pending_lines_ >= kWakeAt || (flushing_ > 0 && pending_lines_ > 0);
      });
      if (pending_lines_ == 0) {
        if (stopping_) return;  // everything written
        continue;
      }
      batch.clear();
      batch.swap(pending_);  // the call path gets the emptied buffer (and its capacity) back
      lines = pending_lines_;
      pending_lines_ = 0;
      busy_ = true;
    }
    append(batch);
    std::lock_guard lock(mutex_);
    written_ += lines;
  }
}

void CallTrace::append(const std::string& batch) {
  // Rotation is decided line by line, so no file grows past max_bytes (unless one line does);
  // a batch that fits is written whole, without looking for its lines.
  if (fd_ >= 0 && size_ + batch.size() <= options_.max_bytes) return write_all(batch);
  std::size_t chunk = 0, pos = 0;
  while (pos < batch.size() && fd_ >= 0) {
    const std::size_t eol = batch.find('\n', pos) + 1;  // every line ends with '\n'
    const std::size_t pending = pos - chunk;
    if (size_ + pending > 0 && size_ + pending + (eol - pos) > options_.max_bytes) {
      write_all(std::string_view(batch).substr(chunk, pending));
      rotate();
      chunk = pos;
    }
    pos = eol;
  }
  write_all(std::string_view(batch).substr(chunk));
}

void CallTrace::write_all(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size() && fd_ >= 0) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::lock_guard lock(mutex_);
      error_ = fmt::format("writing {}: {}", options_.file, std::strerror(errno));
      break;  // these lines are lost; the next batch tries again
    }
    done += static_cast<std::size_t>(n);
  }
  size_ += done;
}

void CallTrace::rotate() {
  // FILE.(k-1) -> FILE.k, ..., FILE -> FILE.1; the oldest falls off the end.
  for (std::size_t k = options_.files; k >= 1; --k) {
    const std::string from = k == 1 ? options_.file : fmt::format("{}.{}", options_.file, k - 1);
    const std::string to = fmt::format("{}.{}", options_.file, k);
    std::rename(from.c_str(), to.c_str());
  }
  if (options_.files == 0) ::unlink(options_.file.c_str());
  ::close(fd_);
  fd_ = -1;
  {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  reopen();
  std::lock_guard lock(mutex_);
  ++rotations_;
}

bool CallTrace::reopen() {
  const int fd = ::open(options_.file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    std::lock_guard lock(mutex_);
    error_ = fmt::format("opening {}: {}", options_.file, std::strerror(errno));
    open_ = false;
    drained_.notify_all();
    return false;
  }
  struct stat st {};
  size_ = ::fstat(fd, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
  fd_ = fd;
  std::lock_guard lock(mutex_);
  open_ = true;
  return true;
}

}  // namespace toolbridge::telemetry
