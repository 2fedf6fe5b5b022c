#pragma once
// The cassette's file format (docs/replay.md): calls.jsonl, JSON Lines, append-only. Every line
// is one JSON object whose last member is "sum": the CRC-32 (IEEE 802.3, as zlib's crc32 and
// Python's zlib.crc32), 8 lowercase hex digits, of the line's bytes before `,"sum":` (format 2;
// runs of format 1 sealed their lines with the FNV-1a 64-bit hash, 16 hex digits, which readers
// still take: the number of digits says which). A line that does not end in '\n' or whose sum
// does not match is not a record: the last line of a run cut short (a crash, SIGKILL, a full
// disk) is dropped, the records before it stay readable.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace toolbridge::replay {

// The name of a run's record file inside its directory.
inline constexpr std::string_view kCallsFile = "calls.jsonl";

// The format of the runs this build writes (the run record's "format").
inline constexpr int kFormat = 2;

std::uint64_t fnv1a(std::string_view bytes);
// CRC-32 (reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF), eight bytes a step.
// `crc` continues an earlier sum (crc32(b, crc32(a)) == crc32(a + b)).
std::uint32_t crc32(std::string_view bytes, std::uint32_t crc = 0);

// `body` (a JSON object without its closing brace: `{"kind":"call",...`) sealed into one line:
// body + `,"sum":"HEX"}` + '\n'.
std::string sealed_line(std::string_view body);
// The same in place: `body` becomes its sealed line.
void seal(std::string& body);
// The same for the body that ends `out` from `from` on (appended there by the caller).
void seal_tail(std::string& out, std::size_t from);

// Sealing in two steps, for a writer that seals lines in batches away from where they are built
// (recorder.cpp): the body is followed by a seal of kSealSize bytes whose sum is not yet worked
// out, and seal_in_place() later writes the sum of the line `out[from, end)` into it.
inline constexpr std::size_t kSealSize = 19;  // ,"sum":"01234567"}  and '\n'
void append_seal_placeholder(std::string& out);
void seal_in_place(std::string& out, std::size_t from, std::size_t end);

// The JSON object of one line (without its '\n'), or empty if its sum is missing or wrong.
std::string_view unsealed(std::string_view line);

// What reading a record file found.
struct LogRead {
  std::vector<std::string> records;  // the JSON objects of the whole, valid lines, in order
  bool torn_tail = false;            // the last line was cut short or damaged: dropped
  std::size_t damaged = 0;           // earlier lines that did not verify: skipped
};
// Reads `text`, the content of a record file.
LogRead read_log(std::string_view text);

}  // namespace toolbridge::replay
