// Inside harness/gen: a generated file's way to its name. The output folder and any file
// already at the name are checked, free space made sure of, and the file written under a
// temporary name (TempSibling, journaled as a leftover), reserved whole, synced, and only then
// renamed: a crash or an interrupt leaves either the old file or the complete new one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

// The folder of `path`: "." for a bare name.
std::string DirOf(const std::string& path);

// Checks that `out`'s directory exists and that `out`, if there, is a regular file. *exists
// says whether it is there, and *old_bytes how much disk it holds (0 when it is not there).
Status CheckOutputPath(const std::string& out, const std::string& dir, bool* exists,
                       uint64_t* old_bytes);

// Free space: the new files (`file_size` bytes) plus a margin. Old files at the same names
// (`old`, holding old_bytes) are going away; if the space is only there with them gone, they
// are removed now rather than run out half-way. kBadInput naming the folder and both sizes
// when it is short.
Status MakeRoom(const std::vector<std::string>& old, const std::string& dir, uint64_t old_bytes,
                uint64_t file_size);

// A file being written under a temporary name, removed unless Commit() was called.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Creates the file (O_EXCL), journaled as a leftover until it is committed or removed.
  Status Open();
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  void Close() { fd_.reset(); }
  void Commit() { committed_ = true; }

 private:
  std::string path_;
  UniqueFd fd_;
  bool committed_ = false, tracked_ = false;
};

// Reserves the whole file up front where the filesystem can, so that a full disk fails here
// and not half-way through the data.
Status Reserve(const TempFile& tmp, uint64_t file_size);

// Makes a finished temporary file durable and closes it.
Status Finish(TempFile* tmp);

// Gives a finished temporary file its name.
Status Rename(TempFile* tmp, const std::string& out);

// Makes a rename in `dir` durable.
Status FsyncDir(const std::string& dir);

// Makes the finished file durable, then gives it its name: a crash leaves either the old file
// or the complete new one at `out`.
Status Publish(TempFile* tmp, const std::string& out, const std::string& dir);

}  // namespace loadbench
