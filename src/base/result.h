// Result<T>: a value or an Error, used across module boundaries on storage, object-store and
// protocol paths instead of exceptions. Errors say whether a retry may succeed (retryable) and
// whether data was found damaged (corruption), after RocksDB's Status/IOStatus.
// Thread-safety: plain values; no shared state.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace shale {

enum class Errc : int {
  kOk = 0,
  kIoError,          // an I/O call failed (disk, network, object store)
  kNotFound,         // key, object or stream does not exist
  kAlreadyExists,    // create of something that exists
  kCorruption,       // bytes failed a checksum or a format check
  kInvalidArgument,  // caller passed something invalid
  kOutOfRange,       // offset outside the valid range
  kFenced,           // a newer epoch/owner exists; the caller must stop
  kConflict,         // compare-and-put lost a race
  kTimeout,          // deadline passed
  kUnavailable,      // temporarily unavailable (throttled, 503, back-pressure)
  kNoSpace,          // disk or cache full
  kShutdown,         // component is closing
  kUnsupported,      // feature or version not supported
  kInternal,         // invariant broken: a bug
};

const char* errc_name(Errc c) noexcept;

struct Error {
  Errc code = Errc::kInternal;
  std::string message;
  bool retryable = false;

  static Error make(Errc c, std::string msg, bool retryable = false) {
    return Error{c, std::move(msg), retryable};
  }
  std::string to_string() const { return std::string(errc_name(code)) + ": " + message; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error err) : v_(std::move(err)) {}  // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error err) : err_(std::move(err)), ok_(false) {}  // NOLINT

  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return err_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(err_);
  }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

}  // namespace shale

// Propagate an error from an expression returning Result<...>.
#define SHALE_TRY(expr)                                     \
  do {                                                      \
    auto&& _shale_r = (expr);                               \
    if (!_shale_r.ok()) return std::move(_shale_r).error(); \
  } while (0)
