#include "replay/recorder.h"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "json/envelope.h"
#include "json/quote.h"
#include "replay/record_format.h"

namespace toolbridge::replay {

namespace {

constexpr std::string_view kRecordedMetric = "toolbridge_recorded_calls_total";
constexpr std::string_view kDroppedMetric = "toolbridge_record_dropped_total";
// Lines are written this often, or soon after this many wait: a write(2) per line would cost
// every call a system call. A write costs tens of microseconds whatever it carries (on ext4, 12
// KB or 60 KB alike), so at 2,000 calls/s a write every 100 ms costs a few tenths of a
// microsecond a call. What a SIGKILL can lose is at most the last interval's lines.
constexpr std::chrono::milliseconds kWriteInterval{100};
constexpr std::size_t kWakeAt = 512;
// Or soon after this many bytes wait (large results): a write on the gateway's thread then takes
// about a millisecond, and what waits in memory stays bounded.
constexpr std::size_t kWriteAtBytes = std::size_t{1} << 20;

std::string run_name(const base::Clock& clock, int attempt) {
  // Names sort in the order runs started (to the millisecond): a directory's latest run is last.
  const auto now = std::chrono::floor<std::chrono::milliseconds>(clock.wall_now());
  const auto secs = std::chrono::floor<std::chrono::seconds>(now);
  std::string name = fmt::format("{:%Y%m%dT%H%M%S}.{:03d}Z-{}", secs,
                                 static_cast<int>((now - secs).count()), ::getpid());
  if (attempt > 0) name += fmt::format("-{}", attempt);
  return name;
}

template <class T>
void append_number(std::string& out, T v) {
  char buf[32];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// Milliseconds with three decimals (a microsecond), from integers: the floating-point
// to_chars reads tables that are cold on a call's path.
void append_ms(std::string& out, double ms) {
  const double us = ms * 1000;
  const std::uint64_t v = us > 0 && us < 1e18 ? static_cast<std::uint64_t>(us + 0.5) : 0;
  append_number(out, v / 1000);
  const char decimals[4] = {'.', static_cast<char>('0' + v / 100 % 10),
                            static_cast<char>('0' + v / 10 % 10), static_cast<char>('0' + v % 10)};
  out.append(decimals, sizeof decimals);
}

// A call record's body (record_format.h), appended to `out` without a temporary:
// {"kind":"call","seq":..,"trajectory":..,...,"result":ANSWER  (or "error":ANSWER).
void append_call(std::string& out, std::uint64_t seq, const CallEntry& c) {
  out.reserve(out.size() + c.answer.size() + c.arguments.size() + c.trajectory.size() + 320);
  out += R"({"kind":"call","seq":)";
  append_number(out, seq);
  out += R"(,"trajectory":)";
  json::append_quoted(out, c.trajectory);
  out += R"(,"server":)";
  json::append_quoted(out, c.server);
  out += R"(,"tool":)";
  json::append_quoted(out, c.tool);
  out += R"(,"arguments":)";
  out += c.arguments;
  out += R"(,"occurrence":)";
  append_number(out, c.occurrence);
  out += R"(,"at_ms":)";
  append_number(out, c.at_ms);
  out += R"(,"queued_ms":)";
  append_ms(out, c.queued_ms);
  out += R"(,"duration_ms":)";
  append_ms(out, c.duration_ms);
  out += R"(,"fingerprint":)";
  json::append_quoted(out, c.fingerprint);
  out += c.error ? R"(,"error":)" : R"(,"result":)";
  out += c.answer;
}

}  // namespace

Recorder::Recorder(const config::Record& config, telemetry::Metrics& metrics,
                   const base::Clock& clock)
    : metrics_(metrics),
      clock_(clock),
      recorded_(metrics.counter_cell(std::string(kRecordedMetric), "")),
      max_bytes_(config.max_bytes) {
  metrics_.describe(std::string(kRecordedMetric), "counter",
                    "Tool calls written to the cassette (gateway.record).");
  metrics_.describe(std::string(kDroppedMetric), "counter",
                    "Tool calls not recorded, by reason (full: the cassette reached "
                    "gateway.record.max_bytes; write_error: the disk refused a write).");
  std::error_code ec;
  std::filesystem::create_directories(config.path, ec);
  if (ec) {
    error_ = fmt::format("record: cannot make {}: {}", config.path, ec.message());
    return;
  }
  for (int attempt = 0; attempt < 100 && run_dir_.empty(); ++attempt) {
    const std::string dir = config.path + "/" + run_name(clock, attempt);
    if (::mkdir(dir.c_str(), 0755) == 0) {
      run_dir_ = dir;
    } else if (errno != EEXIST) {
      error_ = fmt::format("record: cannot make {}: {}", dir, std::strerror(errno));
      return;
    }
  }
  const std::string file = run_dir_ + "/" + std::string(kCallsFile);
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = fmt::format("record: cannot create {}: {}", file, std::strerror(errno));
    return;
  }
  const auto started = std::chrono::floor<std::chrono::milliseconds>(clock.wall_now());
  const std::string name = run_dir_.substr(run_dir_.rfind('/') + 1);
  enqueue(fmt::format(R"({{"kind":"run","format":{},"run":{},"started":"{:%FT%TZ}")", kFormat,
                      json::quote(name), started));
}

Recorder::~Recorder() {
  alive_.reset();
  if (timer_) timer_->cancel();
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) {
    writer_.join();
  } else if (fd_ >= 0) {
    seal_all(pending_, pending_ends_);  // never started: write what was queued here
    write_all(pending_);
  }
  if (fd_ >= 0) ::close(fd_);
}

void Recorder::start(boost::asio::any_io_executor executor, std::chrono::milliseconds slow_write) {
  if (fd_ < 0 || writer_.joinable() || timer_) return;
  executor_ = executor;
  slow_write_ = slow_write;
  timer_ = std::make_unique<base::Timer>(executor, clock_);
  arm();
}

void Recorder::start_writer() {
  if (fd_ >= 0 && !writer_.joinable()) writer_ = std::thread([this] { write_loop(); });
}

void Recorder::arm() {
  timer_->expires_after(kWriteInterval);
  timer_->async_wait([this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
    if (ec || alive.expired()) return;
    write_here();
    if (!writer_.joinable()) arm();
  });
}

void Recorder::queued(bool many) {
  if (!many) return;
  if (writer_.joinable()) {
    wake_.notify_one();
  } else if (executor_ && !write_posted_) {
    // After the handler that queued it (the call is answered first).
    write_posted_ = true;
    boost::asio::post(*executor_, [this, alive = std::weak_ptr<int>(alive_)] {
      if (!alive.expired()) write_here();
    });
  }
}

void Recorder::write_here() {
  write_posted_ = false;
  if (writer_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    if (pending_ends_.empty()) return;
    take_pending(here_batch_, here_ends_);
  }
  const auto began = clock_.now();
  seal_all(here_batch_, here_ends_);
  write_all(here_batch_);
  const auto took = clock_.now() - began;
  {
    std::lock_guard lock(mutex_);
    written_lines_ += here_ends_.size();
  }
  if (took >= slow_write_) {
    spdlog::warn(
        "record: writing {} lines to {}/{} took {} ms: a writer thread writes the cassette from "
        "now on, so that calls do not wait for the disk",
        here_ends_.size(), run_dir_, kCallsFile,
        std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    start_writer();
  }
}

std::string Recorder::fingerprint(const ServerEntry& s) {
  const std::string hash = fmt::format("{:016x}", fnv1a(s.tools));
  auto it = fingerprints_.find(s.server);
  if (it != fingerprints_.end() && it->second == hash) return hash;
  fingerprints_[std::string(s.server)] = hash;
  enqueue(fmt::format(
      R"({{"kind":"server","server":{},"name":{},"version":{},"tools_hash":"{}","tools":{})",
      json::quote(s.server), json::quote(s.name), json::quote(s.version), hash,
      s.tools.empty() ? std::string_view("[]") : s.tools));
  return hash;
}

void Recorder::record(const CallEntry& c) {
  if (fd_ < 0) return;
  // The line is built where the next write takes it (at the end of pending_): no allocation of
  // its own and no copy. Its sum is worked out when its batch is written (write_here(), or the
  // writer thread's loop), all the batch's lines together: the CRC's tables stay in cache there,
  // while on a call's path they are cold (their misses cost more than the rest of recording).
  // A write holds the lock only to swap the buffer.
  std::unique_lock lock(mutex_);
  if (write_failed_) {
    lock.unlock();
    metrics_.add(std::string(kDroppedMetric), telemetry::labels({{"reason", "write_error"}}));
    return;
  }
  const std::size_t from = pending_.size();
  if (!full_logged_) {
    append_call(pending_, seq_, c);
    append_seal_placeholder(pending_);
  }
  const std::size_t size = pending_.size() - from;
  if (full_logged_ || bytes_ + size > max_bytes_) {
    pending_.resize(from);
    lock.unlock();
    cassette_full(/*is_call=*/true);
    return;
  }
  bytes_ += size;
  ++queued_lines_;
  pending_ends_.push_back(pending_.size());
  const bool many = pending_ends_.size() >= kWakeAt || pending_.size() >= kWriteAtBytes;
  lock.unlock();
  queued(many);
  ++seq_;
  ++recorded_;
}

void Recorder::cassette_full(bool is_call) {
  if (is_call) metrics_.add(std::string(kDroppedMetric), telemetry::labels({{"reason", "full"}}));
  if (full_logged_) return;
  full_logged_ = true;
  spdlog::error(
      "record: the cassette {} is full ({} bytes, gateway.record.max_bytes {}): later calls are "
      "not recorded (toolbridge_record_dropped_total{{reason=\"full\"}})",
      run_dir_, bytes_, max_bytes_);
}

bool Recorder::enqueue(const std::string& body, bool is_call) {
  if (fd_ < 0) return false;
  // Once a line does not fit, none after it is written: the cassette stays a prefix of the run.
  if (full_logged_ || bytes_ + body.size() + kSealSize > max_bytes_) {
    cassette_full(is_call);
    return false;
  }
  bool many = false;
  {
    std::lock_guard lock(mutex_);
    if (write_failed_) {
      if (is_call)
        metrics_.add(std::string(kDroppedMetric), telemetry::labels({{"reason", "write_error"}}));
      return false;
    }
    bytes_ += body.size() + kSealSize;
    pending_ += body;
    append_seal_placeholder(pending_);
    pending_ends_.push_back(pending_.size());
    ++queued_lines_;
    many = pending_ends_.size() >= kWakeAt || pending_.size() >= kWriteAtBytes;
  }
  queued(many);
  return true;
}

void Recorder::take_pending(std::string& batch, std::vector<std::size_t>& ends) {
  // The call path gets the emptied buffers (and their capacity) back.
  batch.clear();
  batch.swap(pending_);
  ends.clear();
  ends.swap(pending_ends_);
}

void Recorder::seal_all(std::string& batch, const std::vector<std::size_t>& ends) {
  std::size_t from = 0;
  for (const std::size_t end : ends) {
    // A server may answer with JSON laid out on several lines (an HTTP body): outside strings
    // (where JSON has no raw control characters) a line break is whitespace, and a space keeps
    // the record on its one line.
    char* const last = batch.data() + end - kSealSize;
    for (const char c : {'\n', '\r'}) {
      for (char* at = batch.data() + from;
           (at = static_cast<char*>(std::memchr(at, c, static_cast<std::size_t>(last - at))));)
        *at++ = ' ';
    }
    seal_in_place(batch, from, end);
    from = end;
  }
}

void Recorder::write_loop() {
  std::string batch;
  std::vector<std::size_t> ends;
  std::unique_lock lock(mutex_);
  for (;;) {
    // A flush with nothing left to write must not wake it: it would return at once, still
    // holding the lock, and spin so that the flush never got the lock back to see it done.
    wake_.wait_for(lock, kWriteInterval, [this] {
      return stop_ || pending_ends_.size() >= kWakeAt || pending_.size() >= kWriteAtBytes ||
             (flushing_ && !pending_ends_.empty());
    });
    if (pending_ends_.empty()) {
      if (stop_) return;  // everything written
      continue;
    }
    take_pending(batch, ends);
    const std::uint64_t lines = ends.size();
    lock.unlock();
    seal_all(batch, ends);
    write_all(batch);
    lock.lock();
    written_lines_ += lines;
    written_.notify_all();
  }
}

void Recorder::write_all(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spdlog::error("record: writing {}/{} failed: {}; later calls are not recorded", run_dir_,
                    kCallsFile, std::strerror(errno));
      std::lock_guard lock(mutex_);
      write_failed_ = true;
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void Recorder::flush() {
  if (!writer_.joinable()) {
    if (executor_) write_here();  // on the executor's thread, as every write before the thread
    return;
  }
  std::unique_lock lock(mutex_);
  const std::uint64_t target = queued_lines_;
  ++flushing_;
  wake_.notify_one();
  written_.wait(lock, [&] { return written_lines_ >= target || write_failed_; });
  --flushing_;
}

}  // namespace toolbridge::replay
