#pragma once
// Incremental Server-Sent Events parser for the client side (the WHATWG event-stream rules):
// bytes in, in any pieces; each complete event out. Lines end with LF, CRLF or a lone CR, split
// anywhere; a leading BOM, comments and unknown fields are skipped; `id:` and `retry:` are kept
// for reconnecting. Every byte is looked at once, so a 1 MB event costs one scan.
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace toolbridge::transport {

class SseReader {
 public:
  // type is "" when the stream named none; data has its lines joined with '\n'.
  using OnEvent = std::function<void(std::string_view type, std::string data)>;

  // Every event with data: the legacy transport needs `endpoint` besides messages.
  void feed_events(std::string_view bytes, const OnEvent& on_event);

  // Only `message` events (type "" or "message"), as their data.
  template <class OnMessage>
  void feed(std::string_view bytes, OnMessage&& on_message) {
    feed_events(bytes, [&on_message](std::string_view type, std::string data) {
      if (type.empty() || type == "message") on_message(std::move(data));
    });
  }

  // The last event id of a dispatched event (for Last-Event-ID), and the last `retry:` in ms
  // (-1 if none).
  const std::string& last_id() const { return last_id_; }
  long retry_ms() const { return retry_ms_; }
  // Bytes of an event not yet complete (a bound against endless events).
  std::size_t buffered() const { return line_.size() + data_.size(); }

 private:
  void line(std::string_view text, const OnEvent& on_event);
  void dispatch(const OnEvent& on_event);

  std::string line_;  // a line not yet ended
  std::string data_, event_, id_, last_id_;
  long retry_ms_ = -1;
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last piece ended with CR: a LF opening the next one belongs to it
  bool bom_checked_ = false;
};

}  // namespace toolbridge::transport
