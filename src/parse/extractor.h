#pragma once
// Reads a model's output in one format, whole or chunk by chunk: reasoning, the content with the
// calls taken out, the calls as written, and what could not be read. The same text gives the
// same result however it is split into chunks; a call is settled (and reported) as soon as the
// text that ends it has arrived.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parse/format.h"

namespace toolbridge::parse {

struct Extraction {
  std::string content;    // the output without calls and reasoning (trimmed by finish())
  std::string reasoning;  // <think>…</think> (trimmed by finish())
  bool has_reasoning = false;
  std::vector<RawCall> calls;
  std::vector<Unparsed> unparsed;
  const Format* detected = nullptr;  // the format of the first call read (auto: which one)
};

class Extractor {
 public:
  explicit Extractor(const Format& format) : format_(format) {}

  // Appends a chunk; calls complete in the text so far are added to result().calls.
  void feed(std::string_view chunk);
  // No more text: what is open is read as cut off.
  void finish();
  bool finished() const { return finished_; }
  const Extraction& result() const { return out_; }
  // The result moved out (the extractor is done with).
  Extraction take_result() && { return std::move(out_); }
  std::size_t bytes() const { return buf_.size(); }

 private:
  // The next position of a marker at or after pos_, searched once: text only grows, so a
  // position found stays right until pos_ passes it, and text searched without a find is not
  // searched again (but for its last bytes). Keeps a long output in small chunks linear.
  struct Next {
    std::size_t at = std::string_view::npos;
    std::size_t searched_to = 0;
  };
  std::size_t next(Next& cache, const std::function<std::size_t(std::size_t)>& search);

  void advance(bool final);
  // One step at pos_; false when it must wait for more text.
  bool step(bool final);
  bool call_at(std::size_t m, bool final);
  bool code_at(std::size_t m, bool final);
  bool think_at(std::size_t m, bool final);
  void take(Read& r, const Format& by);
  void add_content(std::size_t from, std::size_t to);

  const Format& format_;
  std::string buf_;
  std::size_t pos_ = 0;
  std::size_t closer_from_ = 0;  // where the search for a pending closer resumes
  Next next_call_, next_think_, next_think_end_, next_tick_;
  const Format* block_ = nullptr;
  bool fresh_ = true;  // the content so far is whitespace only
  bool finished_ = false;
  Extraction out_;
};

// The whole output at once.
Extraction extract(const Format& format, std::string_view text);

}  // namespace toolbridge::parse
