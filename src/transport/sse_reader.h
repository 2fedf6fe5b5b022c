#pragma once
// Incremental Server-Sent Events parser for the client side: bytes in, in any pieces; each
// complete `message` event's data out (multi-line data joined with '\n'). Other event types
// (`endpoint`, custom) are skipped by feed(); feed_events() gives them all.
#include <string>
#include <string_view>
#include <utility>

namespace toolbridge::transport {

class SseReader {
 public:
  template <class OnEvent>
  void feed(std::string_view bytes, OnEvent&& on_event) {
    feed_events(bytes, [&on_event](std::string_view event, std::string data) {
      if (event.empty() || event == "message") on_event(std::move(data));
    });
  }

  // Every event with data, with its type ("" when the stream gave none): the legacy transport
  // needs `endpoint`. `id:` and `retry:` are remembered for reconnecting.
  template <class OnEvent>
  void feed_events(std::string_view bytes, OnEvent&& on_event) {
    pending_.append(bytes);
    std::size_t start = 0;
    for (;;) {
      const std::size_t nl = pending_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string_view line(pending_.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) {
        if (has_data_) on_event(std::string_view(event_), std::move(data_));
        data_.clear();
        event_.clear();
        has_data_ = false;
      } else if (line.starts_with("data:")) {
        if (has_data_) data_ += '\n';
        data_ += field_value(line.substr(5));
        has_data_ = true;
      } else if (line.starts_with("event:")) {
        event_ = std::string(field_value(line.substr(6)));
      } else if (line.starts_with("id:")) {
        last_id_ = std::string(field_value(line.substr(3)));
      } else if (line.starts_with("retry:")) {
        const std::string_view v = field_value(line.substr(6));
        long ms = 0;
        bool digits = !v.empty() && v.size() < 10;
        for (char c : v) {
          if (c < '0' || c > '9') digits = false;
          else ms = ms * 10 + (c - '0');
        }
        if (digits) retry_ms_ = ms;
      }
    }
    pending_.erase(0, start);
  }

  // The last `id:` seen (for Last-Event-ID), and the last `retry:` in ms (-1 if none).
  const std::string& last_id() const { return last_id_; }
  long retry_ms() const { return retry_ms_; }
  // Bytes of an event not yet complete (a bound against endless events).
  std::size_t buffered() const { return pending_.size() + data_.size(); }

 private:
  static std::string_view field_value(std::string_view v) {
    if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    return v;
  }
  std::string pending_, data_, event_, last_id_;
  long retry_ms_ = -1;
  bool has_data_ = false;
};

}  // namespace toolbridge::transport
