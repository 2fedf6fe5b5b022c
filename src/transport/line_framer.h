#pragma once
// Newline-delimited framing of the MCP stdio transport. Bytes arrive in arbitrary chunks; each
// complete line is delivered once, without its terminator. A line longer than the cap poisons
// the framer: the peer is broken and its instance is failed cleanly rather than buffering forever.
#include <cstddef>
#include <string>
#include <string_view>

namespace toolbridge::transport {

class LineFramer {
 public:
  explicit LineFramer(std::size_t max_line_bytes) : max_(max_line_bytes) {}

  // Calls on_line(std::string_view) for every complete, non-blank line in the data seen so far.
  // Returns false once a line has exceeded the cap (and from then on).
  template <class OnLine>
  bool feed(std::string_view bytes, OnLine&& on_line) {
    if (overflowed_) return false;
    buf_.append(bytes);
    std::size_t start = 0;
    for (;;) {
      const std::size_t nl = buf_.find('\n', scanned_);
      if (nl == std::string::npos) break;
      std::string_view line(buf_.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      // The cap applies to every line, however the bytes were chunked.
      if (line.size() > max_) return overflow();
      if (line.find_first_not_of(" \t") != std::string_view::npos) on_line(line);
      start = nl + 1;
      scanned_ = start;
    }
    buf_.erase(0, start);
    scanned_ = buf_.size();
    // A 20 MB answer must not keep 20 MB of buffer for the rest of the instance's life.
    if (buf_.capacity() > kKeptCapacity && buf_.size() < kKeptCapacity / 4)
      std::string(buf_).swap(buf_);
    // An unfinished line may hold one '\r' beyond the cap: its terminator is still arriving.
    const std::size_t pending = buf_.size() - (!buf_.empty() && buf_.back() == '\r' ? 1 : 0);
    if (pending > max_) return overflow();
    return true;
  }

  std::size_t buffered() const { return buf_.size(); }
  std::size_t capacity() const { return buf_.capacity(); }
  // Buffer kept between lines; a larger one left by a long line is given back.
  static constexpr std::size_t kKeptCapacity = 1024 * 1024;
  std::size_t max_line_bytes() const { return max_; }

 private:
  bool overflow() {
    overflowed_ = true;
    buf_.clear();
    scanned_ = 0;
    return false;
  }

 private:
  std::string buf_;
  std::size_t scanned_ = 0;  // bytes of buf_ already searched for '\n'
  std::size_t max_;
  bool overflowed_ = false;
};

}  // namespace toolbridge::transport
