#include "frontend/token_records_codec.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <iterator>
#include <msgpack.hpp>

#include "json/envelope.h"

namespace toolbridge::frontend {

namespace {

void append_uint(std::string& out, std::uint64_t n) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, p);
}

void append_ids(std::string& out, const std::vector<std::uint32_t>& ids) {
  out += '[';
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    append_uint(out, ids[i]);
  }
  out += ']';
}

void append_logprobs(std::string& out, const std::vector<float>& lps) {
  out += '[';
  for (std::size_t i = 0; i < lps.size(); ++i) {
    if (i) out += ',';
    if (std::isfinite(lps[i])) {
      fmt::format_to(std::back_inserter(out), "{}", lps[i]);
    } else {
      out += "null";
    }
  }
  out += ']';
}

void append_usage(std::string& out, const llm::TokenData& t) {
  out += '{';
  bool first = true;
  for (const auto& [name, v] :
       {std::pair{"prompt_tokens", t.prompt_tokens},
        std::pair{"completion_tokens", t.completion_tokens},
        std::pair{"total_tokens", t.total_tokens}, std::pair{"cached_tokens", t.cached_tokens}}) {
    if (!v) continue;
    if (!first) out += ',';
    first = false;
    fmt::format_to(std::back_inserter(out), R"("{}":{})", name, *v);
  }
  out += '}';
}

void append_record(std::string& out, const llm::TokenRecord& r) {
  const auto& t = r.tokens;
  fmt::format_to(std::back_inserter(out),
                 R"({{"turn":{},"model":{},"worker":{},"endpoint":{},"stream":{},"status":{},)"
                 R"("complete":{},"messages_hash":{},"time_ms":{},)"
                 R"("timings":{{"queue_s":{:.6f},"ttft_s":{:.6f},"total_s":{:.6f}}},"shape":{},)",
                 r.turn, json::quote(r.model), json::quote(r.worker), json::quote(r.endpoint),
                 r.stream, r.status, r.complete, json::quote(r.messages_hash), r.time_ms, r.queue_s,
                 r.ttft_s, r.total_s, t.shape.empty() ? std::string("null") : json::quote(t.shape));
  out += R"("usage":)";
  append_usage(out, t);
  out += R"(,"prompt_token_ids":)";
  append_ids(out, t.prompt_ids);
  out += R"(,"completion_token_ids":)";
  append_ids(out, t.completion_ids);
  out += R"(,"completion_logprobs":)";
  append_logprobs(out, t.completion_logprobs);
  fmt::format_to(std::back_inserter(out), R"(,"finish_reason":{},"truncated":{},"malformed":{}}})",
                 t.finish_reason.empty() ? std::string("null") : json::quote(t.finish_reason),
                 t.truncated, t.malformed);
}

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_str(Packer& p, std::string_view s) {
  p.pack_str(static_cast<std::uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

void pack_ids(Packer& p, const std::vector<std::uint32_t>& ids) {
  p.pack_array(static_cast<std::uint32_t>(ids.size()));
  for (auto id : ids) p.pack_uint32(id);
}

void pack_record(Packer& p, const llm::TokenRecord& r) {
  const auto& t = r.tokens;
  p.pack_map(18);  // the keys below
  pack_str(p, "turn");
  p.pack_uint64(r.turn);
  pack_str(p, "model");
  pack_str(p, r.model);
  pack_str(p, "worker");
  pack_str(p, r.worker);
  pack_str(p, "endpoint");
  pack_str(p, r.endpoint);
  pack_str(p, "stream");
  r.stream ? p.pack_true() : p.pack_false();
  pack_str(p, "status");
  p.pack_int(r.status);
  pack_str(p, "complete");
  r.complete ? p.pack_true() : p.pack_false();
  pack_str(p, "messages_hash");
  pack_str(p, r.messages_hash);
  pack_str(p, "time_ms");
  p.pack_int64(r.time_ms);
  pack_str(p, "timings");
  p.pack_map(3);
  pack_str(p, "queue_s");
  p.pack_double(r.queue_s);
  pack_str(p, "ttft_s");
  p.pack_double(r.ttft_s);
  pack_str(p, "total_s");
  p.pack_double(r.total_s);
  pack_str(p, "shape");
  if (t.shape.empty()) {
    p.pack_nil();
  } else {
    pack_str(p, t.shape);
  }
  pack_str(p, "usage");
  const std::pair<const char*, std::optional<std::uint64_t>> usage[] = {
      {"prompt_tokens", t.prompt_tokens},
      {"completion_tokens", t.completion_tokens},
      {"total_tokens", t.total_tokens},
      {"cached_tokens", t.cached_tokens}};
  std::uint32_t n = 0;
  for (const auto& u : usage) n += u.second ? 1 : 0;
  p.pack_map(n);
  for (const auto& [name, v] : usage) {
    if (!v) continue;
    pack_str(p, name);
    p.pack_uint64(*v);
  }
  pack_str(p, "prompt_token_ids");
  pack_ids(p, t.prompt_ids);
  pack_str(p, "completion_token_ids");
  pack_ids(p, t.completion_ids);
  pack_str(p, "completion_logprobs");
  p.pack_array(static_cast<std::uint32_t>(t.completion_logprobs.size()));
  for (float f : t.completion_logprobs) {
    if (std::isfinite(f)) {
      p.pack_float(f);
    } else {
      p.pack_nil();
    }
  }
  pack_str(p, "finish_reason");
  if (t.finish_reason.empty()) {
    p.pack_nil();
  } else {
    pack_str(p, t.finish_reason);
  }
  pack_str(p, "truncated");
  t.truncated ? p.pack_true() : p.pack_false();
  pack_str(p, "malformed");
  p.pack_uint32(t.malformed);
}

}  // namespace

std::string token_records_json(const TokenRecordsView& v) {
  const auto& t = *v.records;
  std::string out;
  fmt::format_to(std::back_inserter(out),
                 R"({{"trajectory":{},"released":{},"expires_in_s":{:.3f},"turns_kept":{},)"
                 R"("turns_dropped":{},"bytes":{},"model_calls":[)",
                 json::quote(v.trajectory), v.released, v.expires_in_s, t.records.size(),
                 t.turns_dropped, t.bytes);
  bool first = true;
  for (const auto& r : t.records) {
    if (!first) out += ',';
    first = false;
    append_record(out, r);
  }
  out += "]}";
  return out;
}

std::string token_records_msgpack(const TokenRecordsView& v) {
  const auto& t = *v.records;
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(7);
  pack_str(p, "trajectory");
  pack_str(p, v.trajectory);
  pack_str(p, "released");
  v.released ? p.pack_true() : p.pack_false();
  pack_str(p, "expires_in_s");
  p.pack_double(v.expires_in_s);
  pack_str(p, "turns_kept");
  p.pack_uint64(t.records.size());
  pack_str(p, "turns_dropped");
  p.pack_uint64(t.turns_dropped);
  pack_str(p, "bytes");
  p.pack_uint64(t.bytes);
  pack_str(p, "model_calls");
  p.pack_array(static_cast<std::uint32_t>(t.records.size()));
  for (const auto& r : t.records) pack_record(p, r);
  return std::string(buf.data(), buf.size());
}

}  // namespace toolbridge::frontend
