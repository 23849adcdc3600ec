// Where the bytes of a weight file come from while its header is read and checked: a local file
// (pread) or a remote object (ranged GETs, loaders/remote/). The format readers read only
// through this, so that one reader validates a file on disk and an object in a bucket alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

class ByteSource {
 public:
  ByteSource(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // The path or URL, as messages name it.
  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }

  // Exactly `len` bytes at `offset`. Past the end is kBadInput ("truncated"); a read that fails
  // is kIOError; both name the source.
  virtual Status ReadAt(void* buf, size_t len, uint64_t offset) const = 0;

 private:
  std::string name_;
  uint64_t size_;
};

// A local file read with pread. `size` is what the readers take the file's size to be (its
// real size, unless a test says otherwise).
class FileSource final : public ByteSource {
 public:
  // Over a descriptor that stays the caller's.
  FileSource(int fd, const std::string& path, uint64_t size) : ByteSource(path, size), fd_(fd) {}
  // `path` opened read-only (OpenReadOnly's checks), its descriptor owned by the source.
  static Status Open(const std::string& path, std::unique_ptr<FileSource>* out);

  Status ReadAt(void* buf, size_t len, uint64_t offset) const override;
  int fd() const { return fd_; }

 private:
  UniqueFd owned_;
  int fd_;
};

}  // namespace loadbench
