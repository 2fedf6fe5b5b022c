#pragma once
// Writes a run's cassette (gateway.record, docs/replay.md): DIR/RUN/calls.jsonl, one sealed
// JSON line per record (record_format.h). Lines are built on the caller's thread and written by
// a writer thread, so a call never waits for the disk; the writer wakes every 100 ms (or at 512
// lines waiting) and hands what waits to the kernel, so what a crash loses is at most the lines
// of the last 100 ms and a torn last line, which readers drop. Past `max_bytes` nothing more is
// recorded: logged once, counted in toolbridge_record_dropped_total{reason="full"}.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

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
  // Starts the writer thread (after any fork).
  void start_writer();

  // The fingerprint of `server`'s tool list (its hash, 16 hex digits), writing a server
  // record first when it is new or changed.
  std::string fingerprint(const ServerEntry& server);
  void record(const CallEntry& call);
  // Waits until every line queued so far is written (tests, shutdown).
  void flush();

 private:
  // Queues a line for the writer; false if it is not written (full, or writing failed). Only
  // calls' lines count as dropped.
  bool enqueue(std::string line, bool is_call = false);
  // The line did not fit under max_bytes: counted (if a call's), logged once.
  void cassette_full(bool is_call);
  void write_loop();
  void write_all(const std::string& bytes);

  telemetry::Metrics& metrics_;
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
  std::string pending_;
  std::uint64_t bytes_ = 0;  // queued so far, header included
  bool full_logged_ = false;
  std::uint64_t queued_lines_ = 0, written_lines_ = 0;
  std::uint64_t pending_lines_ = 0;  // in pending_
  int flushing_ = 0;                 // flush() calls waiting
  bool stop_ = false;
  bool write_failed_ = false;
  std::thread writer_;
};

}  // namespace toolbridge::replay
