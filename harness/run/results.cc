#include "harness/run/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

namespace loadbench {
Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::BadInput("empty directory name");
  for (size_t pos = 1;; ++pos) {
    pos = dir.find('/', pos);
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno(fmt::format("{}: cannot create directory", prefix), errno);
    }
    if (pos == std::string::npos) break;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::BadInput(fmt::format("{}: not a directory", dir));
  }
  return Status::Ok();
}

Status WriteJsonFile(const std::string& path, const nlohmann::ordered_json& value) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno(tmp, errno);
  const std::string text =
      value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  Status s = WriteExact(fd.get(), tmp, text.data(), text.size());
  if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno(fmt::format("{}: fsync", tmp), errno);
  fd.reset();
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno(fmt::format("{}: rename", path), errno);
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status JsonlWriter::Open(const std::string& path) {
  fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_.valid()) return Status::FromErrno(path, errno);
  path_ = path;
  return Status::Ok();
}

Status JsonlWriter::Append(const nlohmann::ordered_json& record) {
  const std::string line =
      record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  LB_RETURN_IF_ERROR(WriteExact(fd_.get(), path_, line.data(), line.size()));
  if (::fdatasync(fd_.get()) != 0) return Status::FromErrno(fmt::format("{}: fdatasync", path_), errno);
  return Status::Ok();
}

}  // namespace loadbench
