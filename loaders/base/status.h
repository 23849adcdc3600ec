// Status: the one error value that crosses layers. A function that can fail returns a Status;
// errno becomes a Status in exactly one place (Status::FromErrno).
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace loadbench {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk,
    kBadInput,     // the user's file or arguments are wrong: exit code 2
    kIOError,      // the system refused an operation on good input
    kUnsupported,  // this machine cannot do what was asked; the message says why
    kFailed,       // the operation ran and produced a wrong result (checksum mismatch, ...)
    kNotWritten,   // results could not be written (disk full, I/O error, quota): exit code 3
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status BadInput(std::string msg) { return Status(Code::kBadInput, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Unsupported(std::string msg) { return Status(Code::kUnsupported, std::move(msg)); }
  static Status Failed(std::string msg) { return Status(Code::kFailed, std::move(msg)); }
  static Status NotWritten(std::string msg) { return Status(Code::kNotWritten, std::move(msg)); }

  // "context: strerror(err)". Errors that mean the named path itself is wrong (missing, a
  // directory, not permitted) are kBadInput; the rest are kIOError.
  static Status FromErrno(std::string_view context, int err);
  // "context: strerror(err)" then `tail`, with `code` whatever the error: for an operation on
  // something the user did not name (a socket, a ring, a kernel setting), where even EACCES or
  // ENOENT means the system refused (kIOError) or this machine cannot (kUnsupported), not that
  // the input was wrong.
  static Status OfErrno(Code code, std::string_view context, int err, std::string_view tail = "");
  static Status IOErrorFromErrno(std::string_view context, int err) {
    return OfErrno(Code::kIOError, context, err);
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // Exit code per the CLI contract: 0 ok, 2 bad input, 3 results not written, 1 anything else.
  int exit_code() const;
  std::string_view code_name() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Returns early from the calling function when `expr` is not ok.
#define LB_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::loadbench::Status lb_status_ = (expr); \
    if (!lb_status_.ok()) return lb_status_; \
  } while (0)

}  // namespace loadbench
