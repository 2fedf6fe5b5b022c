#pragma once
// State one stage keeps for one call (as Envoy's filter state): the stage declares a struct in
// its own folder and reaches it with call.slots.get<T>() (made on first use) or find<T>() (null
// when no one made it). The call knows nothing of the types; a call that no stage marked holds
// no slot and costs nothing.
#include <memory>
#include <utility>
#include <vector>

namespace toolbridge::call {

class Slots {
 public:
  Slots() = default;
  Slots(const Slots& other) { copy_from(other); }
  Slots& operator=(const Slots& other) {
    if (this != &other) {
      slots_.clear();
      copy_from(other);
    }
    return *this;
  }
  Slots(Slots&&) noexcept = default;
  Slots& operator=(Slots&&) noexcept = default;

  template <class T>
  T& get() {
    if (T* found = find<T>()) return *found;
    auto slot = std::make_unique<Slot<T>>();
    T& value = slot->value;
    slots_.emplace_back(&kKey<T>, std::move(slot));
    return value;
  }
  template <class T>
  T* find() const {
    for (const auto& [key, slot] : slots_) {
      if (key == &kKey<T>) return &static_cast<Slot<T>*>(slot.get())->value;
    }
    return nullptr;
  }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual std::unique_ptr<Base> clone() const = 0;
  };
  template <class T>
  struct Slot final : Base {
    T value{};
    std::unique_ptr<Base> clone() const override { return std::make_unique<Slot>(*this); }
  };
  // One address per type, the same in every translation unit.
  template <class T>
  static constexpr char kKey = 0;

  void copy_from(const Slots& other) {
    for (const auto& [key, slot] : other.slots_) slots_.emplace_back(key, slot->clone());
  }

  std::vector<std::pair<const void*, std::unique_ptr<Base>>> slots_;
};

}  // namespace toolbridge::call
