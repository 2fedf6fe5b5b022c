#include "cache/cache_meta.h"

#include <charconv>
#include <cmath>

#include "json/envelope.h"

namespace toolbridge::cache {

namespace {
constexpr std::string_view kUsage =
    R"(_meta["toolbridge/cache"] must be "bypass", "refresh", or a max age: {"max_age_ms": N} )"
    "or N, a whole number of milliseconds";
constexpr double kMaxAgeLimit = 1e15;

bool max_age(const boost::json::value& v, std::int64_t& out) {
  if (!v.is_number()) return false;
  boost::system::error_code ec;
  const double d = v.to_number<double>(ec);
  if (ec || !(d >= 0) || d > kMaxAgeLimit || std::trunc(d) != d) return false;
  out = static_cast<std::int64_t>(d);
  return true;
}
}  // namespace

base::Status read_cache_meta(const boost::json::value& v, std::string& mode,
                             std::int64_t& max_age_ms) {
  if (v.is_string()) {
    if (v.as_string() != "bypass" && v.as_string() != "refresh")
      return base::fail(std::string(kUsage));
    mode = std::string(v.as_string());
    return {};
  }
  if (v.is_object()) {
    const auto& o = v.as_object();
    const auto* age = o.if_contains("max_age_ms");
    if (o.size() != 1 || !age || !max_age(*age, max_age_ms)) return base::fail(std::string(kUsage));
    return {};
  }
  if (!max_age(v, max_age_ms)) return base::fail(std::string(kUsage));
  return {};
}

call::MetaKey request_meta_key() {
  return {kCacheMetaKey, [](call::Call& call, const boost::json::value& v) {
            Request& r = call.slots.get<Request>();
            return read_cache_meta(v, r.mode, r.max_age_ms);
          }};
}

namespace {

// A member's name in a rewritten object, as json::rewrite_object writes it.
void add_name(MetaLayout& out, std::string_view name) {
  if (out.text.size() > 1) out.text += ',';
  out.text += json::quote(name);
  out.text += ':';
}

void add_hole(MetaLayout& out) { out.holes.push_back(out.text.size()); }

void add_layout(MetaLayout& out, const MetaLayout& part) {
  for (const std::size_t hole : part.holes) out.holes.push_back(out.text.size() + hole);
  out.text += part.text;
}

// The new _meta: the old one (if it is an object) with every "toolbridge/cache" member's value
// left out, or the member added last.
MetaLayout meta_layout(std::string_view old_meta) {
  MetaLayout meta;
  meta.text = "{";
  const auto members = old_meta.empty() ? std::nullopt : json::object_members(old_meta);
  bool found = false;
  if (members) {
    for (const auto& m : *members) {
      add_name(meta, m.name);
      if (m.name == kCacheMetaKey) {
        add_hole(meta);
        found = true;
      } else {
        meta.text += m.value.in(old_meta);
      }
    }
  }
  if (!found) {
    add_name(meta, kCacheMetaKey);
    add_hole(meta);
  }
  meta.text += '}';
  return meta;
}

}  // namespace

// The result rebuilt as json::rewrite_object does (names re-quoted, no whitespace between
// members), every _meta member replaced by the new _meta, which the last _meta is made from.
std::optional<MetaLayout> cache_meta_layout(std::string_view result) {
  const auto members = json::object_members(result);
  if (!members) return std::nullopt;
  std::string_view old_meta;
  for (const auto& m : *members) {
    if (m.name == "_meta") old_meta = m.value.in(result);
  }
  const MetaLayout meta = meta_layout(old_meta);
  MetaLayout out;
  out.text.reserve(result.size() + meta.text.size() + 16);
  out.text = "{";
  bool found = false;
  for (const auto& m : *members) {
    add_name(out, m.name);
    if (m.name == "_meta") {
      add_layout(out, meta);
      found = true;
    } else {
      out.text += m.value.in(result);
    }
  }
  if (!found) {
    add_name(out, "_meta");
    add_layout(out, meta);
  }
  out.text += '}';
  return out;
}

std::string with_cache_meta(std::string_view result, std::string_view info) {
  const auto layout = cache_meta_layout(result);
  if (!layout) return std::string(result);
  std::string out;
  out.reserve(layout->text.size() + layout->holes.size() * info.size());
  std::size_t from = 0;
  for (const std::size_t hole : layout->holes) {
    out.append(layout->text, from, hole - from);
    out += info;
    from = hole;
  }
  out.append(layout->text, from);
  return out;
}

void append_hit_info(std::string& out, std::string_view tier, std::int64_t age_ms) {
  char age[24];
  const auto [end, ec] = std::to_chars(age, age + sizeof age, age_ms);
  out += R"({"hit":true,"tier":")";
  out += tier;
  out += R"(","age_ms":)";
  out.append(age, end);
  out += '}';
}

namespace {
constexpr std::string_view kHead = R"({"jsonrpc":"2.0","id":)";
constexpr std::string_view kResult = R"(,"result":)";
}  // namespace

std::string hit_response(std::string_view id, std::string_view text, std::size_t hole,
                         std::string_view tier, std::int64_t age_ms) {
  constexpr std::size_t kInfo = 64;  // {"hit":true,"tier":"...","age_ms":...} but the tier
  if (id.empty()) id = "null";
  std::string out;
  out.reserve(kHead.size() + id.size() + kResult.size() + text.size() + tier.size() + kInfo);
  out += kHead;
  out += id;
  out += kResult;
  out += text.substr(0, hole);
  append_hit_info(out, tier, age_ms);
  out += text.substr(hole);
  out += '}';
  return out;
}

json::Span result_span(std::string_view id, std::string_view response) {
  const std::size_t at =
      kHead.size() + (id.empty() ? std::string_view("null") : id).size() + kResult.size();
  if (response.size() <= at) return {};
  return json::Span{at, response.size() - at - 1};
}

}  // namespace toolbridge::cache
