// libFuzzer target: the stdio line framer. The first bytes choose the cap and how the rest is
// chunked; the lines delivered must not depend on the chunking.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "transport/line_framer.h"

namespace {

using toolbridge::transport::LineFramer;

struct Outcome {
  std::vector<std::string> lines;
  bool ok = true;
};

Outcome frame(std::size_t cap, const std::vector<std::string>& chunks) {
  LineFramer framer(cap);
  Outcome out;
  for (const auto& chunk : chunks) {
    out.ok = framer.feed(chunk, [&](std::string_view line) {
      if (line.size() > cap || line.find('\n') != std::string_view::npos) std::abort();
      out.lines.emplace_back(line);
    });
    if (!out.ok) break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::size_t cap = input.ConsumeIntegralInRange<std::size_t>(0, 64);
  std::vector<std::string> chunks;
  std::string whole;
  while (input.remaining_bytes() > 0) {
    const std::size_t n = input.ConsumeIntegralInRange<std::size_t>(0, 16);
    chunks.push_back(input.ConsumeBytesAsString(n));
    whole += chunks.back();
  }
  const Outcome chunked = frame(cap, chunks);
  const Outcome at_once = frame(cap, {whole});
  // Once the cap is hit the framer stops: compare only runs that never overflowed.
  if (chunked.ok && at_once.ok && chunked.lines != at_once.lines) std::abort();
  if (at_once.ok && !chunked.ok) std::abort();
  return 0;
}
