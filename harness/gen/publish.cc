#include "harness/gen/publish.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "harness/process/interrupt.h"
#include "harness/process/journal.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kSpaceMargin = 64ull << 20;

}  // namespace

std::string DirOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

Status CheckOutputPath(const std::string& out, const std::string& dir, bool* exists,
                       uint64_t* old_bytes) {
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return Status::BadInput(fmt::format("{}: output directory {} does not exist", out, dir));
    }
    return Status::FromErrno(dir, errno);
  }
  if (!S_ISDIR(dst.st_mode)) {
    return Status::BadInput(fmt::format("{}: {} is not a directory", out, dir));
  }
  struct stat ost {};
  *exists = false;
  *old_bytes = 0;
  if (::stat(out.c_str(), &ost) == 0) {
    if (!S_ISREG(ost.st_mode)) {
      return Status::BadInput(fmt::format("{}: exists and is not a regular file", out));
    }
    *exists = true;
    *old_bytes = static_cast<uint64_t>(ost.st_blocks) * 512;
  } else if (errno != ENOENT) {
    return Status::FromErrno(out, errno);
  }
  return Status::Ok();
}

Status MakeRoom(const std::vector<std::string>& old, const std::string& dir, uint64_t old_bytes,
                uint64_t file_size) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return Status::FromErrno(dir, errno);
  const unsigned __int128 avail128 =
      static_cast<unsigned __int128>(vfs.f_bavail) * static_cast<unsigned __int128>(vfs.f_frsize);
  const uint64_t avail = avail128 > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(avail128);
  const uint64_t need = file_size + kSpaceMargin;
  const uint64_t have = avail > UINT64_MAX - old_bytes ? UINT64_MAX : avail + old_bytes;
  if (have < need) {
    return Status::BadInput(fmt::format("{}: not enough free space: need {}, have {}", dir,
                                        FormatBytes(need), FormatBytes(have)));
  }
  if (avail < need) {
    for (const std::string& out : old) {
      if (::unlink(out.c_str()) != 0 && errno != ENOENT) {
        return Status::FromErrno(fmt::format("{}: cannot remove the old file", out), errno);
      }
    }
  }
  return Status::Ok();
}

TempFile::~TempFile() {
  fd_.reset();
  if (!committed_) ::unlink(path_.c_str());
  if (tracked_) UntrackLeftover(Leftover::kFile, path_);
}

Status TempFile::Open() {
  TrackLeftover(Leftover::kFile, path_);  // a generator killed from here on leaves it
  tracked_ = true;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd;
    do {
      fd = ::open(path_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
      fd_.reset(fd);
      return Status::Ok();
    }
    // A leftover of an earlier process with our pid: the name is ours, so remove it.
    if (errno != EEXIST || attempt > 0) break;
    ::unlink(path_.c_str());
  }
  committed_ = true;  // not ours: never unlink a file we did not create
  UntrackLeftover(Leftover::kFile, path_);
  tracked_ = false;
  return Status::FromErrno(fmt::format("{}: cannot create", path_), errno);
}

Status Reserve(const TempFile& tmp, uint64_t file_size) {
  if (file_size > 0) {
    int err = ::fallocate(tmp.fd(), 0, 0, static_cast<off_t>(file_size));
    if (err != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
      return Status::FromErrno(fmt::format("{}: reserving {}", tmp.path(), FormatBytes(file_size)),
                               errno);
    }
  }
  return Status::Ok();
}

Status Finish(TempFile* tmp) {
  if (::fsync(tmp->fd()) != 0) {
    return Status::FromErrno(fmt::format("{}: fsync", tmp->path()), errno);
  }
  tmp->Close();
  return Status::Ok();
}

Status Rename(TempFile* tmp, const std::string& out) {
  if (::rename(tmp->path().c_str(), out.c_str()) != 0) {
    return Status::FromErrno(fmt::format("{}: cannot rename to {}", tmp->path(), out), errno);
  }
  tmp->Commit();
  return Status::Ok();
}

Status FsyncDir(const std::string& dir) {
  int fd;
  do {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno(fmt::format("{}: cannot open directory", dir), errno);
  UniqueFd owned(fd);
  if (::fsync(fd) != 0 && errno != EINVAL) {
    return Status::FromErrno(fmt::format("{}: fsync", dir), errno);
  }
  return Status::Ok();
}

Status Publish(TempFile* tmp, const std::string& out, const std::string& dir) {
  LB_RETURN_IF_ERROR(Finish(tmp));
  if (Interrupted()) return Status::Failed("interrupted");
  LB_RETURN_IF_ERROR(Rename(tmp, out));
  return FsyncDir(dir);
}

}  // namespace loadbench
