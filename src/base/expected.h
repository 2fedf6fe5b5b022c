#pragma once
// The one way a function reports a failure it expects: a result that holds either its value or
// a message a person (or a model reading a tool error) can act on. `base::Expected<T>` for a
// value, `base::Status` when success has none. Exceptions stay at the boundaries (a library
// that throws, caught where it is called); an error does not travel as an out-parameter or as
// a string that is empty on success.
//
//   base::Expected<Url> parse_url(const std::string& text);
//   if (auto url = parse_url(text)) use(*url); else log(url.error());
//   return base::fail("invalid URL '" + text + "': no host");
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace toolbridge::base {

// A failure on its way into an Expected or a Status.
struct Unexpected {
  std::string error;
};

// `return base::fail("what went wrong");` from a function returning Expected<T> or Status.
inline Unexpected fail(std::string message) {
  return Unexpected{std::move(message)};
}

namespace detail {
inline const std::string& no_error() {
  static const std::string empty;
  return empty;
}
// U makes a T, and is neither the result itself, a T, nor a failure.
template <class U, class T, class Result>
concept ValueOf =
    std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, Result> &&
    !std::is_same_v<std::remove_cvref_t<U>, T> &&
    !std::is_same_v<std::remove_cvref_t<U>, Unexpected>;
}  // namespace detail

// A value of type T, or the message saying why there is none.
template <class T>
class [[nodiscard]] Expected {
  static_assert(!std::is_reference_v<T> && !std::is_same_v<std::decay_t<T>, Unexpected>);

 public:
  Expected(const T& value) : held_(std::in_place_index<0>, value) {}
  Expected(T&& value) : held_(std::in_place_index<0>, std::move(value)) {}
  Expected(Unexpected failure) : held_(std::in_place_index<1>, std::move(failure.error)) {}
  // Anything T can be made from (a string literal for Expected<std::string>, a derived pointer).
  template <detail::ValueOf<T, Expected> U>
  Expected(U&& value) : held_(std::in_place_index<0>, T(std::forward<U>(value))) {}

  bool ok() const { return held_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // The value; only when ok() (otherwise std::bad_variant_access: a bug, not a failure).
  T& value() & { return std::get<0>(held_); }
  const T& value() const& { return std::get<0>(held_); }
  T&& value() && { return std::get<0>(std::move(held_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Why there is no value; empty when ok().
  const std::string& error() const { return ok() ? detail::no_error() : std::get<1>(held_); }

 private:
  std::variant<T, std::string> held_;
};

// Success, or the message saying what failed.
class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(Unexpected failure) : error_(std::move(failure.error)) {}
  static Status success() { return {}; }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // What failed; empty when ok().
  const std::string& error() const { return error_ ? *error_ : detail::no_error(); }

 private:
  std::optional<std::string> error_;
};

}  // namespace toolbridge::base
