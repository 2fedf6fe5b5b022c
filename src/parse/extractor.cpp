#include "parse/extractor.h"

#include <algorithm>
#include <functional>

#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kThink = "<think>";
constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kFence = "```";
// Longer than every marker: text this close to the end may be the start of one.
constexpr std::size_t kHold = 32;

bool all_ws(std::string_view s) {
  return skip_ws(s, 0) == s.size();
}

}  // namespace

void Extractor::feed(std::string_view chunk) {
  if (finished_) return;
  buf_.append(chunk);
  advance(false);
}

void Extractor::finish() {
  if (finished_) return;
  advance(true);
  finished_ = true;
  out_.content = trim(out_.content);
  out_.reasoning = trim(out_.reasoning);
}

void Extractor::advance(bool final) {
  while (step(final)) {
  }
}

void Extractor::add_content(std::size_t from, std::size_t to) {
  if (to <= from) return;
  const std::string_view s = std::string_view(buf_).substr(from, to - from);
  out_.content.append(s);
  if (fresh_ && !all_ws(s)) fresh_ = false;
}

void Extractor::take(Read& r, const Format& by) {
  if (!out_.detected && (!r.calls.empty() || !r.unparsed.empty())) out_.detected = &by;
  for (auto& c : r.calls) out_.calls.push_back(std::move(c));
  for (auto& u : r.unparsed) out_.unparsed.push_back(std::move(u));
  fresh_ = false;
}

bool Extractor::step(bool final) {
  const std::string_view text(buf_);
  if (block_) {
    Read r = block_->read(text, pos_, true, final);
    if (r.status == Read::Status::kNeedMore) return false;
    take(r, *block_);
    const bool moved = r.end > pos_;
    pos_ = std::max(pos_, r.end);
    if (!r.in_block || !moved) block_ = nullptr;  // a block that reads nothing more is over
    return true;
  }
  if (pos_ >= text.size()) return false;
  std::size_t call =
      next(next_call_, [&](std::size_t from) { return format_.find_start(text, from, false); });
  if (fresh_) {
    // A start that only counts at the beginning of the output (llama3_json's bare object).
    const std::size_t q = skip_ws(text, pos_);
    if (q < call && q < text.size() && text[q] == '{' && format_.find_start(text, q, true) == q) {
      call = q;
    }
  }
  const std::size_t think =
      next(next_think_, [&](std::size_t from) { return text.find(kThink, from); });
  // A "</think>" before any call or reasoning: the chat template opened the reasoning.
  const bool implicit = out_.calls.empty() && out_.unparsed.empty() && !out_.has_reasoning;
  const std::size_t think_end =
      implicit ? next(next_think_end_, [&](std::size_t from) { return text.find(kThinkEnd, from); })
               : npos;
  const std::size_t tick = next(next_tick_, [&](std::size_t from) { return text.find('`', from); });
  const std::size_t m = std::min({call, think, think_end, tick});
  if (m == npos) {
    if (final) {
      add_content(pos_, text.size());
      pos_ = text.size();
    } else if (text.size() > pos_ + kHold) {
      add_content(pos_, text.size() - kHold);
      pos_ = text.size() - kHold;
    }
    return false;
  }
  add_content(pos_, m);
  pos_ = m;
  if (m == think_end && m < think) {
    out_.reasoning = out_.content + out_.reasoning;
    out_.content.clear();
    out_.has_reasoning = true;
    fresh_ = true;
    pos_ = m + kThinkEnd.size();
    return true;
  }
  if (m == think) return think_at(m, final);
  if (m == tick && m != call) return code_at(m, final);
  return call_at(m, final);
}

std::size_t Extractor::next(Next& cache, const std::function<std::size_t(std::size_t)>& search) {
  if (cache.at != npos && cache.at >= pos_) return cache.at;
  cache.at = search(std::max(pos_, cache.searched_to));
  // Not found: a marker may still end in the last bytes, so those are searched again.
  cache.searched_to = cache.at != npos ? cache.at : buf_.size() > kHold ? buf_.size() - kHold : 0;
  return cache.at;
}

bool Extractor::think_at(std::size_t m, bool final) {
  const std::string_view text(buf_);
  const std::size_t from = std::max(m + kThink.size(), closer_from_);
  const std::size_t e = text.find(kThinkEnd, from);
  if (e == npos && !final) {
    closer_from_ = text.size() > kThinkEnd.size() ? text.size() - kThinkEnd.size() : 0;
    return false;
  }
  closer_from_ = 0;
  const std::size_t stop = e == npos ? text.size() : e;
  out_.reasoning.append(text.substr(m + kThink.size(), stop - m - kThink.size()));
  out_.has_reasoning = true;
  pos_ = e == npos ? text.size() : e + kThinkEnd.size();
  return true;
}

bool Extractor::code_at(std::size_t m, bool final) {
  const std::string_view text(buf_);
  if (starts_at(text, m, kFence)) {
    const std::size_t from = std::max(m + kFence.size(), closer_from_);
    const std::size_t e = text.find(kFence, from);
    if (e == npos && !final) {
      closer_from_ = text.size() > kFence.size() ? text.size() - kFence.size() : 0;
      return false;
    }
    closer_from_ = 0;
    const std::size_t stop = e == npos ? text.size() : e + kFence.size();
    add_content(m, stop);
    pos_ = stop;
    return true;
  }
  if (!final && cut_marker(text, m, kFence)) return false;
  const std::size_t e = text.find_first_of("`\n", m + 1);
  if (e == npos && !final) return false;
  const std::size_t stop = e == npos ? text.size() : (text[e] == '`' ? e + 1 : m + 1);
  add_content(m, stop);
  pos_ = stop;
  return true;
}

bool Extractor::call_at(std::size_t m, bool final) {
  const std::string_view text(buf_);
  Read r = format_.read(text, m, false, final);
  if (r.status == Read::Status::kNeedMore) return false;
  const bool nothing = r.calls.empty() && r.unparsed.empty() && r.end <= m && !r.in_block;
  if (r.status == Read::Status::kMention || nothing) {
    add_content(m, m + 1);
    pos_ = m + 1;
    return true;
  }
  const Format& by = r.format ? *r.format : format_;
  take(r, by);
  pos_ = std::max(m + 1, r.end);
  if (r.in_block) block_ = &by;
  return true;
}

Extraction extract(const Format& format, std::string_view text) {
  Extractor x(format);
  x.feed(text);
  x.finish();
  return std::move(x).take_result();
}

}  // namespace toolbridge::parse
