#include "cache/entry.h"

#include <openssl/evp.h>

#include <charconv>
#include <cstring>

#include "cache/canonical.h"

namespace toolbridge::cache {

namespace {

constexpr std::string_view kRecordMagic = "TB1 ";

void append_length(std::string& out, std::size_t length) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, length);
  out.append(digits, end);
  out.push_back(':');
}

void append_field(std::string& out, std::string_view part) {
  append_length(out, part.size());
  out.append(part);
}

// Writes `part`'s length, ':' and `part` at `to`; returns where it ends.
char* put_field(char* to, std::string_view part) {
  to = std::to_chars(to, to + 20, part.size()).ptr;
  *to++ = ':';
  std::memcpy(to, part.data(), part.size());
  return to + part.size();
}

// Every field of the key but the arguments, written in place (the key is built on every call).
void append_key_head(std::string& key, std::string_view server, std::string_view tool,
                     Scope scope, std::string_view tenant, std::string_view trajectory) {
  const std::string_view who = scope == Scope::kTenant       ? tenant
                               : scope == Scope::kTrajectory ? trajectory
                                                             : std::string_view();
  const std::size_t at = key.size();
  key.resize(at + server.size() + tool.size() + who.size() + 3 * 21 + 1);
  char* to = put_field(key.data() + at, server);
  to = put_field(to, tool);
  switch (scope) {
    case Scope::kGlobal:
      *to++ = 'g';
      break;
    case Scope::kTenant:
      *to++ = 't';
      to = put_field(to, tenant);
      break;
    case Scope::kTrajectory:
      *to++ = 's';
      to = put_field(to, trajectory);
      break;
  }
  key.resize(static_cast<std::size_t>(to - key.data()));
}

// Reads "NUMBER " from the front of `in`.
template <typename T>
bool take_number(std::string_view& in, T& out) {
  auto [ptr, ec] = std::from_chars(in.data(), in.data() + in.size(), out);
  if (ec != std::errc() || ptr == in.data() + in.size() || *ptr != ' ') return false;
  in.remove_prefix(static_cast<std::size_t>(ptr - in.data()) + 1);
  return true;
}

}  // namespace

std::string make_key(std::string_view server, std::string_view tool, Scope scope,
                     std::string_view tenant, std::string_view trajectory,
                     std::string_view canonical_arguments) {
  std::string key;
  key.reserve(server.size() + tool.size() + canonical_arguments.size() + 48);
  append_key_head(key, server, tool, scope, tenant, trajectory);
  append_field(key, canonical_arguments);
  return key;
}

std::string make_key_of_arguments(std::string_view server, std::string_view tool, Scope scope,
                                  std::string_view tenant, std::string_view trajectory,
                                  std::string_view arguments) {
  std::string key;
  const std::string_view who = scope == Scope::kTenant       ? tenant
                               : scope == Scope::kTrajectory ? trajectory
                                                             : std::string_view();
  key.reserve(server.size() + tool.size() + who.size() + arguments.size() + 112);
  append_key_head(key, server, tool, scope, tenant, trajectory);
  const std::size_t at = key.size();
  if (!append_canonical_json(key, arguments)) return {};
  // The length goes before the canonical arguments, known once they are written.
  char digits[24];
  const std::size_t length = key.size() - at;
  char* end = std::to_chars(digits, digits + sizeof digits - 1, length).ptr;
  *end++ = ':';
  const auto n = static_cast<std::size_t>(end - digits);
  key.resize(key.size() + n);
  std::memmove(key.data() + at + n, key.data() + at, length);
  std::memcpy(key.data() + at, digits, n);
  return key;
}

std::string key_digest(std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

std::string encode_record(std::string_view key, const Entry& e) {
  std::string out(kRecordMagic);
  out += std::to_string(e.stored_ms) + " " + std::to_string(e.expires_ms) + " " +
         std::to_string(static_cast<std::int64_t>(e.upstream_seconds * 1e6)) + " " +
         std::to_string(key.size()) + " ";
  out.append(key);
  out.append(e.result);
  return out;
}

std::optional<Entry> decode_record(std::string_view record, std::string_view key) {
  if (!record.starts_with(kRecordMagic)) return std::nullopt;
  record.remove_prefix(kRecordMagic.size());
  Entry e;
  std::int64_t micros = 0;
  std::size_t key_size = 0;
  if (!take_number(record, e.stored_ms) || !take_number(record, e.expires_ms) ||
      !take_number(record, micros) || !take_number(record, key_size)) {
    return std::nullopt;
  }
  if (key_size > record.size() || record.substr(0, key_size) != key) return std::nullopt;
  record.remove_prefix(key_size);
  if (record.empty()) return std::nullopt;
  e.upstream_seconds = static_cast<double>(micros) / 1e6;
  e.result = std::string(record);
  return e;
}

}  // namespace toolbridge::cache
