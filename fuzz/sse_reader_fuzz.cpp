// libFuzzer target: the Server-Sent Events reader. The first bytes choose how the stream is
// chunked; the events, last id and retry must not depend on the chunking.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "transport/sse_reader.h"

namespace {

using toolbridge::transport::SseReader;

struct Outcome {
  std::vector<std::pair<std::string, std::string>> events;
  std::string last_id;
  long retry_ms = -1;
  bool operator==(const Outcome&) const = default;
};

Outcome read(const std::vector<std::string>& chunks) {
  SseReader reader;
  Outcome out;
  for (const auto& chunk : chunks) {
    reader.feed_events(chunk, [&](std::string_view type, std::string data) {
      out.events.emplace_back(std::string(type), std::move(data));
    });
  }
  out.last_id = reader.last_id();
  out.retry_ms = reader.retry_ms();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  std::vector<std::string> chunks;
  std::string whole;
  while (input.remaining_bytes() > 0) {
    const std::size_t n = input.ConsumeIntegralInRange<std::size_t>(0, 16);
    chunks.push_back(input.ConsumeBytesAsString(n));
    whole += chunks.back();
  }
  if (!(read(chunks) == read({whole}))) std::abort();
  return 0;
}
