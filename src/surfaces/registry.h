#pragma once
// The configured surfaces and their views over the current catalog. Immutable configuration
// (shared_ptr<const config::Surfaces>), views rebuilt lazily when the catalog's version moves:
// a reload swaps the Registry whole.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "config/surfaces.h"
#include "surfaces/view.h"

namespace toolbridge::surfaces {

class Registry {
 public:
  // `surfaces` may be null (no surfaces section).
  explicit Registry(std::shared_ptr<const config::Surfaces> surfaces, const catalog::Catalog& c);

  bool empty() const { return !surfaces_ || surfaces_->list.empty(); }
  bool has(std::string_view name) const { return surfaces_ && surfaces_->find(name); }
  // The view of surface `name` over the catalog as it is now; null if no surface has that name.
  std::shared_ptr<const View> view(std::string_view name) const;
  // Every surface's view, in file order.
  std::vector<std::shared_ptr<const View>> views() const;
  // Why `name` names no surface, for a caller: the names there are, the nearest first.
  std::string unknown_message(std::string_view name) const;

 private:
  void refresh() const;  // under mutex_

  std::shared_ptr<const config::Surfaces> surfaces_;
  const catalog::Catalog& catalog_;
  mutable std::mutex mutex_;
  mutable std::uint64_t built_for_ = UINT64_MAX;
  mutable std::map<std::string, std::shared_ptr<const View>, std::less<>> views_;
};

}  // namespace toolbridge::surfaces
