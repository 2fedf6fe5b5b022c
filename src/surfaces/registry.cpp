#include "surfaces/registry.h"

#include <spdlog/spdlog.h>

#include "config/suggestion.h"

namespace toolbridge::surfaces {

namespace bj = boost::json;

Registry::Registry(std::shared_ptr<const config::Surfaces> surfaces, const catalog::Catalog& c)
    : surfaces_(std::move(surfaces)), catalog_(c) {}

void Registry::refresh() const {
  if (built_for_ == catalog_.version() || empty()) return;
  boost::system::error_code ec;
  const bj::value list = bj::parse(catalog_.tools_json(), ec);
  const bj::value* tools =
      !ec && list.is_object() ? list.as_object().if_contains("tools") : nullptr;
  static const bj::array kNone;
  const bj::array& defs = tools && tools->is_array() ? tools->as_array() : kNone;
  std::map<std::string, std::shared_ptr<const View>, std::less<>> views;
  for (const config::Surface& s : surfaces_->list) {
    auto view = View::build(s, defs);
    for (const std::string& problem : view->problems()) spdlog::warn("{}", problem);
    // A run records the surface it saw: a change of what the model sees is worth a line.
    auto old = views_.find(s.name);
    if (old == views_.end()) {
      spdlog::info("surface {}: fingerprint {} ({} tools)", s.name, view->fingerprint(),
                   view->tools().size());
    } else if (old->second->fingerprint() != view->fingerprint()) {
      spdlog::info("surface {}: fingerprint {} -> {} ({} tools)", s.name,
                   old->second->fingerprint(), view->fingerprint(), view->tools().size());
    }
    views.emplace(s.name, std::move(view));
  }
  views_ = std::move(views);
  built_for_ = catalog_.version();
}

std::shared_ptr<const View> Registry::view(std::string_view name) const {
  if (!has(name)) return nullptr;
  std::lock_guard lock(mutex_);
  refresh();
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const View>> Registry::views() const {
  std::vector<std::shared_ptr<const View>> out;
  if (empty()) return out;
  std::lock_guard lock(mutex_);
  refresh();
  for (const config::Surface& s : surfaces_->list) out.push_back(views_.at(s.name));
  return out;
}

std::string Registry::unknown_message(std::string_view name) const {
  std::string msg = "Unknown surface: '" + std::string(name.substr(0, 64)) + "'";
  if (empty()) return msg + "; no surfaces are configured (the `surfaces` section)";
  std::vector<std::string_view> names;
  for (const config::Surface& s : surfaces_->list) names.push_back(s.name);
  const auto near = config::closest(name, names);
  msg += near ? "; did you mean '" + std::string(*near) + "'?" : std::string(".");
  msg += " Configured surfaces: " + config::join_words(names);
  return msg;
}

}  // namespace toolbridge::surfaces
