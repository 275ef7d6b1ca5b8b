// Status and Result<T>: errors as values, in the LevelDB style.
//
// A Status is either OK or a code with a message. Result<T> holds either a value or a non-OK
// Status. Both are cheap to move and safe to use from any thread (they are plain values).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cohort {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,    // the caller sent something malformed (HTTP 400)
  kUnauthenticated,    // missing or bad credentials (HTTP 401)
  kPermissionDenied,   // authenticated but not allowed (HTTP 403)
  kNotFound,           // (HTTP 404)
  kAlreadyExists,      // (HTTP 409)
  kFailedPrecondition, // state does not allow the operation (HTTP 409)
  kPayloadTooLarge,    // a size limit was exceeded (HTTP 413)
  kResourceExhausted,  // rate or capacity limit; retry later (HTTP 429)
  kUnavailable,        // transient: server down, disk full; retry later (HTTP 503)
  kDeadlineExceeded,   // a timeout elapsed
  kCorruption,         // stored data failed a checksum or could not be decoded
  kIOError,            // an operating-system call failed
  kInternal,           // a bug
};

// Returns a stable lower_snake name for `code` ("invalid_argument", ...).
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status PayloadTooLarge(std::string m) { return {StatusCode::kPayloadTooLarge, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: message", or "ok".
  std::string ToString() const;

  bool operator==(const Status& o) const { return code_ == o.code_ && message_ == o.message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cohort

// Propagates a non-OK Status from an expression returning Status.
#define COHORT_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::cohort::Status cohort_status_ = (expr);     \
    if (!cohort_status_.ok()) return cohort_status_; \
  } while (0)

#define COHORT_CONCAT_INNER_(a, b) a##b
#define COHORT_CONCAT_(a, b) COHORT_CONCAT_INNER_(a, b)
// COHORT_ASSIGN_OR_RETURN(auto x, ExprReturningResult());
#define COHORT_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto COHORT_CONCAT_(cohort_result_, __LINE__) = (expr);                    \
  if (!COHORT_CONCAT_(cohort_result_, __LINE__).ok())                        \
    return COHORT_CONCAT_(cohort_result_, __LINE__).status();                \
  lhs = std::move(COHORT_CONCAT_(cohort_result_, __LINE__)).value()
