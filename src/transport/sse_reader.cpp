#include "transport/sse_reader.h"

#include <cstring>

namespace toolbridge::transport {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr long kMaxRetryMs = 24L * 3600 * 1000;

// The first CR or LF in `s` (two vectorised memchr scans beat one byte loop), or npos.
std::size_t line_end(std::string_view s) {
  const void* lf = std::memchr(s.data(), '\n', s.size());
  const std::size_t lf_at = lf ? static_cast<const char*>(lf) - s.data() : s.size();
  const void* cr = std::memchr(s.data(), '\r', lf_at);
  if (cr) return static_cast<const char*>(cr) - s.data();
  return lf ? lf_at : std::string_view::npos;
}
}  // namespace

void SseReader::feed_events(std::string_view bytes, const OnEvent& on_event) {
  if (!bom_checked_) {
    // The BOM may itself arrive split: hold the first bytes until they decide.
    line_.append(bytes);
    const std::size_t n = std::min(line_.size(), kBom.size());
    if (std::string_view(line_).substr(0, n) == kBom.substr(0, n) && n < kBom.size()) return;
    bom_checked_ = true;
    std::string held = std::move(line_);
    line_.clear();
    std::string_view rest(held);
    if (rest.starts_with(kBom)) rest.remove_prefix(kBom.size());
    feed_events(rest, on_event);
    return;
  }
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const std::size_t end = line_end(bytes);
    if (end == std::string_view::npos) {
      line_.append(bytes);
      return;
    }
    if (line_.empty()) {
      line(bytes.substr(0, end), on_event);
    } else {
      line_.append(bytes.substr(0, end));
      const std::string whole = std::move(line_);
      line_.clear();
      line(whole, on_event);
    }
    if (bytes[end] == '\r') {
      if (end + 1 < bytes.size() && bytes[end + 1] == '\n') {
        bytes.remove_prefix(end + 2);
      } else {
        bytes.remove_prefix(end + 1);
        skip_lf_ = true;
      }
    } else {
      bytes.remove_prefix(end + 1);
    }
  }
}

void SseReader::line(std::string_view text, const OnEvent& on_event) {
  if (text.empty()) {
    dispatch(on_event);
    return;
  }
  if (text.front() == ':') return;  // a comment (keep-alive)
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (name == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (name == "event") {
    event_.assign(value);
  } else if (name == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  } else if (name == "retry") {
    long ms = 0;
    bool digits = !value.empty();
    for (char c : value) {
      if (c < '0' || c > '9') {
        digits = false;
        break;
      }
      ms = std::min(ms * 10 + (c - '0'), kMaxRetryMs);
    }
    if (digits) retry_ms_ = ms;
  }
}

void SseReader::dispatch(const OnEvent& on_event) {
  last_id_ = id_;
  if (has_data_) {
    std::string data = std::move(data_);
    on_event(std::string_view(event_), std::move(data));
  }
  data_.clear();
  event_.clear();
  has_data_ = false;
}

}  // namespace toolbridge::transport
