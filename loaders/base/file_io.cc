#include "loaders/base/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

namespace loadbench {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);  // close is not retried on EINTR: Linux always releases the fd
  fd_ = fd;
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    reset();
    addr_ = o.addr_;
    len_ = o.len_;
    o.addr_ = nullptr;
    o.len_ = 0;
  }
  return *this;
}

void Mapping::reset() {
  if (addr_ != nullptr) ::munmap(addr_, len_);
  addr_ = nullptr;
  len_ = 0;
}

namespace {

// What a file of `mode` (st_mode) is, for messages.
std::string_view KindOfFile(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO (named pipe)";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    default:
      return "of an unknown kind";
  }
}

// Ok for a regular file; else kBadInput naming `path` and what it is instead.
Status RefuseUnlessRegular(const std::string& path, mode_t mode) {
  if (S_ISREG(mode)) return Status::Ok();
  if (S_ISDIR(mode)) return Status::BadInput(fmt::format("{}: is a directory", path));
  return Status::BadInput(fmt::format("{}: {}, not a regular file", path, KindOfFile(mode)));
}

}  // namespace

Status OpenReadOnly(const std::string& path, int extra_flags, UniqueFd* out) {
  // A FIFO would block open(2) until a writer came, and a device may answer with anything:
  // refused by stat before any open, and again by fstat of what was opened, with O_NONBLOCK so
  // that a FIFO put in its place in between cannot block the open either.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) LB_RETURN_IF_ERROR(RefuseUnlessRegular(path, st.st_mode));
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | extra_flags);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0 && errno == EINVAL && (extra_flags & O_DIRECT)) {
    return Status::Unsupported(
        fmt::format("{}: the filesystem refuses O_DIRECT (open gives EINVAL)", path));
  }
  if (fd < 0) return Status::FromErrno(path, errno);
  UniqueFd owned(fd);
  if (::fstat(fd, &st) != 0) return Status::FromErrno(path, errno);
  LB_RETURN_IF_ERROR(RefuseUnlessRegular(path, st.st_mode));
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return Status::FromErrno(fmt::format("{}: fcntl", path), errno);
  }
  *out = std::move(owned);
  return Status::Ok();
}

Status FileSize(int fd, const std::string& path, uint64_t* out) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(path, errno);
  *out = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Status PreadExact(int fd, const std::string& path, void* buf, size_t len, uint64_t offset) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(fmt::format("{}: read at offset {}", path, offset + done), errno);
    }
    if (n == 0) {
      return Status::BadInput(
          fmt::format("{}: truncated: needed {} bytes at offset {}, file ends at {}", path, len,
                      offset, offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

namespace {

// The write loop of WriteExact (offset < 0) and PwriteExact.
Status WriteLoop(int fd, const std::string& path, const void* buf, size_t len, int64_t offset) {
  const auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = offset < 0 ? ::write(fd, p + done, len - done)
                           : ::pwrite(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(offset < 0 ? fmt::format("{}: write", path)
                                          : fmt::format("{}: write at offset {}", path,
                                                        offset + static_cast<int64_t>(done)),
                               errno);
    }
    if (n == 0) return Status::IOError(fmt::format("{}: write made no progress", path));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status WriteExact(int fd, const std::string& path, const void* buf, size_t len) {
  return WriteLoop(fd, path, buf, len, -1);
}

Status PwriteExact(int fd, const std::string& path, const void* buf, size_t len, uint64_t offset) {
  return WriteLoop(fd, path, buf, len, static_cast<int64_t>(offset));
}

Status MapPrivate(int fd, const std::string& path, uint64_t offset, size_t len, int extra_flags,
                  bool writable, Mapping* out) {
  if (len == 0) return Status::BadInput(fmt::format("{}: cannot map an empty range", path));
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* addr =
      ::mmap(nullptr, len, prot, MAP_PRIVATE | extra_flags, fd, static_cast<off_t>(offset));
  if (addr == MAP_FAILED) return Status::FromErrno(fmt::format("{}: mmap", path), errno);
  *out = Mapping(addr, len);
  return Status::Ok();
}

Status MapWholeFile(const std::string& path, uint64_t expected_size, int extra_flags, bool writable,
                    Mapping* out) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  uint64_t size;
  LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
  if (size != expected_size) {
    return Status::BadInput(fmt::format("{}: file changed size since it was validated ({} -> {})",
                                        path, expected_size, size));
  }
  if (size == 0) return Status::BadInput(fmt::format("{}: cannot map an empty file", path));
  return MapPrivate(fd.get(), path, 0, size, extra_flags, writable, out);
}

uint64_t DirectIoAlignment(int fd) {
  uint64_t align = 4096;
#ifdef STATX_DIOALIGN
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
    align = std::max<uint64_t>({align, sx.stx_dio_offset_align, sx.stx_dio_mem_align});
  }
#endif
  return align;
}

Status OpenUnnamedFile(const std::string& dir, UniqueFd* fd, std::string* proc_path) {
  int raw;
  do {
    raw = ::open(dir.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
    // EISDIR: a kernel without O_TMPFILE took it for a plain directory open.
    std::string name = dir + "/loadbench-scratch.XXXXXX";
    raw = ::mkostemp(name.data(), O_CLOEXEC);
    if (raw >= 0 && ::unlink(name.c_str()) != 0) {
      const int err = errno;
      ::close(raw);
      return Status::FromErrno(fmt::format("{}: unlink", name), err);
    }
  }
  if (raw < 0) {
    return Status::FromErrno(fmt::format("{}: cannot create a scratch file", dir), errno);
  }
  fd->reset(raw);
  *proc_path = fmt::format("/proc/self/fd/{}", raw);
  return Status::Ok();
}

}  // namespace loadbench
