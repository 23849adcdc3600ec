// Owning wrappers for file descriptors and mappings, and the read loops every loader shares.
// Each retries EINTR and short reads, and reports errors as Status naming the file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd final {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Owns one mmap'd region; unmaps on destruction. Move-only.
class Mapping final {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t len) : addr_(addr), len_(len) {}
  Mapping(Mapping&& o) noexcept : addr_(o.addr_), len_(o.len_) { o.addr_ = nullptr, o.len_ = 0; }
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }

  const std::byte* data() const { return static_cast<const std::byte*>(addr_); }
  std::byte* mutable_data() { return static_cast<std::byte*>(addr_); }
  size_t size() const { return len_; }
  void reset();

 private:
  void* addr_ = nullptr;
  size_t len_ = 0;
};

// Opens `path` read-only (plus `extra_flags`, e.g. O_DIRECT) and checks that it is a regular
// file. Never blocks on a FIFO: what is not a regular file (a directory, FIFO, socket or
// device) is refused by stat before the open, and by fstat of what was opened (O_NONBLOCK,
// cleared once it is known to be a regular file). Errors name the path: missing, not a regular
// file (and what it is), not readable; with O_DIRECT on a filesystem that refuses it (EINVAL:
// ramfs, some FUSE and network filesystems), kUnsupported.
Status OpenReadOnly(const std::string& path, int extra_flags, UniqueFd* out);

// Opens `path` read-only and maps all of it MAP_PRIVATE (plus `extra_flags`), PROT_READ, or
// with `writable` PROT_READ|PROT_WRITE (writes make private copies; the file never changes).
// Refuses with kBadInput a file whose size is no longer `expected_size` (the size its table
// was validated against): touching a mapped page past a shrunk end raises SIGBUS.
Status MapWholeFile(const std::string& path, uint64_t expected_size, int extra_flags, bool writable,
                    Mapping* out);

// Size in bytes of the open file.
Status FileSize(int fd, const std::string& path, uint64_t* out);

// Reads exactly `len` bytes at `offset`, retrying EINTR and short reads. Reading past the end
// of the file is kBadInput ("truncated").
Status PreadExact(int fd, const std::string& path, void* buf, size_t len, uint64_t offset);

// Writes all `len` bytes at the current position (or the end, for O_APPEND), retrying EINTR
// and short writes.
Status WriteExact(int fd, const std::string& path, const void* buf, size_t len);

// Writes all `len` bytes at `offset`, retrying EINTR and short writes.
Status PwriteExact(int fd, const std::string& path, const void* buf, size_t len, uint64_t offset);

// The alignment O_DIRECT needs for offsets, lengths and memory on the open file: what statx
// reports (Linux 6.1+), never less than 4096, so that one rule holds on every device we meet.
uint64_t DirectIoAlignment(int fd);

// Creates a read-write file in `dir` that has no name (O_TMPFILE; where the filesystem lacks it,
// a named file unlinked at once), so that it cannot outlive the process however it ends.
// `proc_path` gets /proc/self/fd/N, a path that opens the same file.
Status OpenUnnamedFile(const std::string& dir, UniqueFd* fd, std::string* proc_path);

// Maps `len` bytes of `fd` from `offset` (a multiple of the page size) MAP_PRIVATE, plus
// `extra_flags` (e.g. MAP_POPULATE), PROT_READ, or PROT_READ|PROT_WRITE when `writable`.
Status MapPrivate(int fd, const std::string& path, uint64_t offset, size_t len, int extra_flags,
                  bool writable, Mapping* out);

}  // namespace loadbench
