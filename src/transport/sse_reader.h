#pragma once
// Incremental Server-Sent Events parser for the client side: bytes in, in any pieces; each
// complete `message` event's data out (multi-line data joined with '\n'). Other event types
// (`endpoint`, custom) are skipped; `id:`, `retry:` and comments need no action here.
#include <string>
#include <string_view>
#include <utility>

namespace toolbridge::transport {

class SseReader {
 public:
  template <class OnEvent>
  void feed(std::string_view bytes, OnEvent&& on_event) {
    pending_.append(bytes);
    std::size_t start = 0;
    for (;;) {
      const std::size_t nl = pending_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string_view line(pending_.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) {
        if (has_data_ && (event_.empty() || event_ == "message")) on_event(std::move(data_));
        data_.clear();
        event_.clear();
        has_data_ = false;
      } else if (line.starts_with("data:")) {
        if (has_data_) data_ += '\n';
        data_ += field_value(line.substr(5));
        has_data_ = true;
      } else if (line.starts_with("event:")) {
        event_ = std::string(field_value(line.substr(6)));
      }
    }
    pending_.erase(0, start);
  }

 private:
  static std::string_view field_value(std::string_view v) {
    if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    return v;
  }
  std::string pending_, data_, event_;
  bool has_data_ = false;
};

}  // namespace toolbridge::transport
