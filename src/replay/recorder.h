#pragma once
// Writes a run's cassette (gateway.record, docs/replay.md): DIR/RUN/calls.jsonl, one sealed
// JSON line per record (record_format.h). A call's line is built on the gateway's thread and
// waits in a buffer; every 100 ms (or soon after 512 lines or 1 MiB wait) the lines are sealed and
// handed to the kernel in one write(2), from the gateway's thread in a handler of its own: a write
// into the page cache costs tens of microseconds, and a writer thread cost more (its wake-ups on
// the other CPU made every call dearer: docs/replay.md "Cost"). If one write takes 20 ms or more
// (the disk stalls), a writer thread takes the writes over for the rest of the run, so calls wait
// for the disk at most once. What a crash loses is at most the lines of the last 100 ms and a torn
// last line, which readers drop. Past `max_bytes` nothing more is recorded: logged once, counted
// in toolbridge_record_dropped_total{reason="full"}.
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "config/config.h"
#include "telemetry/metrics.h"

namespace toolbridge::replay {

// One call as recorded.
struct CallEntry {
  std::string_view trajectory;
  std::string_view server;
  std::string_view tool;       // the server's own name
  std::string_view arguments;  // canonical JSON
  std::uint64_t occurrence = 1;
  bool error = false;        // `answer` is a JSON-RPC error object, else a result object
  std::string_view answer;   // as the server sent it
  std::int64_t at_ms = 0;    // wall time the call arrived, ms since the Unix epoch
  double queued_ms = 0;      // arrival to first send
  double duration_ms = 0;    // arrival to answer
  std::string_view fingerprint;
};

// A server's fingerprint record.
struct ServerEntry {
  std::string_view server;
  std::string_view name;     // serverInfo.name
  std::string_view version;  // serverInfo.version
  std::string_view tools;    // its tools/list `tools` array, raw JSON
};

class Recorder {
 public:
  // Makes the run directory under config.path (error() says why if it cannot).
  Recorder(const config::Record& config, telemetry::Metrics& metrics, const base::Clock& clock);
  ~Recorder();  // writes what is queued, then stops the writer
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  const std::string& error() const { return error_; }
  const std::string& run_dir() const { return run_dir_; }
  // Writes from the thread that runs `executor` (the gateway's), after any fork; the first
  // write that takes `slow_write` or longer starts the writer thread instead.
  void start(boost::asio::any_io_executor executor,
             std::chrono::milliseconds slow_write = std::chrono::milliseconds(20));
  // Starts the writer thread at once (tests; start() starts it after a slow write).
  void start_writer();
  // Whether the writer thread writes (else the executor's thread does, or nothing has started).
  bool writes_on_thread() const { return writer_.joinable(); }

  // The fingerprint of `server`'s tool list (its hash, 16 hex digits), writing a server
  // record first when it is new or changed.
  std::string fingerprint(const ServerEntry& server);
  void record(const CallEntry& call);
  // Waits until every line queued so far is written (tests, shutdown).
  void flush();

 private:
  // Queues a line for the writer; false if it is not written (full, or writing failed). Only
  // calls' lines count as dropped.
  bool enqueue(const std::string& body, bool is_call = false);
  // The line did not fit under max_bytes: counted (if a call's), logged once.
  void cassette_full(bool is_call);
  void write_loop();
  // Waits for the next interval's write on the executor's thread.
  void arm();
  // Seals and writes what waits, on the executor's thread.
  void write_here();
  // A line was queued; `many`: as many lines wait as the writer is woken for.
  void queued(bool many);
  // Swaps the lines waiting (and their ends) into `batch` and `ends`; mutex_ held.
  void take_pending(std::string& batch, std::vector<std::size_t>& ends);
  // Works out the sum of every line of `batch` (the lines end at `ends`).
  static void seal_all(std::string& batch, const std::vector<std::size_t>& ends);
  void write_all(const std::string& bytes);

  telemetry::Metrics& metrics_;
  const base::Clock& clock_;
  std::uint64_t& recorded_;  // toolbridge_recorded_calls_total's cell
  std::uint64_t max_bytes_;
  std::string error_;
  std::string run_dir_;
  int fd_ = -1;
  std::uint64_t seq_ = 0;
  std::map<std::string, std::string, std::less<>> fingerprints_;  // server -> last tools hash

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable written_;
  std::string pending_;                    // lines to write, their sums not yet worked out
  std::vector<std::size_t> pending_ends_;  // where each line of pending_ ends
  std::uint64_t bytes_ = 0;  // queued so far, header included
  bool full_logged_ = false;
  std::uint64_t queued_lines_ = 0, written_lines_ = 0;
  int flushing_ = 0;                 // flush() calls waiting
  bool stop_ = false;
  bool write_failed_ = false;
  std::thread writer_;

  // Writing on the executor's thread (start()).
  std::optional<boost::asio::any_io_executor> executor_;
  std::unique_ptr<base::Timer> timer_;
  std::chrono::milliseconds slow_write_{20};
  bool write_posted_ = false;
  std::string here_batch_;  // the buffer swapped with pending_ (its capacity kept)
  std::vector<std::size_t> here_ends_;
  // Handlers posted to the executor hold it weakly: one that runs after the recorder is gone
  // does nothing.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace toolbridge::replay
