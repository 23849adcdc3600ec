#include "loaders/base/status.h"

#include <cerrno>
#include <cstring>

namespace loadbench {

namespace {

std::string ErrnoMessage(std::string_view context, int err) {
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  return msg;
}

}  // namespace

Status Status::OfErrno(Code code, std::string_view context, int err, std::string_view tail) {
  std::string msg = ErrnoMessage(context, err);
  msg += tail;
  return Status(code, std::move(msg));
}

Status Status::FromErrno(std::string_view context, int err) {
  std::string msg = ErrnoMessage(context, err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case EACCES:
    case EPERM:
    case ENAMETOOLONG:
    case ELOOP:
      return BadInput(std::move(msg));
    default:
      return IOError(std::move(msg));
  }
}

int Status::exit_code() const {
  switch (code_) {
    case Code::kOk:
      return 0;
    case Code::kBadInput:
      return 2;
    case Code::kNotWritten:
      return 3;
    default:
      return 1;
  }
}

std::string_view Status::code_name() const {
  switch (code_) {
    case Code::kOk:
      return "ok";
    case Code::kBadInput:
      return "bad input";
    case Code::kIOError:
      return "I/O error";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kFailed:
      return "failed";
    case Code::kNotWritten:
      return "not written";
  }
  return "unknown";
}

}  // namespace loadbench
